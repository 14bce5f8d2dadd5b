"""The storage contract, part four: a whole session, and what an app holds outside its
sessions, read and written verbatim (backups, ``threadline export`` / ``threadline import``,
``threadline copy`` between backends)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from threadline.store._contract.values import AppDump, SessionDump
from threadline.types import SessionInfo


@runtime_checkable
class TransferContract(Protocol):
    """Dump one session with everything hanging off it, or an app's own data; load such a
    dump in one transaction."""

    def dump_session(self, app: str, session_id: str) -> SessionDump | None:
        """Everything stored for the session (``None`` if it does not exist), in one read:
        the registry row, the head, every message of the tree with its ``seq``, parent and
        state-undo record (attachments put back inline), the overlays, the session's blocks,
        prompt and state, and the ``user:``/``app:`` state and user/app blocks it sees.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msgs = [{"id": f"m{i}", "role": "user", "parts": []} for i in (1, 2)]
        >>> _ = store.append_messages("default", "s1", msgs, state_delta=None)
        >>> dump = store.dump_session("default", "s1")
        >>> [(m.message["id"], m.parent_id) for m in dump.messages]
        [('m1', None), ('m2', 'm1')]
        >>> store.dump_session("default", "nope") is None
        True
        """

    def load_session(self, app: str, dump: SessionDump, *, replace: bool = False) -> SessionInfo:
        """Write a dump into ``app`` as session ``dump.info.id``, in one transaction:
        registry row (owner, name, usage, metadata, ``created_at``/``updated_at`` as given),
        messages with their ids, parents, ``seq`` and undo records, head, overlays (ids and
        times kept), blocks, prompt and state. The session's own rows are written verbatim;
        the shared ``user:``/``app:`` state and user/app blocks of the dump are upserted
        (other keys of that user or app are left alone). Messages go out of row under the
        ``"attach"`` policy whatever the store's own policy, so what was stored fits again.

        ``SessionExistsError`` if the session exists, unless ``replace=True`` (then it is
        deleted first, in the same transaction). ``InvalidArgumentError`` for an
        inconsistent dump (a parent after its child, an unknown head or overlay end...: the
        rules of ``threadline.store.check_dump``), raised before anything is written.

        >>> import threadline
        >>> source, target = threadline.connect(":memory:"), threadline.connect(":memory:")
        >>> _ = source.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
        >>> target.load_session("default", source.dump_session("default", "s1")).message_count
        1
        >>> target.get_path_ids("default", "s1")
        ['m1']
        """

    def load_sessions(
        self, items: Sequence[tuple[str, SessionDump]], *, replace: bool = False
    ) -> list[SessionInfo]:
        """Write several ``(app, dump)`` pairs as ``load_session`` does each, all in ONE
        transaction: every dump is checked first, and if any is inconsistent, exists
        (without ``replace=True``) or fails while writing, nothing at all is written.
        Returns the loaded sessions in the order given. ``InvalidArgumentError`` when one
        ``(app, session id)`` appears twice. What ``threadline.export.import_sessions`` uses.

        >>> import threadline
        >>> source, target = threadline.connect(":memory:"), threadline.connect(":memory:")
        >>> for sid in ("s1", "s2"):
        ...     _ = source.append_messages("a", sid, [{"id": "m1", "role": "user", "parts": []}])
        >>> dumps = [("a", source.dump_session("a", sid)) for sid in ("s1", "s2")]
        >>> [info.id for info in target.load_sessions(dumps)]
        ['s1', 's2']
        >>> target.load_sessions(dumps)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        threadline.errors.SessionExistsError: session 's1' already exists in app 'a'
        """

    def list_app_names(self) -> list[str]:
        """Every app the store holds anything for — sessions, blocks, state, keyed entries,
        API keys — sorted (``list_apps`` counts only apps with sessions).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.put_entry("docs-only", "docs", "faq", "Ask us anything.")
        >>> _ = store.append_messages("travel", "s1", [{"id": "m1", "role": "user", "parts": []}])
        >>> store.list_app_names(), store.list_apps()
        (['docs-only', 'travel'], {'travel': 1})
        """

    def list_entry_labels(self, app: str) -> list[str]:
        """The labels of ``app`` that hold keyed entries, sorted.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.put_entry("default", "skills", "tea", "Brew it.")
        >>> store.put_entry("default", "docs", "faq", "Ask us anything.")
        >>> store.list_entry_labels("default"), store.list_entry_labels("other")
        (['docs', 'skills'], [])
        """

    def dump_app(self, app: str, *, keys: bool = False) -> AppDump:
        """What ``app`` holds outside its sessions, in one read: its stored profile, its
        app-scoped blocks and ``app:`` state, every user's blocks and ``user:`` state (users
        without sessions too), its keyed entries by label, and with ``keys=True`` its API
        keys' rows (hashes included; never otherwise).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.update_state("travel", "s1", "ana", {"app:season": "fall", "user:home": "Porto"})
        >>> dump = store.dump_app("travel")
        >>> dump.state, dump.user_state
        ({'app:season': 'fall'}, {'ana': {'user:home': 'Porto'}})
        """

    def load_app(self, app: str, dump: AppDump, *, replace: bool = False) -> None:
        """Write an ``AppDump`` into ``app`` in one transaction. Without ``replace`` its
        blocks, state and entries are upserted (other keys of the app are kept), its keys
        (when ``dump.keys`` is not ``None``) added — a key id or hash the store already holds
        with other values raises ``InvalidArgumentError``, the same row is skipped — and its
        profile stored verbatim (version and time kept) unless the app has another one
        (``InvalidArgumentError``). With ``replace=True`` the app's profile, blocks, state
        and entries (and its keys, when the dump carries keys) are deleted first, so the app
        ends up holding exactly the dump.
        Sessions are untouched (``load_sessions`` writes them).

        >>> import threadline
        >>> source, target = threadline.connect(":memory:"), threadline.connect(":memory:")
        >>> source.set_block("travel", "app", "", "policy", "Be brief.")
        >>> target.set_block("travel", "app", "", "old", "Gone after a replace.")
        >>> target.load_app("travel", source.dump_app("travel"), replace=True)
        >>> target.dump_app("travel").blocks
        {'policy': 'Be brief.'}
        """
