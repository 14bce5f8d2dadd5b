"""Value types of the storage contract (shared by its parts and re-exported by
``threadline.store.base``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from threadline.types import Compaction, RecentHistory, Scope, SessionInfo

__all__ = [
    "UNSET",
    "ApiKey",
    "AppDump",
    "Change",
    "Entry",
    "OwnerKind",
    "RecentPath",
    "SessionDump",
    "SkillLoad",
    "StoredArtifact",
    "StoredKey",
    "StoredProfile",
    "TreeNode",
]

OwnerKind = Scope
"""Who a block or state key belongs to: one session, one user of the app, or the whole app
(the same three values as a block's ``scope``)."""


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""Marker for "leave this field unchanged" in :meth:`Store.update_session`."""


RecentPath = RecentHistory
"""What ``get_recent_path`` returns: the newest contiguous suffix of the head path (root→leaf
order) and the path's byte total; the same type as ``Session.get_recent_history`` returns
(before overlays are applied)."""


@dataclass(frozen=True)
class SkillLoad:
    """A skill document loaded by a ``load_context`` tool result stored in a message.

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> msg = threadline.messages.tool_call("load_context", {"label": "s", "key": "k"}, "doc", "c1")
    >>> msg["id"] = "m1"
    >>> _ = store.append_messages("default", "s1", [msg])
    >>> store.get_skill_loads("default", "s1")
    [SkillLoad(label='s', key='k', message_id='m1', tool_call_id='c1')]
    """

    label: str
    key: str
    message_id: str
    tool_call_id: str | None


@dataclass(frozen=True)
class Entry:
    """A keyed document of a search or skill provider (shared by every session of an app).

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> store.put_entry("default", "docs", "faq", "Ask us anything.", "Common questions")
    >>> store.get_entry("default", "docs", "faq")
    Entry(key='faq', content='Ask us anything.', description='Common questions')
    """

    key: str
    content: str
    description: str | None


@dataclass(frozen=True)
class ApiKey:
    """An HTTP API key as the store holds it: never the key itself, only its hash
    (``threadline.server.create_key`` makes keys; the server looks them up by hash).

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> key = store.add_api_key("k1", "travel", None, "ab" * 32)
    >>> key.id, key.app, key.user_id, key.revoked
    ('k1', 'travel', None, False)
    """

    id: str
    app: str
    user_id: str | None
    created_at: datetime
    revoked: bool


@dataclass(frozen=True)
class StoredProfile:
    """An app's profile as the store holds it: the JSON document (``threadline.Profile`` reads
    and validates it), a write counter that grows by one on every write, and when it was
    last written.

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> stored = store.put_profile("travel", {"format": 1})
    >>> stored.app, stored.document, stored.version
    ('travel', {'format': 1}, 1)
    """

    app: str
    document: dict[str, Any]
    version: int
    updated_at: datetime


@dataclass(frozen=True)
class Change:
    """One logged write to a session that appends do not tell (what ``Store.get_changes``
    returns): ``stamp`` is the session's ``updated_at`` after it, in microseconds; ``kind``
    is ``message_updated`` (``{"id": ...}``), ``messages_deleted`` (``{"ids": [...]}``, or
    ``{"all": true}`` when cleared) or ``block`` (``{"label": ...}``, a session block).

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
    >>> _ = store.delete_messages("default", "s1", ["m1"])
    >>> [(c.kind, c.payload) for c in store.get_changes("default", "s1")]
    [('messages_deleted', {'ids': ['m1']})]
    """

    stamp: int
    kind: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class TreeNode:
    """One stored message with its place in the tree: its ``seq`` (per-session order of
    writing) and its ``parent_id`` (``None`` for a root). What ``Store.get_tree`` returns.

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
    >>> store.get_tree("default", "s1")[0]
    TreeNode(seq=1, parent_id=None, message={'id': 'm1', 'role': 'user', 'parts': []})
    """

    seq: int
    parent_id: str | None
    message: dict[str, Any]


@dataclass(frozen=True)
class SessionDump:
    """Everything stored for one session, verbatim: what ``Store.dump_session`` reads and
    ``Store.load_session`` writes back (the export format of ``threadline.export`` is built
    on it).

    ``messages`` are every message of the tree in ``seq`` order (a parent always before its
    children; attachments put back inline); ``state_undo`` maps the id of each message that
    carried a state delta to the undo record stored with it (``{key: [existed, old_value]}``,
    what ``Store.rewind`` replays); ``compactions`` oldest first; ``blocks``/``state`` are the
    session-owned ones; ``user_blocks`` / ``user_state`` those of the session's owner (empty
    without one); ``app_blocks`` / ``app_state`` the app-wide ones (shared by every session of
    the app).

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
    >>> dump = store.dump_session("default", "s1")
    >>> dump.head_id, [(node.seq, node.message["id"]) for node in dump.messages]
    ('m1', [(1, 'm1')])
    """

    info: SessionInfo
    head_id: str | None
    last_seq: int
    messages: list[TreeNode] = field(default_factory=list)
    state_undo: dict[str, dict[str, Any]] = field(default_factory=dict)
    compactions: list[Compaction] = field(default_factory=list)
    blocks: dict[str, str] = field(default_factory=dict)
    prompt: str | None = None
    state: dict[str, Any] = field(default_factory=dict)
    user_blocks: dict[str, str] = field(default_factory=dict)
    user_state: dict[str, Any] = field(default_factory=dict)
    app_blocks: dict[str, str] = field(default_factory=dict)
    app_state: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StoredArtifact:
    """One version of a stored file (an ADK artifact): who it belongs to (``session_id``
    ``None``: the user's, shared by their sessions), its name and version (0, 1, ...), its
    content (``bytes``, or ``str`` for text; ``None`` in listings, which do not read it),
    ``part`` (a JSON object: how the file was given, without its content), its MIME type, its
    metadata and its creation time (seconds since the epoch, as given).

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> saved = store.put_artifact("app", "ana", None, "notes.txt", "hello")
    >>> saved.version, saved.content, saved.session_id
    (0, 'hello', None)
    """

    user_id: str
    session_id: str | None
    filename: str
    version: int
    content: bytes | str | None
    part: dict[str, Any] = field(default_factory=dict)
    mime_type: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    created: float = 0.0


@dataclass(frozen=True)
class StoredKey:
    """An HTTP API key row verbatim, its hash included: what ``Store.dump_app(keys=True)``
    reads and ``Store.load_app`` writes back (``threadline copy`` moves keys this way; a key
    itself is never stored). ``revoked_at`` is ``None`` for a live key.

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> _ = store.add_api_key("k1", "travel", "ana", "ab" * 32)
    >>> key = store.dump_app("travel", keys=True).keys[0]
    >>> key.id, key.user_id, key.key_hash == "ab" * 32, key.revoked_at
    ('k1', 'ana', True, None)
    """

    id: str
    app: str
    user_id: str | None
    key_hash: str
    created_at: datetime
    revoked_at: datetime | None = None


@dataclass(frozen=True)
class AppDump:
    """What an app holds outside its sessions, verbatim: what ``Store.dump_app`` reads and
    ``Store.load_app`` writes. ``profile`` is its stored profile (``None`` without one);
    ``blocks``/``state`` are the app-scoped blocks and ``app:`` state;
    ``user_blocks``/``user_state`` map each user id (sessions or not) to that user's blocks
    and ``user:`` state; ``entries`` maps each keyed-entry label to its entries (ordered by
    key); ``keys`` the app's API keys, or ``None`` when they were not read (``dump_app(app)``
    leaves them out unless ``keys=True``: keys never leave by accident); ``artifacts`` every
    version of every stored file (ADK artifacts) of the app, content included.

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> store.set_block("travel", "user", "ana", "profile", "Lives in Porto.")
    >>> store.put_entry("travel", "docs", "faq", "Ask us anything.")
    >>> dump = store.dump_app("travel")
    >>> dump.user_blocks, [e.key for e in dump.entries["docs"]], dump.keys
    ({'ana': {'profile': 'Lives in Porto.'}}, ['faq'], None)
    """

    blocks: dict[str, str] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    user_blocks: dict[str, dict[str, str]] = field(default_factory=dict)
    user_state: dict[str, dict[str, Any]] = field(default_factory=dict)
    entries: dict[str, list[Entry]] = field(default_factory=dict)
    keys: list[StoredKey] | None = None
    profile: StoredProfile | None = None
    artifacts: list[StoredArtifact] = field(default_factory=list)
