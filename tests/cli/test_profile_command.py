"""``threadline profile show|set`` on SQLite files and PostgreSQL, and the demo's saved
profile (integrations.md §18.1, §18.3)."""

from __future__ import annotations

from pathlib import Path

import threadline
from threadline import Profile, SessionManager

from .conftest import Run

TOML = """
cached_prompt = true

[[blocks]]
label = "memory"
scope = "user"
max_tokens = 300

[[blocks]]
label = "persona"
kind = "readonly"
text = "You are a travel agent."

[compaction]
after_tokens = 6000

[compaction.summarizer]
type = "extractive"

[runner]
runs = 3
"""


def test_set_from_toml_then_show(run: Run, file_store_url: str, tmp_path: Path) -> None:
    threadline.connect(file_store_url).close()
    path = tmp_path / "profile.toml"
    path.write_text(TOML)
    written = run("profile", "set", file_store_url, str(path), "--app", "travel")
    assert written.code == 0, written.err
    assert "version 1" in written.out
    shown = run("profile", "show", file_store_url, "--app", "travel", "--json")
    assert shown.code == 0, shown.err
    document = shown.json()
    assert document["version"] == 1
    assert [b["label"] for b in document["blocks"]] == ["memory", "persona"]
    assert document["compaction"]["after_tokens"] == 6000
    assert document["runner"]["runs"] == 3
    text = run("profile", "show", file_store_url, "--app", "travel")
    assert "block 'memory': writable" in text.out and "extractive" in text.out
    # what `show --json` prints can be written back as JSON
    again = tmp_path / "again.json"
    again.write_text(shown.out)
    assert run("profile", "set", file_store_url, str(again), "--app", "travel").code == 0
    with threadline.connect(file_store_url) as store:
        stored = Profile.load(store, "travel")
        assert stored is not None and stored.version == 2
        session = SessionManager.from_profile(store, "travel").get_session("s", user_id="ana")
        assert [b.label for b in session.get_context_blocks()] == ["memory", "persona"]


def test_a_bad_file_is_refused_naming_the_path(
    run: Run, file_store_url: str, tmp_path: Path
) -> None:
    threadline.connect(file_store_url).close()
    path = tmp_path / "bad.json"
    path.write_text('{"blocks": [{"label": "a"}, {"label": "b", "scope": "team"}]}')
    refused = run("profile", "set", file_store_url, str(path), "--app", "travel")
    assert refused.code == 1
    assert "blocks[1].scope" in refused.err
    broken = tmp_path / "broken.toml"
    broken.write_text("[[blocks]\nlabel=")
    assert "not valid TOML" in run("profile", "set", file_store_url, str(broken)).err
    with threadline.connect(file_store_url) as store:
        assert store.get_profile("travel") is None


def test_show_without_a_profile(run: Run, file_store_url: str) -> None:
    threadline.connect(file_store_url).close()
    missing = run("profile", "show", file_store_url, "--app", "travel")
    assert missing.code == 1 and "no profile" in missing.err
    assert (
        run("profile", "show", file_store_url, "--app", "travel", "--json").json()["version"] == 0
    )


def test_the_demo_saves_its_profile(run: Run, demo_db: str) -> None:
    shown = run("profile", "show", demo_db, "--app", "demo", "--json")
    assert shown.code == 0, shown.err
    document = shown.json()
    assert [b["label"] for b in document["blocks"]] == ["soul", "memory", "profile", "history"]
    assert document["compaction"]["summarizer"] == {"type": "extractive"}
    with threadline.connect(demo_db) as store:
        manager = SessionManager.from_profile(store, "demo")
        blocks = manager.get_session("trip").get_context_blocks()
        assert [b.label for b in blocks] == ["soul", "memory", "profile", "history"]
