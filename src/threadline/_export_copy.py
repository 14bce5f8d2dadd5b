"""Copying whole apps from one store to another (``threadline.export.copy_store``, the
``threadline copy`` command), through the export format's own records — so a copy applies
exactly the rules an import does — and checking the result by exporting both sides.

>>> first_difference({"a": [1, 2]}, {"a": [1, 3]}, "record")
'record.a[1]: 2 in the source, 3 in the target'
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Any

from threadline._export_app import FORMAT_2, app_record, parse_app
from threadline._export_import import parse_records, write_records
from threadline._export_session import parse_session, session_record
from threadline._validate import check_id
from threadline.errors import InvalidArgumentError, StoreError
from threadline.store.base import Store

__all__ = ["CopyReport", "copy_store", "first_difference"]

_PAGE = 200

Progress = Callable[[str, int, int], None]
"""Called after each batch: ``(app, sessions copied so far, sessions to copy)``."""


@dataclass
class CopyReport:
    """What :func:`copy_store` copied, per kind, and whether both exports were compared.

    >>> CopyReport(apps=["travel"], sessions=2).sessions
    2
    """

    apps: list[str] = field(default_factory=list)
    sessions: int = 0
    messages: int = 0
    users: int = 0
    entries: int = 0
    keys: int = 0
    profiles: int = 0
    artifacts: int = 0
    verified: bool = False


def copy_store(
    source: Store,
    target: Store,
    apps: Sequence[str] | None = None,
    *,
    replace: bool = False,
    keys: bool = True,
    verify: bool = True,
    batch: int = 100,
    progress: Progress | None = None,
) -> CopyReport:
    """Copy ``apps`` (default: every app ``source`` holds anything for) into ``target``:
    every session with its whole tree, attachments, overlays, blocks, prompt and state;
    each app's profile, app- and user-scoped blocks and state, keyed entries, and with
    ``keys`` (the default) its API keys' hashes. Times, ids, versions are kept; roles older
    releases stored are mapped as an import maps them (the records go through the same
    checks). A target app holding anything refuses the copy (``InvalidArgumentError``,
    before anything is written) unless ``replace=True``, which makes it hold exactly the
    source's. Sessions are written ``batch`` at a time, each batch in one transaction;
    ``progress`` is called after each. Then, with ``verify``, both stores are exported
    (format 2, the same apps, keys included) and compared: a difference raises
    ``StoreError`` naming the first one. Copy a store nobody writes to meanwhile.

    >>> import threadline
    >>> source, target = threadline.connect(":memory:"), threadline.connect(":memory:")
    >>> _ = source.append_messages("travel", "s1", [{"id": "m1", "role": "user", "parts": []}])
    >>> source.put_entry("travel", "docs", "faq", "Ask us anything.")
    >>> report = copy_store(source, target)
    >>> report.apps, report.sessions, report.entries, report.verified
    (['travel'], 1, 1, True)
    >>> copy_store(source, target)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: target app 'travel' is not empty (1 session, ...
    """
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise InvalidArgumentError("batch must be a positive integer")
    names = _apps(source, apps)
    if not replace:
        for app in names:
            held = _holdings(target, app)
            if held:
                raise InvalidArgumentError(
                    f"target app {app!r} is not empty ({held}); replace=True "
                    "(threadline copy --replace) makes it a copy of the source's"
                )
    report = CopyReport(apps=list(names))
    total = sum(source.count_sessions(app) for app in names)
    for app in names:
        _copy_app(source, target, app, report, replace, keys, batch, total, progress)
    if verify:
        difference = compare_stores(source, target, names, keys=keys)
        if difference is not None:
            raise StoreError("verify the copy", ValueError(difference))
        report.verified = True
    return report


def _apps(source: Store, apps: Sequence[str] | None) -> list[str]:
    if apps is None:
        return source.list_app_names()
    if isinstance(apps, str):
        raise InvalidArgumentError("apps must be a list of app names, not a string")
    return list(dict.fromkeys(check_id("app", app) for app in apps))


def _holdings(store: Store, app: str) -> str:
    """What ``app`` holds in ``store``, in words ('' when nothing)."""
    dump = store.dump_app(app, keys=True)
    counts = (
        (store.count_sessions(app), "session"),
        (len(dump.blocks) + sum(map(len, dump.user_blocks.values())), "block"),
        (len(dump.state) + sum(map(len, dump.user_state.values())), "state key"),
        (sum(map(len, dump.entries.values())), "keyed entry"),
        (len(dump.keys or ()), "API key"),
        (int(dump.profile is not None), "profile"),
    )
    return ", ".join(f"{n} {what}{'s' * (n != 1)}" for n, what in counts if n)


def _session_ids(store: Store, app: str) -> Iterator[str]:
    cursor: str | None = None
    while True:
        page = store.list_sessions(app, limit=_PAGE, cursor=cursor)
        yield from (info.id for info in page.sessions)
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def _copy_app(
    source: Store,
    target: Store,
    app: str,
    report: CopyReport,
    replace: bool,
    keys: bool,
    batch: int,
    total: int,
    progress: Progress | None,
) -> None:
    ids = list(_session_ids(source, app))
    if replace:  # the target's sessions the source lacks go; the others are replaced
        wanted = set(ids)
        for session_id in [s for s in _session_ids(target, app) if s not in wanted]:
            target.delete_session(app, session_id)
    for start in range(0, len(ids), batch):
        dumps = [source.dump_session(app, session_id) for session_id in ids[start : start + batch]]
        records = [session_record(app, d, FORMAT_2) for d in dumps if d is not None]
        written = write_records(
            target,
            parse_records(records, app=None, apps_allowed=False, verbatim=True),
            replace=replace,
        )
        report.sessions += len(written.sessions)
        report.messages += sum(len(d.messages) for d in dumps if d is not None)
        if progress is not None:
            progress(app, report.sessions, total)
    dump = source.dump_app(app, keys=keys)
    written = write_records(
        target,
        parse_records([app_record(app, dump)], app=None, apps_allowed=True),
        replace=replace,
    )
    report.users += len(set(dump.user_blocks) | set(dump.user_state))
    report.entries += written.entries
    report.keys += written.keys
    report.profiles += written.profiles
    report.artifacts += written.artifacts


def export_app_records(store: Store, app: str, *, keys: bool) -> Iterator[dict[str, Any]]:
    """The app record then every session record of ``app`` (what ``threadline export``
    writes for a whole app).

    >>> import threadline
    >>> [r["type"] for r in export_app_records(threadline.connect(":memory:"), "a", keys=False)]
    ['app']
    """
    yield app_record(app, store.dump_app(app, keys=keys))
    for session_id in _session_ids(store, app):
        dump = store.dump_session(app, session_id)
        if dump is not None:
            yield session_record(app, dump, FORMAT_2)


def _as_imported(record: dict[str, Any]) -> dict[str, Any]:
    """A source record as a copy stores it (roles mapped, messages normalised)."""
    if record.get("type") == "app":
        parsed = parse_app(record, None)
        return app_record(parsed.app, parsed.dump)
    return session_record(record["app"], parse_session(record, None, verbatim=True)[1], FORMAT_2)


def compare_stores(source: Store, target: Store, apps: Sequence[str], *, keys: bool) -> str | None:
    """The first difference between the exports of ``apps`` in both stores (the source's
    records as an import stores them), or ``None`` when they are identical.

    >>> import threadline
    >>> source, target = threadline.connect(":memory:"), threadline.connect(":memory:")
    >>> source.put_entry("a", "docs", "faq", "Ask.")
    >>> compare_stores(source, target, ["a"], keys=False)
    "app 'a': entries.docs: in the source only"
    """
    for app in apps:
        pairs = zip_longest(
            export_app_records(source, app, keys=keys), export_app_records(target, app, keys=keys)
        )
        for mine, theirs in pairs:
            where = _where(app, mine if mine is not None else theirs)
            if mine is None or theirs is None:
                side = "target" if mine is None else "source"
                return f"{where}: in the {side} only"
            found = first_difference(_as_imported(mine), theirs, "")
            if found is not None:
                return f"{where}: {found}" if found else where
    return None


def _where(app: str, record: Any) -> str:
    if record.get("type") == "app":
        return f"app {app!r}"
    return f"app {app!r}, session {record['session']['id']!r}"


def first_difference(mine: Any, theirs: Any, path: str) -> str | None:
    """Where two JSON values first differ (``path`` names ``mine``), or ``None``.

    >>> first_difference({"a": 1}, {"a": 1, "b": 2}, "state")
    'state.b: in the target only'
    >>> first_difference(1, 1.0, "cost")  # the same number, not the same JSON
    'cost: 1 in the source, 1.0 in the target'
    """
    if isinstance(mine, dict) and isinstance(theirs, dict):
        for key in [*mine, *(k for k in theirs if k not in mine)]:
            inner = f"{path}.{key}" if path else str(key)
            if key not in theirs or key not in mine:
                return f"{inner}: in the {'source' if key in mine else 'target'} only"
            found = first_difference(mine[key], theirs[key], inner)
            if found is not None:
                return found
        return None
    if isinstance(mine, list) and isinstance(theirs, list):
        for index, (a, b) in enumerate(zip(mine, theirs, strict=False)):
            found = first_difference(a, b, f"{path}[{index}]")
            if found is not None:
                return found
        if len(mine) != len(theirs):
            return f"{path}: {len(mine)} items in the source, {len(theirs)} in the target"
        return None
    if type(mine) is not type(theirs) or mine != theirs:
        return f"{path}: {reprlib.repr(mine)} in the source, {reprlib.repr(theirs)} in the target"
    return None
