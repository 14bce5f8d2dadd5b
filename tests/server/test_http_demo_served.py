"""The issue's first step, end to end: ``threadline demo`` then ``threadline serve`` on its
file with no --config shows the demo's blocks and compacts (the demo saves its profile)."""

from __future__ import annotations

from pathlib import Path

from served import start_server

from threadline.cli import main


def test_serve_after_the_demo_shows_its_blocks(tmp_path: Path) -> None:
    db = str(tmp_path / "demo.db")
    assert main(["demo", "--db", db, "--json"]) == 0
    served = start_server(db, tmp_path, config=None)
    try:
        with served.client(served.key("demo")) as http:
            blocks = http.get("/v1/sessions/trip/blocks")
            assert blocks.status_code == 200, blocks.text
            labels = [b["label"] for b in blocks.json()["blocks"]]
            assert labels == ["soul", "memory", "profile", "history"]
            memory = next(b for b in blocks.json()["blocks"] if b["label"] == "memory")
            assert memory["content"]  # what the demo wrote, read through the profile
            profile = http.get("/v1/profile").json()
            assert profile["compaction"]["summarizer"] == {"type": "extractive"}
            compacted = http.post("/v1/sessions/long-chat/compact", json={})
            assert compacted.status_code == 200, compacted.text
    finally:
        served.stop()
