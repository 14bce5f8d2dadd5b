"""Export and import sessions as JSON records (one per session; JSON Lines on disk).

The format, ``"format": "threadline.export/1"``, is documented in docs/cli.md ("Export
format"). Each record holds everything stored for one session, so exporting a store and
importing the records into an empty one gives identical sessions, on either backend:

* ``app`` and ``session``: the registry row (id, owner, name, parent session, model, source,
  end reason, metadata, ``created_at`` / ``updated_at``) and ``usage`` (tokens, cost);
* ``messages``: every message of the tree in ``seq`` order (a parent always before its
  children), each ``{"seq", "parent_id", "message"}`` plus ``"state_undo"`` when the message
  carried a state delta (what ``rewind`` replays). The message is the stored UIMessage dict
  verbatim — id, role, parts, ``createdAt``, ``metadata`` (``invocationId``...) — with its
  attachments inline exactly as a read returns them (file parts keep their ``data:`` URL,
  long text its text); the importing store takes them out of row again;
* ``head`` (the active leaf) and ``last_seq``;
* ``compactions``: the summary overlays with their ids and times, oldest first;
* ``blocks``, ``prompt`` and ``state``: the session's own memory blocks, frozen system
  prompt and session-scoped state keys;
* ``user`` (``{"blocks", "state"}``): the owner's user-scoped blocks and ``user:`` state, and
  ``app_scope`` (same shape): the app-wide blocks and ``app:`` state. These are shared with
  other sessions, so every record of an export repeats them; an import upserts their keys
  (other keys of that user or app are kept). ``temp:`` state is never stored, so never
  exported. Keyed entries of search/skill providers belong to the app, not to a session,
  and are not part of the format.

Datetimes are ISO 8601 UTC with ``Z`` and microseconds.

>>> import io, threadline
>>> source = threadline.SessionManager(":memory:", app_name="travel")
>>> _ = source.create("Lisbon", session_id="trip", user_id="ana")
>>> _ = source.append("trip", {"role": "user", "content": "Hotels?"})
>>> buffer = io.StringIO()
>>> dump_jsonl(export_sessions(source.store, "travel"), buffer)
1
>>> target = threadline.connect(":memory:")
>>> import_sessions(target, load_jsonl(io.StringIO(buffer.getvalue())))
['trip']
>>> target.get_session("travel", "trip").name
'Lisbon'
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import IO, Any

from threadline._validate import INT64_MAX, check_id, check_optional_id
from threadline.errors import (
    InvalidArgumentError,
    InvalidMessageError,
    SessionExistsError,
    SessionNotFoundError,
)
from threadline.messages import fold_role, normalize_message
from threadline.store._sql.dump_check import check_dump
from threadline.store.base import SessionDump, Store, TreeNode
from threadline.types import Compaction, SessionInfo

__all__ = [
    "FORMAT",
    "dump_jsonl",
    "export_sessions",
    "import_sessions",
    "isoformat_utc",
    "load_jsonl",
    "session_json",
    "usage_json",
]

FORMAT = "threadline.export/1"
"""The ``format`` field of every record this version writes and reads."""

_PAGE = 200


def export_sessions(
    store: Store,
    app: str,
    *,
    session_ids: Sequence[str] | None = None,
    user_id: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield one JSON-able record per session of ``app``: those named by ``session_ids`` (in
    that order; ``SessionNotFoundError`` for one that does not exist or is not ``user_id``'s),
    else every session (only ``user_id``'s when given), newest first. Sessions are read one
    at a time, so a large store is exported in bounded memory.

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> _ = store.append_messages("app", "s1", [{"id": "m1", "role": "user", "parts": []}])
    >>> record = next(export_sessions(store, "app"))
    >>> record["format"], record["head"], [m["message"]["id"] for m in record["messages"]]
    ('threadline.export/1', 'm1', ['m1'])
    """
    check_id("app", app)
    check_optional_id("user_id", user_id)
    for session_id in _session_ids(store, app, session_ids, user_id):
        dump = store.dump_session(app, session_id)
        if dump is None or (user_id is not None and dump.info.user_id != user_id):
            raise SessionNotFoundError(f"session {session_id!r} not found in app {app!r}")
        yield _record(app, dump)


