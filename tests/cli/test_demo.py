"""``threadline demo``: every step printed, a real store left behind, and the way on to
``show``, ``serve`` and the viewer."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import threadline

from .conftest import Run


def test_demo_runs_every_step_and_points_at_the_viewer(run: Run, tmp_path: Path) -> None:
    db = str(tmp_path / "d.db")
    result = run("demo", "--db", db)
    assert result.code == 0, result.err
    for step in (
        "1. A regenerated answer is a branch",
        "2. checkout",
        "3. search",
        "4. Memory blocks",
        "5. The model calls set_context",
        "6. Two users",
        "7. fork",
        "8. Sessions",
        "9. Cross-session search",
        "10. Automatic compaction",
    ):
        assert step in result.out
    assert "Written to memory." in result.out
    assert f"threadline show {db} trip --app demo" in result.out
    assert f"threadline keys create --db {db} --app demo   # a key for the viewer" in result.out
    assert f"threadline serve --db {db}   # then open http://127.0.0.1:8000/ui" in result.out
    # the key it suggests creating is one the server accepts for the demo's app
    key_out = run("keys", "create", "--db", db, "--app", "demo", "--json")
    assert key_out.code == 0 and json.loads(key_out.out)["app"] == "demo"
    # the commands it suggests work
    assert run("show", db, "trip", "--app", "demo").code == 0


def test_demo_leaves_a_real_store_behind(demo_db: str) -> None:
    with threadline.connect(demo_db) as store:
        manager = threadline.SessionManager(store, app_name="demo")
        trip = manager.get_session("trip")
        # The demo checked out the first answer, then stored the set_context tool call there.
        assert [m["id"] for m in trip.get_history()][:2] == ["u1", "a1"]
        assert trip.get_latest_leaf()["parts"][0]["toolName"] == "set_context"
        assert [m["id"] for m in trip.get_branches("u1")] == ["a1", "a2"]
        assert manager.get_state("trip")["user:home"] == "Porto"
        assert "temp:draft" not in manager.get_state("madrid")  # temp: never stored
        assert len(manager.list().sessions) == 4  # trip, its fork, madrid, long-chat


def test_demo_json_and_a_second_run_on_the_same_file(run: Run, tmp_path: Path) -> None:
    db = str(tmp_path / "d.db")
    done = run("demo", "--db", db, "--json").json()
    assert done["app"] == "demo" and len(done["sessions"]) == 4
    assert done["next"][-1].startswith(f"threadline serve --db {db}")
    again = run("demo", "--db", db)
    assert again.code == 1
    assert again.err == f"threadline: {db} already holds the demo (app 'demo'); pass a new --db\n"


def test_demo_without_db_uses_a_temporary_file(run: Run) -> None:
    result = run("demo", "--json")
    path = Path(result.json()["db"])
    assert path.exists() and path.name == "demo.db"
    shutil.rmtree(path.parent)
