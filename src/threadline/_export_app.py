"""App records of export format 2 (``threadline.export``): what an app holds outside its
sessions — its stored profile, app- and user-scoped blocks and state (users without
sessions too), keyed entries, stored files (ADK artifacts, every version, content in
``base64`` or ``text``), and, only when asked, its API keys' hashes — as one JSON-able
record, and such a record parsed back and checked. Pure, no I/O.

>>> import threadline
>>> from threadline.store import AppDump
>>> record = app_record("travel", AppDump(blocks={"policy": "Be brief."}))
>>> record["type"], record["blocks"], "keys" in record
('app', {'policy': 'Be brief.'}, False)
>>> parse_app(record, None).dump.blocks
{'policy': 'Be brief.'}
"""

from __future__ import annotations

import base64
import binascii
import copy
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from threadline._export_fields import (
    as_int,
    as_object,
    as_strings,
    isoformat_utc,
    optional_text,
    parse_time,
)
from threadline._profile_check import check_document
from threadline._validate import check_id, check_json, check_optional_id
from threadline.errors import InvalidArgumentError
from threadline.store._contract.values import (
    AppDump,
    Entry,
    StoredArtifact,
    StoredKey,
    StoredProfile,
)
from threadline.store._sql.dump_check import check_app_dump

__all__ = ["FORMAT_2", "AppRecord", "app_record", "parse_app"]

FORMAT_2 = "threadline.export/2"
"""The ``format`` of version 2 records (app records exist only in version 2)."""

_KEY_HASH = re.compile(r"^[0-9a-f]{64}$")  # threadline.server stores SHA-256 hex digests


@dataclass(frozen=True)
class AppRecord:
    """A parsed app record: the target app and its data as the store writes it
    (``Store.load_app``), its profile included.

    >>> parse_app({"format": FORMAT_2, "type": "app", "app": "a"}, "b").app
    'b'
    """

    app: str
    dump: AppDump


def app_record(app: str, dump: AppDump) -> dict[str, Any]:
    """The app record of ``app``: ``profile`` (or ``None``), ``blocks``/``state`` (app
    scope), ``users`` (each user's ``blocks``/``state``), ``entries`` (by label),
    ``artifacts`` (stored files) and ``keys`` only when the dump carries them.

    >>> from threadline.store import AppDump, Entry
    >>> app_record("a", AppDump(entries={"docs": [Entry("faq", "Ask.", None)]}))["entries"]
    {'docs': [{'key': 'faq', 'content': 'Ask.', 'description': None}]}
    """
    users = sorted(set(dump.user_blocks) | set(dump.user_state))
    profile = dump.profile
    record: dict[str, Any] = {
        "format": FORMAT_2,
        "type": "app",
        "app": app,
        "profile": None
        if profile is None
        else {
            "document": profile.document,
            "version": profile.version,
            "updated_at": isoformat_utc(profile.updated_at),
        },
        "blocks": dump.blocks,
        "state": dump.state,
        "users": {
            user: {"blocks": dump.user_blocks.get(user, {}), "state": dump.user_state.get(user, {})}
            for user in users
        },
        "entries": {
            label: [
                {"key": e.key, "content": e.content, "description": e.description} for e in entries
            ]
            for label, entries in sorted(dump.entries.items())
        },
    }
    record["artifacts"] = [_artifact_record(artifact) for artifact in dump.artifacts]
    if dump.keys is not None:
        record["keys"] = [
            {
                "id": key.id,
                "user_id": key.user_id,
                "key_hash": key.key_hash,
                "created_at": isoformat_utc(key.created_at),
                "revoked_at": isoformat_utc(key.revoked_at) if key.revoked_at else None,
            }
            for key in dump.keys
        ]
    return record


def parse_app(record: Mapping[str, Any], app: str | None) -> AppRecord:
    """An app record (its format already checked) parsed and checked, into ``app`` when
    given, else the record's own. ``InvalidArgumentError`` names the field at fault (a
    missing one raises ``KeyError``, reported by the caller). The profile document is
    checked as ``Profile.from_dict`` checks one (the error names its path) and kept
    verbatim.

    >>> parse_app({"app": "a", "users": {"ana": {"blocks": {}, "state": {"app:x": 1}}}}, None)
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: user_state['ana']: state key 'app:x' is not user-scoped
    """
    target = app if app is not None else check_id("app", record["app"])
    user_blocks: dict[str, dict[str, str]] = {}
    user_state: dict[str, dict[str, Any]] = {}
    for user_id, scope in as_object(record.get("users", {}), "users").items():
        check_id("users key (a user id)", user_id)
        scope = as_object(scope, f"users[{user_id!r}]")
        user_blocks[user_id] = as_strings(scope.get("blocks", {}), f"users[{user_id!r}].blocks")
        user_state[user_id] = as_object(scope.get("state", {}), f"users[{user_id!r}].state")
    entries: dict[str, list[Entry]] = {}
    for label, items in as_object(record.get("entries", {}), "entries").items():
        if not isinstance(items, list):
            raise InvalidArgumentError(f"entries[{label!r}] must be a JSON array")
        entries[label] = [
            _entry_of(item, f"entries[{label!r}][{i}]") for i, item in enumerate(items)
        ]
    keys = record.get("keys")
    if keys is not None and not isinstance(keys, list):
        raise InvalidArgumentError("keys must be a JSON array")
    dump = AppDump(
        blocks=as_strings(record.get("blocks", {}), "blocks"),
        state=as_object(record.get("state", {}), "state"),
        user_blocks={user: blocks for user, blocks in user_blocks.items() if blocks},
        user_state={user: state for user, state in user_state.items() if state},
        entries=entries,
        keys=None if keys is None else [_key_of(item, f"keys[{i}]") for i, item in enumerate(keys)],
        profile=_profile_of(record.get("profile"), target),
        artifacts=_artifacts_of(record.get("artifacts", [])),
    )
    check_app_dump(dump)
    return AppRecord(target, dump)


