"""Session records of the export format (``threadline.export``): one session's dump as a
JSON-able record, and a record parsed back into a checked dump. Pure, no I/O.

>>> import threadline
>>> store = threadline.connect(":memory:")
>>> _ = store.append_messages("app", "s1", [{"id": "m1", "role": "system", "parts": []}])
>>> record = session_record("app", store.dump_session("app", "s1"), "threadline.export/2")
>>> record["messages"][0]["message"]["role"] = "developer"  # as an older release stored it
>>> target, dump = parse_session(record, None)
>>> target, dump.messages[0].message["role"]  # an older release's role, mapped as on import
('app', 'system')
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from threadline._export_fields import (
    as_int,
    as_object,
    as_strings,
    isoformat_utc,
    optional_text,
    parse_time,
)
from threadline._validate import check_id, check_optional_id
from threadline.errors import InvalidArgumentError, InvalidMessageError
from threadline.messages import fold_role, normalize_message
from threadline.store._contract.values import SessionDump, TreeNode
from threadline.types import Compaction, SessionInfo

__all__ = ["parse_session", "session_json", "session_record", "usage_json"]


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


def session_record(app: str, dump: SessionDump, format_: str) -> dict[str, Any]:
    """One session's record in format ``format_`` (version 2 records say ``"type":
    "session"``; the fields are version 1's).

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> _ = store.append_messages("app", "s1", [{"id": "m1", "role": "user", "parts": []}])
    >>> record = session_record("app", store.dump_session("app", "s1"), "threadline.export/2")
    >>> record["type"], record["head"]
    ('session', 'm1')
    """
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
    kind = {} if format_.endswith("/1") else {"type": "session"}
    return {
        "format": format_,
        **kind,
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


def parse_session(
    record: Mapping[str, Any], app: str | None, *, verbatim: bool = False
) -> tuple[str, SessionDump]:
    """``(target app, dump)`` of one session record (its format already checked): into
    ``app`` when given, else the record's own. Raises ``InvalidArgumentError`` (or the
    ``KeyError`` of a missing field) on anything malformed; ``check_dump`` is the caller's.
    Messages are normalised as an append does (roles older releases stored mapped), and
    given a ``createdAt`` when they have none — unless ``verbatim`` (a copy between stores:
    ``Store.append_messages`` stores a message without one, and a copy keeps it so).

    >>> parse_session({"app": "a"}, None)
    Traceback (most recent call last):
    KeyError: 'session'
    """
    target = app if app is not None else check_id("app", record["app"])
    session, usage = as_object(record["session"], "session"), as_object(record["usage"], "usage")
    cost = usage["estimated_cost"]
    if not isinstance(cost, (int, float)) or isinstance(cost, bool) or not 0 <= cost < math.inf:
        raise InvalidArgumentError("usage.estimated_cost must be a non-negative number")
    if not isinstance(record["messages"], list) or not isinstance(record["compactions"], list):
        raise InvalidArgumentError("messages and compactions must be JSON arrays")
    info = SessionInfo(
        id=check_id("session.id", session["id"]),
        app_name=target,
        user_id=check_optional_id("session.user_id", session.get("user_id")),
        name=optional_text(session.get("name"), "session.name"),
        parent_session_id=check_optional_id(
            "session.parent_session_id", session.get("parent_session_id")
        ),
        model=optional_text(session.get("model"), "session.model"),
        source=optional_text(session.get("source"), "session.source"),
        input_tokens=as_int(usage["input_tokens"], "usage.input_tokens"),
        output_tokens=as_int(usage["output_tokens"], "usage.output_tokens"),
        estimated_cost=float(cost),
        end_reason=optional_text(session.get("end_reason"), "session.end_reason"),
        metadata=as_object(session.get("metadata", {}), "session.metadata"),
        message_count=len(record["messages"]),
        created_at=parse_time(session["created_at"], "session.created_at"),
        updated_at=parse_time(session["updated_at"], "session.updated_at"),
    )
    user = as_object(record["user"], "user")
    shared = as_object(record["app_scope"], "app_scope")
    messages = [_message_of(item, verbatim) for item in record["messages"]]
    dump = SessionDump(
        info=info,
        head_id=check_optional_id("head", record.get("head")),
        last_seq=as_int(record["last_seq"], "last_seq"),
        messages=[node for node, _ in messages],
        state_undo={node.message["id"]: undo for node, undo in messages if undo is not None},
        compactions=[_overlay_of(item) for item in record["compactions"]],
        blocks=as_strings(record["blocks"], "blocks"),
        prompt=optional_text(record.get("prompt"), "prompt"),
        state=as_object(record["state"], "state"),
        user_blocks=as_strings(user["blocks"], "user.blocks"),
        user_state=as_object(user["state"], "user.state"),
        app_blocks=as_strings(shared["blocks"], "app_scope.blocks"),
        app_state=as_object(shared["state"], "app_scope.state"),
    )
    return target, dump


def _message_of(item: Any, verbatim: bool) -> tuple[TreeNode, dict[str, Any] | None]:
    item = as_object(item, "messages[]")
    message = as_object(item["message"], "messages[].message")
    message_id = check_id("message id", message.get("id"))
    try:  # what an append takes, and only that; older releases' roles mapped as converters do
        normalized = normalize_message(fold_role(message))
    except InvalidMessageError as exc:
        raise InvalidArgumentError(f"message {message_id!r}: {exc}") from None
    if verbatim and "createdAt" not in message:
        normalized = {key: value for key, value in normalized.items() if key != "createdAt"}
    undo = item.get("state_undo")
    node = TreeNode(
        seq=as_int(item["seq"], "messages[].seq"),
        parent_id=check_optional_id("messages[].parent_id", item.get("parent_id")),
        message=normalized,
    )
    return node, as_object(undo, "messages[].state_undo") if undo is not None else None


def _overlay_of(item: Any) -> Compaction:
    item = as_object(item, "compactions[]")
    summary = item["summary"]
    if not isinstance(summary, str):
        raise InvalidArgumentError("compactions[].summary must be a string")
    return Compaction(
        id=check_id("compactions[].id", item["id"]),
        summary=summary,
        from_message_id=check_id("compactions[].from_message_id", item["from_message_id"]),
        to_message_id=check_id("compactions[].to_message_id", item["to_message_id"]),
        created_at=parse_time(item["created_at"], "compactions[].created_at"),
    )
