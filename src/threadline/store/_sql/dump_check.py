"""The consistency rules of a :class:`SessionDump`, checked without touching a store.

``Store.load_session`` runs them before writing, and ``threadline.export.import_sessions``
runs them on every record before the first write, so an import is refused whole.
"""

from __future__ import annotations

from threadline._state import scope_of
from threadline._validate import check_id, check_json, check_text
from threadline.errors import InvalidArgumentError
from threadline.store._contract.values import AppDump, SessionDump
from threadline.store._sql.rows import state_owner

MAX_SEQ = 2**53
"""The highest ``seq``/``last_seq`` a dump may carry: every later append adds one, so a
store's 64-bit counter never overflows, and a JavaScript client reads it exactly."""


def check_dump(dump: SessionDump) -> None:
    """Raise ``InvalidArgumentError`` unless ``dump`` is a consistent session: every parent
    before its child, unique message ids, increasing ``seq`` (``last_seq`` at least the
    highest, at most :data:`MAX_SEQ`), head, undo records and overlay ends naming messages of
    the dump, unique overlay ids, every
    state key stored under the owner its scope names, and metadata and state values that
    the library's own writes would take (JSON, nested at most ``MAX_DEPTH`` levels: a
    deeper value would otherwise fail with ``RecursionError`` while being written).

    >>> import dataclasses, threadline
    >>> store = threadline.connect(":memory:")
    >>> _ = store.append_messages("app", "s1", [{"id": "m1", "role": "user", "parts": []}])
    >>> dump = store.dump_session("app", "s1")
    >>> check_dump(dump)
    >>> check_dump(dataclasses.replace(dump, head_id="ghost"))
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: head 'ghost' is not a message of the session
    """
    if not isinstance(dump, SessionDump):
        raise InvalidArgumentError(f"dump must be a SessionDump, got {type(dump).__name__}")
    seen: set[str] = set()
    last_seq = 0
    for node in dump.messages:
        message_id, parent_id = node.message["id"], node.parent_id
        if parent_id is not None and parent_id not in seen:
            raise InvalidArgumentError(
                f"message {message_id!r}: parent {parent_id!r} must come before it"
            )
        if message_id in seen or node.seq <= last_seq:
            raise InvalidArgumentError(
                f"message {message_id!r}: ids must be unique and seq increasing"
            )
        seen.add(message_id)
        last_seq = node.seq
    if dump.head_id is not None and dump.head_id not in seen:
        raise InvalidArgumentError(f"head {dump.head_id!r} is not a message of the session")
    if set(dump.state_undo) - seen:
        raise InvalidArgumentError("state_undo names a message that is not in the dump")
    if dump.last_seq < last_seq:
        raise InvalidArgumentError("last_seq is lower than a message's seq")
    if dump.last_seq > MAX_SEQ:
        raise InvalidArgumentError(f"last_seq is over {MAX_SEQ} (2**53)")
    overlays: set[str] = set()
    for overlay in dump.compactions:
        if overlay.from_message_id not in seen or overlay.to_message_id not in seen:
            raise InvalidArgumentError(f"overlay {overlay.id!r} names unknown messages")
        if overlay.id in overlays:
            raise InvalidArgumentError(f"overlay id {overlay.id!r} appears twice")
        overlays.add(overlay.id)
    session_id, user_id = dump.info.id, dump.info.user_id
    check_json("session metadata", dump.info.metadata)
    if user_id is None and (dump.user_state or dump.user_blocks):
        raise InvalidArgumentError("user state or blocks in a dump of a session without user")
    scopes = (
        ("session", session_id, dump.state),
        ("user", user_id or "", dump.user_state),
        ("app", "", dump.app_state),
    )
    for owner, owner_id, state in scopes:
        for key in state:
            if scope_of(key) == "internal":
                raise InvalidArgumentError(f"state key {key!r} is reserved")
            if state_owner(key, session_id, user_id) != (owner, owner_id):
                raise InvalidArgumentError(f"state key {key!r} is not {owner}-scoped")
            check_json(f"state value of {key!r}", state[key])


def check_app_dump(dump: AppDump) -> None:
    """Raise ``InvalidArgumentError`` unless ``dump`` is an app's data the library's own
    writes could have made: ``app:`` state under the app, ``user:`` state under valid user
    ids, JSON values, valid labels and entry keys (each once per label), API keys' ids once.

    >>> check_app_dump(AppDump(state={"app:season": "spring"}))
    >>> check_app_dump(AppDump(user_state={"ana": {"app:x": 1}}))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: user_state['ana']: state key 'app:x' is not ...
    """
    if not isinstance(dump, AppDump):
        raise InvalidArgumentError(f"dump must be an AppDump, got {type(dump).__name__}")
    scoped = [("state", "app", dump.state)] + [
        (f"user_state[{user_id!r}]", "user", state) for user_id, state in dump.user_state.items()
    ]
    for what, scope, state in scoped:
        for key, value in state.items():
            if scope_of(key) != scope:
                raise InvalidArgumentError(f"{what}: state key {key!r} is not {scope}-scoped")
            check_json(f"{what}[{key!r}]", value)
    for user_id in (*dump.user_blocks, *dump.user_state):
        check_id("user id", user_id)
    scoped_blocks = [("blocks", dump.blocks)] + [
        (f"user_blocks[{user_id!r}]", blocks) for user_id, blocks in dump.user_blocks.items()
    ]
    for what, blocks in scoped_blocks:
        for label, content in blocks.items():
            check_id(f"{what} label", label)
            check_text(f"{what}[{label!r}]", content)
    for label, entries in dump.entries.items():
        check_id("entry label", label)
        keys = [check_id(f"entries[{label!r}] key", entry.key) for entry in entries]
        if len(set(keys)) != len(keys):
            raise InvalidArgumentError(f"entries[{label!r}]: a key appears twice")
    profile = dump.profile
    if profile is not None:
        version = profile.version
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise InvalidArgumentError(f"profile.version must be >= 1, got {version!r}")
        check_json("profile.document", profile.document)
    for field in ("id", "key_hash"):
        values = [getattr(key, field) for key in dump.keys or ()]
        if len(set(values)) != len(values):
            raise InvalidArgumentError(f"keys: an API key {field} appears twice")