def import_sessions(
    store: Store,
    records: Iterable[Mapping[str, Any]],
    *,
    replace: bool = False,
    app: str | None = None,
) -> list[str]:
    """Write exported records into ``store`` (into ``app`` when given, else each record's own
    app); returns the session ids imported, in order.

    All or nothing: every record is checked before anything is written (its fields, dates
    within years 1-9999, every message as an append checks it — ``normalize_message``, with
    the roles older releases stored from other APIs mapped by ``fold_role`` — then its tree
    with ``threadline.store.check_dump``: parents before children, unique ids, ``seq`` at most
    2**53, head, undo records and overlay ends in the tree, unique overlay ids, state keys
    under their scope), and a bad one raises ``InvalidArgumentError`` naming it; a session
    that already exists raises ``SessionExistsError`` unless ``replace=True`` (which replaces
    it). All the sessions are then written in ONE transaction (``Store.load_sessions``), so a
    failure while writing (say another client creating one of the sessions meanwhile) leaves
    the store as it was.

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
    if app is not None:
        check_id("app", app)
    parsed: list[tuple[str, SessionDump]] = []
    for index, record in enumerate(records, start=1):
        try:
            parsed.append(_dump_of(record, app))
            check_dump(parsed[-1][1])
        except (InvalidArgumentError, KeyError, TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"export record {index}: {_reason(exc)}") from None
    seen: set[tuple[str, str]] = set()
    for target, dump in parsed:
        if (target, dump.info.id) in seen:
            raise InvalidArgumentError(f"session {dump.info.id!r} appears twice in the records")
        seen.add((target, dump.info.id))
    if not replace:
        for target, dump in parsed:
            if store.get_session(target, dump.info.id) is not None:
                raise SessionExistsError(
                    f"session {dump.info.id!r} already exists in app {target!r} "
                    "(replace=True, or threadline import --replace, overwrites it)"
                )
    try:
        store.load_sessions(parsed, replace=replace)
    except InvalidMessageError as exc:  # over the store's size cap: refused as a bad record
        raise InvalidArgumentError(f"export records: {exc}") from None
    return [dump.info.id for _, dump in parsed]


def dump_jsonl(records: Iterable[Mapping[str, Any]], fp: IO[str]) -> int:
    """Write records to a text file as JSON Lines (compact, UTF-8 as is); returns the count.

    >>> import io
    >>> buffer = io.StringIO()
    >>> dump_jsonl([{"format": FORMAT, "n": "é"}], buffer), buffer.getvalue()
    (1, '{"format":"threadline.export/1","n":"é"}\\n')
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


def isoformat_utc(value: datetime) -> str:
    """An aware datetime as the format writes it: ISO 8601, UTC, microseconds, ``Z``.

    >>> isoformat_utc(datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC))
    '2026-01-02T03:04:05.000006Z'
    """
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(value: Any, what: str) -> datetime:
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{what} must be an ISO 8601 string")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidArgumentError(f"{what} is not an ISO 8601 time: {value!r}") from None
    if parsed.tzinfo is None:
        raise InvalidArgumentError(f"{what} needs a time zone: {value!r}")
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:59-14:00 is in year 10000 in UTC
        raise InvalidArgumentError(f"{what} is outside years 1-9999 in UTC: {value!r}") from None


def session_json(info: SessionInfo) -> dict[str, Any]:
    """The registry fields of a session as the format writes them (the ``session`` object of
    a record; ``threadline sessions --json`` prints the same).

    >>> import threadline
    >>> info = threadline.SessionManager(":memory:").create("Trip", session_id="s1")
    >>> sorted(session_json(info))  # doctest: +NORMALIZE_WHITESPACE
    ['created_at', 'end_reason', 'id', 'metadata', 'model', 'name', 'parent_session_id',
     'source', 'updated_at', 'user_id']
    """
    return {
        "id": info.id,
        "user_id": info.user_id,
        "name": info.name,
        "parent_session_id": info.parent_session_id,
        "model": info.model,
        "source": info.source,
        "end_reason": info.end_reason,
        "metadata": info.metadata,
        "created_at": isoformat_utc(info.created_at),
        "updated_at": isoformat_utc(info.updated_at),
    }


def usage_json(info: SessionInfo) -> dict[str, Any]:
    """The usage counters of a session (the ``usage`` object of a record).

    >>> import threadline
    >>> usage_json(threadline.SessionManager(":memory:").create(session_id="s1"))
    {'input_tokens': 0, 'output_tokens': 0, 'estimated_cost': 0.0}
    """
    return {
        "input_tokens": info.input_tokens,
        "output_tokens": info.output_tokens,
        "estimated_cost": info.estimated_cost,
    }


def _record(app: str, dump: SessionDump) -> dict[str, Any]:
    info = dump.info
    messages = []
    for node in dump.messages:
        item: dict[str, Any] = {
            "seq": node.seq,
            "parent_id": node.parent_id,
            "message": node.message,
        }
        undo = dump.state_undo.get(node.message["id"])
        if undo:
            item["state_undo"] = undo
        messages.append(item)
    return {
        "format": FORMAT,
        "app": app,
        "session": session_json(info),
        "usage": usage_json(info),
        "head": dump.head_id,
        "last_seq": dump.last_seq,
        "messages": messages,
        "compactions": [
            {
                "id": c.id,
                "summary": c.summary,
                "from_message_id": c.from_message_id,
                "to_message_id": c.to_message_id,
                "created_at": isoformat_utc(c.created_at),
            }
            for c in dump.compactions
        ],
        "blocks": dump.blocks,
        "prompt": dump.prompt,
        "state": dump.state,
        "user": {"blocks": dump.user_blocks, "state": dump.user_state},
        "app_scope": {"blocks": dump.app_blocks, "state": dump.app_state},
    }


