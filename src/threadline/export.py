"""Export and import a store's data as JSON records (JSON Lines on disk), and copy a whole
store between backends.

The format, ``"format": "threadline.export/2"``, is documented in docs/cli.md ("Export
format"); version 1 files (``threadline.export/1``, session records only) are still read.
Exporting a store and importing the records into an empty one gives identical data, on
either backend. Two kinds of record:

* a **session record** (``"type": "session"``) per session holds everything stored for it:

  * ``app`` and ``session``: the registry row (id, owner, name, parent session, model,
    source, end reason, metadata, ``created_at`` / ``updated_at``) and ``usage``;
  * ``messages``: every message of the tree in ``seq`` order (a parent always before its
    children), each ``{"seq", "parent_id", "message"}`` plus ``"state_undo"`` when the
    message carried a state delta (what ``rewind`` replays). The message is the stored
    UIMessage verbatim, its attachments inline exactly as a read returns them (file parts
    keep their ``data:`` URL, long text its text); the importing store takes them out of
    row again;
  * ``head`` and ``last_seq``; ``compactions`` (the overlays with ids and times);
  * ``blocks``, ``prompt`` and ``state``: the session's own; ``user`` (``{"blocks",
    "state"}``) the owner's user-scoped ones and ``app_scope`` the app-wide ones, repeated
    by every record (an import upserts those keys);

* an **app record** (``"type": "app"``, version 2) per app holds what the app keeps outside
  its sessions: its stored profile (document, version and time, verbatim), every user's
  blocks and ``user:`` state (users without sessions too), the app-scoped blocks and
  ``app:`` state, the keyed entries of search/skill providers by label, and only when asked
  (``keys=True``, ``threadline export --with-keys``, ``threadline copy``) its API keys'
  hashes. ``threadline export`` of a whole app writes it first.

Datetimes are ISO 8601 UTC with ``Z`` and microseconds. ``temp:`` state is never stored,
so never exported.

>>> import io, threadline
>>> source = threadline.SessionManager(":memory:", app_name="travel")
>>> _ = source.create("Lisbon", session_id="trip", user_id="ana")
>>> _ = source.append("trip", {"role": "user", "content": "Hotels?"})
>>> buffer = io.StringIO()
>>> dump_jsonl([export_app(source.store, "travel")], buffer)
1
>>> dump_jsonl(export_sessions(source.store, "travel"), buffer)
1
>>> target = threadline.connect(":memory:")
>>> import_records(target, load_jsonl(io.StringIO(buffer.getvalue()))).sessions
['trip']
>>> target.get_session("travel", "trip").name
'Lisbon'
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import IO, Any

from threadline._export_app import FORMAT_2, app_record
from threadline._export_copy import CopyReport, copy_store
from threadline._export_fields import isoformat_utc
from threadline._export_import import FORMAT_1, ImportReport, parse_records, write_records
from threadline._export_session import session_json, session_record, usage_json
from threadline._validate import check_id, check_optional_id
from threadline.errors import InvalidArgumentError, SessionNotFoundError
from threadline.store.base import Store

__all__ = [
    "FORMAT",
    "FORMAT_1",
    "CopyReport",
    "ImportReport",
    "copy_store",
    "dump_jsonl",
    "export_app",
    "export_sessions",
    "import_records",
    "import_sessions",
    "isoformat_utc",
    "load_jsonl",
    "session_json",
    "usage_json",
]

FORMAT = FORMAT_2
"""The ``format`` field of every record this version writes: ``"threadline.export/2"``
(:data:`FORMAT_1` records are still read)."""

_PAGE = 200


def export_sessions(
    store: Store,
    app: str,
    *,
    session_ids: Sequence[str] | None = None,
    user_id: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield one JSON-able session record per session of ``app``: those named by
    ``session_ids`` (in that order; ``SessionNotFoundError`` for one that does not exist or
    is not ``user_id``'s), else every session (only ``user_id``'s when given), newest first.
    Sessions are read one at a time, so a large store is exported in bounded memory.

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> _ = store.append_messages("app", "s1", [{"id": "m1", "role": "user", "parts": []}])
    >>> record = next(export_sessions(store, "app"))
    >>> record["format"], record["type"], [m["message"]["id"] for m in record["messages"]]
    ('threadline.export/2', 'session', ['m1'])
    """
    check_id("app", app)
    check_optional_id("user_id", user_id)
    for session_id in _session_ids(store, app, session_ids, user_id):
        dump = store.dump_session(app, session_id)
        if dump is None or (user_id is not None and dump.info.user_id != user_id):
            raise SessionNotFoundError(f"session {session_id!r} not found in app {app!r}")
        yield session_record(app, dump, FORMAT)


def export_app(store: Store, app: str, *, keys: bool = False) -> dict[str, Any]:
    """The app record of ``app`` (format 2): its stored profile, app- and user-scoped blocks
    and state (users without sessions too), keyed entries by label, and with ``keys=True``
    its API keys' rows — hashes, never keys, and never unless asked.

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> store.put_entry("app", "docs", "faq", "Ask us anything.")
    >>> _ = store.add_api_key("k1", "app", None, "ab" * 32)
    >>> record = export_app(store, "app")
    >>> record["type"], list(record["entries"]), "keys" in record
    ('app', ['docs'], False)
    >>> [key["id"] for key in export_app(store, "app", keys=True)["keys"]]
    ['k1']
    """
    check_id("app", app)
    return app_record(app, store.dump_app(app, keys=keys))