def _entry_of(item: Any, what: str) -> Entry:
    item = as_object(item, what)
    content = item["content"]
    if not isinstance(content, str):
        raise InvalidArgumentError(f"{what}.content must be a string")
    return Entry(
        key=check_id(f"{what}.key", item["key"]),
        content=content,
        description=optional_text(item.get("description"), f"{what}.description"),
    )


def _key_of(item: Any, what: str) -> StoredKey:
    item = as_object(item, what)
    key_hash = item["key_hash"]
    if not isinstance(key_hash, str) or not _KEY_HASH.match(key_hash):
        raise InvalidArgumentError(f"{what}.key_hash must be 64 lowercase hex digits (SHA-256)")
    revoked = item.get("revoked_at")
    return StoredKey(
        id=check_id(f"{what}.id", item["id"]),
        app="",  # the importing app's: set when loaded
        user_id=check_optional_id(f"{what}.user_id", item.get("user_id")),
        key_hash=key_hash,
        created_at=parse_time(item["created_at"], f"{what}.created_at"),
        revoked_at=None if revoked is None else parse_time(revoked, f"{what}.revoked_at"),
    )


def _profile_of(value: Any, app: str) -> StoredProfile | None:
    if value is None:
        return None
    profile = as_object(value, "profile")
    document = as_object(profile["document"], "profile.document")
    check_json("profile.document", document)
    try:
        check_document(copy.deepcopy(document))
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"profile.document: {exc}") from None
    version = as_int(profile["version"], "profile.version")
    if version < 1:
        raise InvalidArgumentError("profile.version must be at least 1 (a stored profile's)")
    updated_at = parse_time(profile["updated_at"], "profile.updated_at")
    return StoredProfile(app, document, version, updated_at)


def _artifact_record(artifact: StoredArtifact) -> dict[str, Any]:
    content = artifact.content
    record: dict[str, Any] = {
        "user_id": artifact.user_id,
        "session_id": artifact.session_id,
        "filename": artifact.filename,
        "version": artifact.version,
        "part": artifact.part,
        "mime_type": artifact.mime_type,
        "metadata": artifact.metadata,
        "created": artifact.created,
    }
    if isinstance(content, str):
        record["text"] = content
    else:
        record["base64"] = base64.b64encode(content or b"").decode("ascii")
    return record


def _artifacts_of(items: Any) -> list[StoredArtifact]:
    if not isinstance(items, list):
        raise InvalidArgumentError("artifacts must be a JSON array")
    out = []
    for i, item in enumerate(items):
        what = f"artifacts[{i}]"
        item = as_object(item, what)
        content: bytes | str
        if isinstance(item.get("text"), str):
            content = item["text"]
        else:
            try:
                content = base64.b64decode(item["base64"], validate=True)
            except (binascii.Error, TypeError, ValueError):
                raise InvalidArgumentError(f"{what}.base64 must be base64 text") from None
        filename, created = item["filename"], item["created"]
        if not isinstance(filename, str) or not filename:
            raise InvalidArgumentError(f"{what}.filename must be a non-empty string")
        if isinstance(created, bool) or not isinstance(created, int | float):
            raise InvalidArgumentError(f"{what}.created must be a number")
        if not math.isfinite(created):
            raise InvalidArgumentError(f"{what}.created must be finite")
        mime_type = optional_text(item.get("mime_type"), f"{what}.mime_type")
        part = as_object(item.get("part", {}), f"{what}.part")
        metadata = as_object(item.get("metadata", {}), f"{what}.metadata")
        check_json(f"{what}.part", part)
        check_json(f"{what}.metadata", metadata)
        version = as_int(item["version"], f"{what}.version")
        if version < 0:
            raise InvalidArgumentError(f"{what}.version must be at least 0")
        out.append(
            StoredArtifact(
                user_id=check_id(f"{what}.user_id", item["user_id"]),
                session_id=check_optional_id(f"{what}.session_id", item.get("session_id")),
                filename=filename,
                version=version,
                content=content,
                part=part,
                mime_type=mime_type,
                metadata=metadata,
                created=float(created),
            )
        )
    return out
