"""``threadline import`` of records an import must refuse (amendment 13): one line on stderr,
exit code 1, no traceback, nothing stored — on SQLite files and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import threadline
from threadline.export import export_sessions

from .conftest import Run


def _record() -> dict[str, Any]:
    with threadline.connect(":memory:") as store:
        message = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
        store.session("default", "s1").append_messages([message])
        store.add_compaction("default", "s1", "summary", "m1", "m1")
        (record,) = export_sessions(store, "default")
    return record


def _session(**changes: Any) -> Any:
    return lambda r: r["session"].update(changes)


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (_session(created_at="9999-12-31T23:59:59-14:00"), "outside years 1-9999"),
        (lambda r: r.update(last_seq=2**63 - 1), "2**53"),
        (lambda r: r.update(compactions=r["compactions"] * 2), "appears twice"),
        (lambda r: r["messages"][0]["message"].update(role=5), "'role'"),  # strings fold
        (lambda r: r["messages"][0]["message"].update(parts=[{"type": "text"}]), "'text'"),
    ],
)
def test_a_refused_import_is_one_line_and_stores_nothing(
    run: Run, file_store_url: str, tmp_path: Path, change: Any, fragment: str
) -> None:
    good, bad = _record(), _record()
    good["session"]["id"] = "first"
    change(bad)
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    result = run("import", file_store_url, str(path))
    assert result.code == 1, result
    assert result.err.startswith("threadline: export record 2: ") and fragment in result.err
    assert result.err.count("\n") == 1 and "Traceback" not in result.err
    with threadline.connect(file_store_url) as store:
        assert store.count_sessions("default") == 0