def import_sessions(
    store: Store,
    records: Iterable[Mapping[str, Any]],
    *,
    replace: bool = False,
    app: str | None = None,
) -> list[str]:
    """Write exported session records (format 1 or 2) into ``store`` (into ``app`` when
    given, else each record's own app); returns the session ids imported, in order. An app
    record is refused (``InvalidArgumentError``): profiles and API keys are the operator's,
    imported with :func:`import_records` (what ``threadline import`` uses); the HTTP
    service's ``POST /v1/import`` uses this one.

    All or nothing: every record is checked before anything is written (its fields, dates
    within years 1-9999, every message as an append checks it — ``normalize_message``, with
    the roles older releases stored from other APIs mapped by ``fold_role`` — then its tree
    with ``threadline.store.check_dump``: parents before children, unique ids, ``seq`` at most
    2**53, head, undo records and overlay ends in the tree, unique overlay ids, state keys
    under their scope), and a bad one raises ``InvalidArgumentError`` naming it; a session
    that already exists raises ``SessionExistsError`` unless ``replace=True`` (which replaces
    it). All the sessions are then written in ONE transaction, so a failure while writing
    (say another client creating one of the sessions meanwhile) leaves the store as it was.

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> _ = store.append_messages("app", "s1", [{"id": "m1", "role": "user", "parts": []}])
    >>> records = list(export_sessions(store, "app"))
    >>> import_sessions(store, records)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    threadline.errors.SessionExistsError: session 's1' already exists in app 'app' ...
    >>> import_sessions(store, records, replace=True)
    ['s1']
    """
    parsed = parse_records(records, app=app, apps_allowed=False)
    return write_records(store, parsed, replace=replace).sessions


def import_records(
    store: Store,
    records: Iterable[Mapping[str, Any]],
    *,
    replace: bool = False,
    app: str | None = None,
) -> ImportReport:
    """Write exported records of both kinds (format 1 or 2) into ``store``, in ONE
    transaction, after checking every one as :func:`import_sessions` does (an app record's
    fields too: state keys under their scope, entry keys once per label, key hashes as
    SHA-256 hex, the profile's version and time). Sessions as there; each app record's
    blocks, state and entries are upserted — with ``replace=True`` they replace the app's
    own — its API keys added (one the store holds with other values is refused) and its
    profile stored verbatim. Returns an :class:`ImportReport`.

    >>> import threadline
    >>> source, target = threadline.connect(":memory:"), threadline.connect(":memory:")
    >>> source.set_block("app", "user", "ana", "profile", "Lives in Porto.")
    >>> report = import_records(target, [export_app(source, "app")])
    >>> report.apps, target.get_block("app", "user", "ana", "profile")
    (['app'], 'Lives in Porto.')
    """
    parsed = parse_records(records, app=app, apps_allowed=True)
    return write_records(store, parsed, replace=replace)


def dump_jsonl(records: Iterable[Mapping[str, Any]], fp: IO[str]) -> int:
    """Write records to a text file as JSON Lines (compact, UTF-8 as is); returns the count.

    >>> import io
    >>> buffer = io.StringIO()
    >>> dump_jsonl([{"format": FORMAT, "n": "é"}], buffer), buffer.getvalue()
    (1, '{"format":"threadline.export/2","n":"é"}\\n')
    """
    count = 0
    for record in records:
        fp.write(json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False))
        fp.write("\n")
        count += 1
    return count


def load_jsonl(fp: IO[str]) -> Iterator[dict[str, Any]]:
    """Read records from a JSON Lines text file (blank lines skipped); a line that is not a
    JSON object raises ``InvalidArgumentError`` with its line number.

    >>> import io
    >>> list(load_jsonl(io.StringIO('{"a": 1}\\n\\n{"b": 2}\\n')))
    [{'a': 1}, {'b': 2}]
    >>> list(load_jsonl(io.StringIO("[1]\\n")))
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: line 1: not a JSON object
    >>> list(load_jsonl(io.StringIO("[" * 100_000)))
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: line 1: nested too deeply
    """
    for number, line in enumerate(fp, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise InvalidArgumentError(f"line {number}: not JSON ({exc})") from None
        except RecursionError:  # the decoder recurses per level: "[[[[..." exhausts the stack
            raise InvalidArgumentError(f"line {number}: nested too deeply") from None
        if not isinstance(value, dict):
            raise InvalidArgumentError(f"line {number}: not a JSON object")
        yield value


# --------------------------------------------------------------------------- helpers


def _session_ids(
    store: Store, app: str, session_ids: Sequence[str] | None, user_id: str | None
) -> Iterator[str]:
    if session_ids is not None:
        if isinstance(session_ids, str):
            raise InvalidArgumentError("session_ids must be a list of ids, not a string")
        for session_id in session_ids:
            yield check_id("session id", session_id)
        return
    cursor: str | None = None
    while True:
        page = store.list_sessions(app, user_id=user_id, limit=_PAGE, cursor=cursor)
        for info in page.sessions:
            yield info.id
        if page.next_cursor is None:
            return
        cursor = page.next_cursor
