"""ADK events <-> threadline messages, both ways and lossless (pure: no storage, no loop).

The content becomes the message's parts (``threadline.formats``), the rest of the event its
``metadata["adk"]["event"]``; see :mod:`threadline.integrations.adk` for the whole mapping.

>>> message = event_to_message(Event(id="e1", author="user"))
>>> message["id"], message["role"], message_to_event(message).id
('e1', 'user', 'e1')
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types as genai_types
from pydantic_core import to_jsonable_python

from threadline.formats import from_genai, to_genai
from threadline.messages import format_timestamp, parse_timestamp

__all__ = ["KEY", "event_of_json", "event_to_message", "message_to_event"]

KEY = "adk"  # the adapter's key in registry metadata and in message metadata


def _content_json(content: genai_types.Content) -> dict[str, Any]:
    # mode="json" gives what model_dump_json then json.loads gives, at half the cost.
    return content.model_dump(mode="json", exclude_none=True, by_alias=True)


def _created_at(timestamp: float) -> str | None:
    try:
        return format_timestamp(datetime.fromtimestamp(timestamp, tz=UTC))
    except (OverflowError, OSError, ValueError):
        return None


def _none_by_default(model: type[Event] | type[EventActions]) -> frozenset[str]:
    return frozenset(
        name
        for name, field in model.model_fields.items()
        if field.default is None and field.default_factory is None
    )


# Fields whose default is None: a None there is left out of the stored event (validation
# puts it back), about two thirds of an event's JSON. Any other None is kept.
_EVENT_NONE = _none_by_default(Event)
_ACTIONS_NONE = _none_by_default(EventActions)


def _without_default_nones(data: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in data.items() if v is not None or k not in _EVENT_NONE}
    actions = out.get("actions")
    if isinstance(actions, dict):
        out["actions"] = {
            k: v for k, v in actions.items() if v is not None or k not in _ACTIONS_NONE
        }
    return out


def _event_json(event: Event) -> dict[str, Any]:
    try:
        data = event.model_dump(mode="json", exclude={"content"})
    except Exception:  # a value pydantic cannot serialise (e.g. a callable in state_delta)
        data = to_jsonable_python(event.model_dump(exclude={"content"}), fallback=repr)
    return _without_default_nones(data)


def event_to_message(event: Event, *, message_id: str | None = None) -> dict[str, Any]:
    """A threadline message holding ``event`` losslessly (:func:`message_to_event` undoes it).

    The content becomes the message's parts (``from_genai``), the rest of the event its
    ``metadata["adk"]["event"]``; ``message_id`` defaults to the event's id. Content that
    the parts would not give back exactly is kept whole in ``metadata["adk"]["content"]``.

    >>> from google.adk.events.event import Event
    >>> from google.genai import types
    >>> event = Event(id="e1", author="user", invocation_id="i1",
    ...               content=types.Content(role="user", parts=[types.Part(text="Hi")]))
    >>> message = event_to_message(event)
    >>> message["role"], message["parts"], message["metadata"]["invocationId"]
    ('user', [{'type': 'text', 'text': 'Hi'}], 'i1')
    >>> message_to_event(message) == event
    True
    """
    adk: dict[str, Any] = {"event": _event_json(event)}
    message: dict[str, Any] = {
        "id": message_id or event.id or uuid.uuid4().hex,
        "role": "user" if event.author == "user" else "assistant",
        "parts": [],
    }
    if event.content is not None:
        content = _content_json(event.content)
        converted = from_genai([content])[0]
        if to_genai([converted]) == [content]:
            message.update(converted)
            adk["content"] = "parts"
        else:
            adk["content"] = content
    metadata: dict[str, Any] = {KEY: adk}
    if event.invocation_id:
        metadata["invocationId"] = event.invocation_id
    if event.author:
        metadata["author"] = event.author
    if event.branch:
        metadata["branch"] = event.branch
    if event.partial:
        metadata["partial"] = True
    message["metadata"] = metadata
    created = _created_at(event.timestamp)
    if created is not None:
        message["createdAt"] = created
    return message


def message_to_event(message: Mapping[str, Any]) -> Event:
    """The ADK ``Event`` a message holds: exact for messages written by
    :func:`event_to_message`; any other threadline message is converted (``to_genai``), with
    its id, ``createdAt`` as the timestamp and ``metadata.author``/``invocationId`` if set.

    >>> message_to_event({"id": "m1", "role": "assistant", "createdAt": "2026-01-01T00:00:00Z",
    ...                   "parts": [{"type": "text", "text": "Hello"}]}).content.parts[0].text
    'Hello'
    """
    metadata = message.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    adk = metadata.get(KEY)
    if isinstance(adk, Mapping) and isinstance(adk.get("event"), Mapping):
        data = dict(adk["event"])
        content = adk.get("content")
        if content == "parts":
            data["content"] = to_genai([message])[0]
        elif isinstance(content, Mapping):
            data["content"] = dict(content)
        return Event.model_validate_json(json.dumps(data))
    role = message.get("role")
    fields: dict[str, Any] = {
        "id": str(message.get("id") or ""),
        "author": str(metadata.get("author") or ("user" if role == "user" else "model")),
        "invocation_id": str(metadata.get("invocationId") or ""),
        "content": to_genai([message])[0],
    }
    created = message.get("createdAt")
    if isinstance(created, str):
        fields["timestamp"] = parse_timestamp(created).timestamp()
    if isinstance(metadata.get("branch"), str):
        fields["branch"] = metadata["branch"]
    return Event.model_validate_json(json.dumps(fields))


def event_of_json(encoded: str) -> Event:
    decoded: dict[str, Any] = json.loads(encoded)
    return message_to_event(decoded)
