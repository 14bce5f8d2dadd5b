"""Route rules that need the server's own objects changed (a constant, a configure hook
returning a manager of its own): in-process with FastAPI's TestClient over a real SQLite
file. Everything else about these routes runs over a real uvicorn (test_http_profile.py,
test_http_studio.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from threadline import Profile, SessionManager
from threadline.server import create_app
from threadline.store import connect

APP = {"X-Threadline-App": "travel"}


def test_descend_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threadline.server._routes_messages as routes

    monkeypatch.setattr(routes, "DESCEND_LIMIT", 3)
    db = str(tmp_path / "t.db")
    manager = SessionManager(db, "travel")
    for i in range(6):
        manager.append("s1", {"id": f"m{i}", "role": "user", "content": f"message {i}"})
    manager.close()
    with TestClient(create_app(db, auth=False)) as http:
        deep = http.get("/v1/sessions/s1/path", params={"descend": "m0"}, headers=APP)
        assert deep.status_code == 400, deep.text
        assert "deeper than 3" in deep.json()["error"]["message"]
        near = http.get("/v1/sessions/s1/path", params={"descend": "m3"}, headers=APP)
        assert near.status_code == 200 and near.json()["leaf_id"] == "m5"


def test_the_profile_routes_read_the_store_whatever_manager_configure_returns(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "t.db")
    with connect(db) as store:
        Profile.from_dict({"blocks": [{"label": "notes"}], "runner": {"runs": 2}}).save(
            store, "travel"
        )

    def configure(manager: SessionManager) -> SessionManager:
        return SessionManager(manager.store, manager.app_name)  # a plain one of its own

    with TestClient(create_app(db, auth=False, configure=configure)) as http:
        shown = http.get("/v1/profile", headers=APP).json()
        assert shown["version"] == 1 and shown["runner"]["runs"] == 2
        assert http.post("/v1/sessions", json={"session_id": "s1"}, headers=APP).is_success
        context = http.get("/v1/sessions/s1/context", headers=APP)
        assert context.status_code == 200, context.text
        assert context.json()["runs"] == 2  # the stored profile's runner defaults