def _reason(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    return str(exc)


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidArgumentError(f"{what} must be a JSON object")
    return value


def _strings(value: Any, what: str) -> dict[str, str]:
    mapping = _object(value, what)
    for key, content in mapping.items():
        if not isinstance(content, str):
            raise InvalidArgumentError(f"{what}[{key!r}] must be a string")
    return mapping


def _int(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= INT64_MAX:
        raise InvalidArgumentError(f"{what} must be a non-negative 64-bit integer")
    return value


def _dump_of(record: Mapping[str, Any], app: str | None) -> tuple[str, SessionDump]:
    """``(target app, dump)`` of one record; raises on anything malformed."""
    record = _object(record, "record")
    if record.get("format") != FORMAT:
        raise InvalidArgumentError(
            f"format must be {FORMAT!r}, got {record.get('format')!r} (not a threadline export?)"
        )
    target = app if app is not None else check_id("app", record["app"])
    session, usage = _object(record["session"], "session"), _object(record["usage"], "usage")
    cost = usage["estimated_cost"]
    if not isinstance(cost, (int, float)) or isinstance(cost, bool) or not 0 <= cost < math.inf:
        raise InvalidArgumentError("usage.estimated_cost must be a non-negative number")
    info = SessionInfo(
        id=check_id("session.id", session["id"]),
        app_name=target,
        user_id=check_optional_id("session.user_id", session.get("user_id")),
        name=_optional_text(session.get("name"), "session.name"),
        parent_session_id=check_optional_id(
            "session.parent_session_id", session.get("parent_session_id")
        ),
        model=_optional_text(session.get("model"), "session.model"),
        source=_optional_text(session.get("source"), "session.source"),
        input_tokens=_int(usage["input_tokens"], "usage.input_tokens"),
        output_tokens=_int(usage["output_tokens"], "usage.output_tokens"),
        estimated_cost=float(cost),
        end_reason=_optional_text(session.get("end_reason"), "session.end_reason"),
        metadata=_object(session.get("metadata", {}), "session.metadata"),
        message_count=len(record["messages"]),
        created_at=_parse_time(session["created_at"], "session.created_at"),
        updated_at=_parse_time(session["updated_at"], "session.updated_at"),
    )
    user, shared = _object(record["user"], "user"), _object(record["app_scope"], "app_scope")
    messages = [_message_of(item) for item in record["messages"]]
    dump = SessionDump(
        info=info,
        head_id=check_optional_id("head", record.get("head")),
        last_seq=_int(record["last_seq"], "last_seq"),
        messages=[node for node, _ in messages],
        state_undo={node.message["id"]: undo for node, undo in messages if undo is not None},
        compactions=[_overlay_of(item) for item in record["compactions"]],
        blocks=_strings(record["blocks"], "blocks"),
        prompt=_optional_text(record.get("prompt"), "prompt"),
        state=_object(record["state"], "state"),
        user_blocks=_strings(user["blocks"], "user.blocks"),
        user_state=_object(user["state"], "user.state"),
        app_blocks=_strings(shared["blocks"], "app_scope.blocks"),
        app_state=_object(shared["state"], "app_scope.state"),
    )
    return target, dump


def _optional_text(value: Any, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InvalidArgumentError(f"{what} must be a string or null")
    return value


def _message_of(item: Any) -> tuple[TreeNode, dict[str, Any] | None]:
    item = _object(item, "messages[]")
    message = _object(item["message"], "messages[].message")
    message_id = check_id("message id", message.get("id"))
    try:  # what an append takes, and only that; older releases' roles mapped as converters do
        message = normalize_message(fold_role(message))
    except InvalidMessageError as exc:
        raise InvalidArgumentError(f"message {message_id!r}: {exc}") from None
    undo = item.get("state_undo")
    node = TreeNode(
        seq=_int(item["seq"], "messages[].seq"),
        parent_id=check_optional_id("messages[].parent_id", item.get("parent_id")),
        message=message,
    )
    return node, _object(undo, "messages[].state_undo") if undo is not None else None


def _overlay_of(item: Any) -> Compaction:
    item = _object(item, "compactions[]")
    summary = item["summary"]
    if not isinstance(summary, str):
        raise InvalidArgumentError("compactions[].summary must be a string")
    return Compaction(
        id=check_id("compactions[].id", item["id"]),
        summary=summary,
        from_message_id=check_id("compactions[].from_message_id", item["from_message_id"]),
        to_message_id=check_id("compactions[].to_message_id", item["to_message_id"]),
        created_at=_parse_time(item["created_at"], "compactions[].created_at"),
    )
