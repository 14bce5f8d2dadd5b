"""Reading export records back (``threadline.export``): every record parsed and checked
before anything is written, then everything written in one transaction.

>>> import threadline
>>> from threadline._export_session import session_record
>>> store = threadline.connect(":memory:")
>>> _ = store.append_messages("app", "s1", [{"id": "m1", "role": "user", "parts": []}])
>>> records = [session_record("app", store.dump_session("app", "s1"), "threadline.export/1")]
>>> parsed = parse_records(records, app="copy", apps_allowed=False)
>>> write_records(store, parsed, replace=False).sessions
['s1']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from threadline._export_app import FORMAT_2, AppRecord, parse_app
from threadline._export_fields import as_object, reason
from threadline._export_session import parse_session
from threadline._validate import check_id
from threadline.errors import InvalidArgumentError, InvalidMessageError, SessionExistsError
from threadline.store._contract.values import SessionDump
from threadline.store._sql.dump_check import check_dump
from threadline.store.base import Store

__all__ = ["FORMAT_1", "ImportReport", "Parsed", "parse_records", "write_records"]

FORMAT_1 = "threadline.export/1"
"""The ``format`` of version 1 records (session records only; still read)."""


@dataclass
class ImportReport:
    """What an import wrote: the session ids (in record order), the apps whose app record
    was loaded, and how many keyed entries, API keys, profiles and artifact versions (stored
    files) those records held.

    >>> ImportReport(sessions=["s1"]).sessions
    ['s1']
    """

    sessions: list[str] = field(default_factory=list)
    apps: list[str] = field(default_factory=list)
    entries: int = 0
    keys: int = 0
    profiles: int = 0
    artifacts: int = 0


@dataclass
class Parsed:
    """Records parsed and checked, not written yet: ``(target app, dump)`` per session
    record, and the app records.

    >>> Parsed().sessions
    []
    """

    sessions: list[tuple[str, SessionDump]] = field(default_factory=list)
    apps: list[AppRecord] = field(default_factory=list)


def parse_records(
    records: Iterable[Mapping[str, Any]],
    *,
    app: str | None,
    apps_allowed: bool,
    verbatim: bool = False,
) -> Parsed:
    """Parse and check every record (version 1 or 2) into ``app`` when given, else each
    record's own; the first bad one raises ``InvalidArgumentError`` naming it (``export
    record 3: ...``). ``apps_allowed=False`` refuses app records (an HTTP tenant's import:
    profiles and keys are the operator's). A session or app appearing twice is refused.
    ``verbatim``: messages keep a missing ``createdAt`` missing (``parse_session``).

    >>> parse_records([{"format": "csv"}], app=None, apps_allowed=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: export record 1: format must be ...
    """
    if app is not None:
        check_id("app", app)
    parsed = Parsed()
    for index, record in enumerate(records, start=1):
        try:
            record = as_object(record, "record")
            kind = _kind_of(record)
            if kind == "app":
                if not apps_allowed:
                    raise InvalidArgumentError(
                        "an app record (profile, entries, keys) is not imported here: "
                        "use threadline import or threadline.export.import_records"
                    )
                parsed.apps.append(parse_app(record, app))
            else:
                parsed.sessions.append(parse_session(record, app, verbatim=verbatim))
                check_dump(parsed.sessions[-1][1])
        except (InvalidArgumentError, KeyError, TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"export record {index}: {reason(exc)}") from None
    seen: set[tuple[str, str]] = set()
    for target, dump in parsed.sessions:
        if (target, dump.info.id) in seen:
            raise InvalidArgumentError(f"session {dump.info.id!r} appears twice in the records")
        seen.add((target, dump.info.id))
    apps = [record.app for record in parsed.apps]
    for name in apps:
        if apps.count(name) > 1:
            raise InvalidArgumentError(f"app {name!r} has two app records")
    return parsed


def _kind_of(record: Mapping[str, Any]) -> str:
    """``"session"`` or ``"app"``, from the record's format (and version 2's ``type``)."""
    format_ = record.get("format")
    if format_ == FORMAT_1:
        return "session"
    if format_ != FORMAT_2:
        raise InvalidArgumentError(
            f"format must be {FORMAT_2!r} or {FORMAT_1!r}, got {format_!r} "
            "(not a threadline export?)"
        )
    kind = record.get("type")
    if kind not in ("session", "app"):
        raise InvalidArgumentError(f"type must be 'session' or 'app', got {kind!r}")
    return str(kind)


def write_records(store: Store, parsed: Parsed, *, replace: bool) -> ImportReport:
    """Write parsed records in ONE transaction: sessions (``SessionExistsError`` for one
    that exists, unless ``replace``), then each app's data with its profile
    (``Store.load_app``, replacing the app's own when ``replace``).

    >>> import threadline
    >>> write_records(threadline.connect(":memory:"), Parsed(), replace=False).sessions
    []
    """
    if not replace:
        for target, dump in parsed.sessions:
            if store.get_session(target, dump.info.id) is not None:
                raise SessionExistsError(
                    f"session {dump.info.id!r} already exists in app {target!r} "
                    "(replace=True, or threadline import --replace, overwrites it)"
                )

    def write() -> None:
        if parsed.sessions:
            store.load_sessions(parsed.sessions, replace=replace)
        for record in parsed.apps:
            store.load_app(record.app, record.dump, replace=replace)

    try:
        store.transaction(write)
    except InvalidMessageError as exc:  # over the store's size cap: refused as a bad record
        raise InvalidArgumentError(f"export records: {exc}") from None
    return ImportReport(
        sessions=[dump.info.id for _, dump in parsed.sessions],
        apps=[record.app for record in parsed.apps],
        entries=sum(len(e) for r in parsed.apps for e in r.dump.entries.values()),
        keys=sum(len(r.dump.keys or ()) for r in parsed.apps),
        profiles=sum(r.dump.profile is not None for r in parsed.apps),
        artifacts=sum(len(r.dump.artifacts) for r in parsed.apps),
    )
