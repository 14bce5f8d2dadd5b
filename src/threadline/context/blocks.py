"""Per-session management of context blocks: providers, caching and the write rules.

:class:`ContextBlocks` is what a ``Session`` delegates its block methods to. Providers are
resolved lazily: the first read of any block wires auto providers, calls ``init(label)`` once
and reads ``get()``; later reads come from the cache until :meth:`ContextBlocks.reload`.
Internal names call the provider wired for a block its *source*, apart from the message
stores (``SessionProvider``) that the public word "provider" also names.

>>> from threadline.context.providers import StaticContext
>>> blocks = ContextBlocks([ContextConfig("soul", provider=StaticContext("Be kind."))])
>>> blocks.get("soul").content
'Be kind.'
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from threadline.context.keys import entry_key
from threadline.context.kinds import (
    ProviderKind,
    call_provider,
    has_method,
    is_keyed_kind,
    provider_kind,
)
from threadline.context.providers import SCOPES, StoreContextProvider, as_provider
from threadline.context.render import render_system_prompt
from threadline.errors import (
    BlockNotFoundError,
    BlockTooLargeError,
    InvalidArgumentError,
    ReadOnlyBlockError,
    ThreadlineError,
)
from threadline.tokens import estimate_tokens
from threadline.types import ContextBlock, Scope

if TYPE_CHECKING:
    from threadline.store.base import Store

__all__ = ["ContextBlocks", "ContextConfig", "appended"]


@dataclass(frozen=True)
class ContextConfig:
    """How one context block is set up (what ``with_context`` records).

    Without ``provider`` a store-backed writable block is wired, keyed by ``scope``
    (``"session"``, ``"user"`` or ``"app"``). ``provider`` may be any duck-typed provider,
    a string or a zero-argument callable.

    >>> ContextConfig("memory", description="Learned facts", max_tokens=1100).scope
    'session'
    """

    label: str
    description: str | None = None
    max_tokens: int | None = None
    provider: Any = None
    scope: Scope = "session"
    initial: str | None = None  # a store-backed block's text until first written

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not self.label.strip():
            raise InvalidArgumentError("a context block label must be a non-empty string")
        if self.description is not None and not isinstance(self.description, str):
            raise InvalidArgumentError("description must be a string or None")
        max_tokens = self.max_tokens
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            raise InvalidArgumentError(f"max_tokens must be a positive integer; got {max_tokens!r}")
        if self.scope not in SCOPES:
            raise InvalidArgumentError(
                f"scope must be one of {', '.join(SCOPES)}; got {self.scope!r}"
            )
        if self.initial is not None and not isinstance(self.initial, str):
            raise InvalidArgumentError("initial must be a string or None")


@dataclass
class _Slot:
    """A registered block and, once resolved, its source (the provider wired for it) and
    cached value."""

    config: ContextConfig
    source: Any = None
    kind: ProviderKind = "readonly"
    writable: bool = False
    block: ContextBlock | None = None


def _check_content(content: object) -> str:
    if not isinstance(content, str):
        raise InvalidArgumentError(f"content must be a string; got {type(content).__name__}")
    return content


def appended(existing: str, content: str) -> str:
    """``existing`` with ``content`` appended on a new line (none when ``existing`` is empty or
    ``content`` starts with one): what ``ContextBlocks.append`` stores.

    >>> appended("likes tea", "lives in Oslo"), appended("", "x"), appended("a", "\\nb")
    ('likes tea\\nlives in Oslo', 'x', 'a\\nb')
    """
    sep = "\n" if existing and not content.startswith("\n") else ""
    return existing + sep + content


def _optional_text(value: object, source: object, method: str) -> str | None:
    """A block source's result must be a string or None; anything else is its bug."""
    if value is None or isinstance(value, str):
        return value
    raise ThreadlineError(
        f"{type(source).__name__}.{method}() must return a string or None; "
        f"got {type(value).__name__}"
    )


class ContextBlocks:
    """The context blocks of one session object, in registration order.

    ``store``/``app_name``/``session_id``/``user_id`` are used to auto-wire
    :class:`~threadline.context.providers.StoreContextProvider` for configs without a provider;
    ``count_tokens`` measures block content (default: the heuristic ``estimate_tokens``).
    A provider with a ``for_session(app_name, session_id, user_id)`` method is replaced by what
    that returns, before its ``init``: one provider instance shared by many sessions (or apps)
    hands each session its own bound view, never another session's.
    Thread-safe: one lock guards resolution, the cache and writes.

    >>> blocks = ContextBlocks([ContextConfig("soul", provider="You are helpful.")])
    >>> print(blocks.render().splitlines()[1])
    SOUL [readonly]
    """

    def __init__(
        self,
        configs: Iterable[ContextConfig] = (),
        *,
        store: Store | None = None,
        app_name: str = "default",
        session_id: str = "default",
        user_id: str | None = None,
        count_tokens: Callable[[str], int] = estimate_tokens,
        generation: Callable[[], int | None] | None = None,
    ) -> None:
        self._store = store
        self._generation = generation  # the Session's bound generation, for session blocks
        self._app_name = app_name
        self._session_id = session_id
        self._user_id = user_id
        self._count = count_tokens
        self._slots: dict[str, _Slot] = {}
        self._lock = threading.RLock()
        for config in configs:
            self.add(config)

    # -- registration -------------------------------------------------------------------------
    def add(self, config: ContextConfig) -> None:
        """Register a block (resolved on first use); a duplicate label raises
        ``InvalidArgumentError`` (a ``ValueError``).

        >>> blocks = ContextBlocks()
        >>> blocks.add(ContextConfig("soul", provider="Be kind."))
        >>> blocks.add(ContextConfig("soul", provider="Be rude."))
        Traceback (most recent call last):
        threadline.errors.InvalidArgumentError: a context block labelled "soul" is already ...
        """
        with self._lock:
            if config.label in self._slots:
                raise InvalidArgumentError(
                    f'a context block labelled "{config.label}" is already registered'
                )
            self._slots[config.label] = _Slot(config)

    def remove(self, label: str) -> bool:
        """Unregister a block; ``False`` if no block had that label.

        >>> blocks = ContextBlocks([ContextConfig("soul", provider="Be kind.")])
        >>> blocks.remove("soul"), blocks.remove("soul"), blocks.labels
        (True, False, [])
        """
        with self._lock:
            return self._slots.pop(label, None) is not None

    @property
    def labels(self) -> list[str]:
        """Registered labels in registration order.

        >>> ContextBlocks([ContextConfig("soul", provider="Be kind."),
        ...                ContextConfig("user", provider="Ada")]).labels
        ['soul', 'user']
        """
        with self._lock:
            return list(self._slots)

    def __contains__(self, label: object) -> bool:
        return label in self._slots

    def __len__(self) -> int:
        return len(self._slots)

    # -- resolution and reads -------------------------------------------------------------------
    def _store_source(self, config: ContextConfig) -> StoreContextProvider:
        if self._store is None:
            raise ThreadlineError(
                f'context block "{config.label}" has no provider and this session has no '
                "threadline store (it uses a custom SessionProvider): pass provider=... "
                "to with_context"
            )
        return StoreContextProvider(
            self._store,
            app_name=self._app_name,
            scope=config.scope,
            session_id=self._session_id,
            user_id=self._user_id,
            label=config.label,
            generation=self._generation,
            initial=config.initial,
        )

    def _resolve(self, slot: _Slot) -> Any:
        """Wire the slot's source and call its ``init(label)`` — once per slot."""
        if slot.source is not None:
            return slot.source
        config = slot.config
        if config.provider is None:
            source: Any = self._store_source(config)
        else:
            source = as_provider(config.provider)
        if has_method(source, "for_session"):
            source = source.for_session(self._app_name, self._session_id, self._user_id)
        if has_method(source, "init"):
            call_provider(source, "init", config.label)
        slot.kind = provider_kind(source)
        slot.writable = has_method(source, "set")
        slot.source = source
        return source

    def _make_block(self, slot: _Slot, content: str) -> ContextBlock:
        config = slot.config
        return ContextBlock(
            label=config.label,
            description=config.description,
            content=content,
            tokens=self._count(content) if content else 0,
            max_tokens=config.max_tokens,
            writable=slot.writable,
            is_skill=slot.kind == "skill",
            is_searchable=slot.kind == "search",
            scope=config.scope,
        )

    def _read(self, slot: _Slot) -> ContextBlock:
        source = self._resolve(slot)
        content = _optional_text(call_provider(source, "get"), source, "get")
        # Stored values are never validated against max_tokens here: reading must not fail.
        slot.block = self._make_block(slot, content or "")
        return slot.block

    def _loaded(self, slot: _Slot) -> ContextBlock:
        return slot.block if slot.block is not None else self._read(slot)

    def get(self, label: str) -> ContextBlock | None:
        """The block as last read or written, or ``None`` for an unknown label.

        >>> blocks = ContextBlocks([ContextConfig("soul", provider="Be kind.")])
        >>> block = blocks.get("soul")
        >>> block.content, block.tokens, block.writable, blocks.get("nope")
        ('Be kind.', 3, False, None)
        """
        with self._lock:
            slot = self._slots.get(label)
            return self._loaded(slot) if slot is not None else None

    def all(self) -> list[ContextBlock]:
        """Every block, in registration order (loading any not read yet).

        >>> blocks = ContextBlocks([ContextConfig("soul", provider="Be kind."),
        ...                         ContextConfig("user", provider="Ada")])
        >>> [(b.label, b.content) for b in blocks.all()]
        [('soul', 'Be kind.'), ('user', 'Ada')]
        """
        with self._lock:
            return [self._loaded(slot) for slot in self._slots.values()]

    def reload(self) -> list[ContextBlock]:
        """Re-read every provider's ``get()`` (``init`` is not called again).

        >>> state = {"mood": "calm"}
        >>> blocks = ContextBlocks([ContextConfig("mood", provider=lambda: state["mood"])])
        >>> blocks.get("mood").content
        'calm'
        >>> state["mood"] = "sleepy"
        >>> blocks.get("mood").content, blocks.reload()[0].content  # cached, then re-read
        ('calm', 'sleepy')
        """
        with self._lock:
            return [self._read(slot) for slot in self._slots.values()]

    def kind(self, label: str) -> ProviderKind | None:
        """The provider kind of a block, or ``None`` for an unknown label.

        >>> import threadline
        >>> blocks = ContextBlocks([ContextConfig("soul", provider="Be kind."),
        ...                         ContextConfig("memory")], store=threadline.connect(":memory:"))
        >>> blocks.kind("soul"), blocks.kind("memory"), blocks.kind("nope")
        ('readonly', 'writable', None)
        """
        with self._lock:
            slot = self._slots.get(label)
            if slot is None:
                return None
            self._resolve(slot)
            return slot.kind

    def render(self) -> str:
        """The system prompt text of the current blocks.

        >>> blocks = ContextBlocks([ContextConfig("soul", provider="Be kind.")])
        >>> print(blocks.render())
        ══════════════════════════════════════════════
        SOUL [readonly]
        ══════════════════════════════════════════════
        Be kind.
        """
        return render_system_prompt(self.all())

    # -- writes -----------------------------------------------------------------------------------
    def _slot(self, label: str) -> _Slot:
        slot = self._slots.get(label)
        if slot is None:
            raise BlockNotFoundError(f'block "{label}" not found')
        self._resolve(slot)
        return slot

    def _check_size(self, slot: _Slot, content: str) -> None:
        limit = slot.config.max_tokens
        if limit is None:
            return
        tokens = self._count(content) if content else 0
        if tokens > limit:
            raise BlockTooLargeError(
                f"content of {tokens} tokens exceeds max_tokens ({limit}) of block "
                f'"{slot.config.label}"; shorten it or replace older content'
            )

    def _text_slot(self, label: str) -> _Slot:
        """The slot of a writable, non-keyed block (else the matching error)."""
        slot = self._slot(label)
        if is_keyed_kind(slot.kind):
            raise InvalidArgumentError(
                f'block "{label}" holds keyed entries ({slot.kind}); write an entry with a key '
                "(write_entry / set_context with metadata.title) instead"
            )
        if not slot.writable:
            raise ReadOnlyBlockError(f'block "{label}" is readonly')
        return slot

    def _store_text(self, slot: _Slot, content: str) -> ContextBlock:
        self._check_size(slot, content)  # before set(): an oversized write leaves no trace
        call_provider(slot.source, "set", content)
        slot.block = self._make_block(slot, content)
        return slot.block

    def replace(self, label: str, content: str) -> ContextBlock:
        """Replace a writable block's content (README: "Memory blocks, providers and tools").

        >>> import threadline
        >>> blocks = ContextBlocks([ContextConfig("memory", max_tokens=100)],
        ...                        store=threadline.connect(":memory:"))
        >>> blocks.replace("memory", "likes tea").content
        'likes tea'
        >>> blocks.replace("memory", "likes coffee").tokens
        3
        """
        content = _check_content(content)
        with self._lock:
            return self._store_text(self._text_slot(label), content)

    def append(self, label: str, content: str, *, reread: bool = False) -> ContextBlock:
        """Append to a writable block, on a new line unless the block is empty or ``content``
        starts with ``"\\n"``; the limit applies to the new full content. ``reread``: append
        to what the provider holds now, not to the cached content (a run's commit).

        >>> import threadline
        >>> blocks = ContextBlocks([ContextConfig("memory")], store=threadline.connect(":memory:"))
        >>> _ = blocks.append("memory", "likes tea")
        >>> blocks.append("memory", "lives in Oslo").content
        'likes tea\\nlives in Oslo'
        """
        content = _check_content(content)
        with self._lock:
            slot = self._text_slot(label)
            existing = (self._read(slot) if reread else self._loaded(slot)).content
            return self._store_text(slot, appended(existing, content))

    def preview(self, label: str, content: str) -> ContextBlock:
        """The block as ``replace(label, content)`` would leave it, checked the same way
        (writable, not keyed, within ``max_tokens``); nothing is written.

        >>> blocks = ContextBlocks([ContextConfig("memory", max_tokens=2)],
        ...                        store=__import__("threadline").connect(":memory:"))
        >>> blocks.preview("memory", "tea").content, blocks.get("memory").content
        ('tea', '')
        """
        content = _check_content(content)
        with self._lock:
            slot = self._text_slot(label)
            self._check_size(slot, content)
            return self._make_block(slot, content)

    def preview_entry(self, label: str, content: str, *, title: str | None = None) -> str:
        """The key ``write_entry`` would give this entry, checked the same way; nothing is
        written.

        >>> import threadline
        >>> from threadline.context.providers import StoreSkillProvider
        >>> skills = StoreSkillProvider(threadline.connect(":memory:"))
        >>> ContextBlocks([ContextConfig("skills", provider=skills)]).preview_entry(
        ...     "skills", "Talk like a pirate.", title="Pirate")
        'pirate'
        """
        content = _check_content(content)
        with self._lock:
            slot = self._keyed_slot(label)
            if not slot.writable:
                raise ReadOnlyBlockError(f'block "{label}" is readonly')
            self._check_size(slot, content)
            return entry_key(content, title)

    def provider(self, label: str) -> Any:
        """The block's provider (wired now if it was not yet), or ``None`` for no such block.

        >>> ContextBlocks([ContextConfig("soul", provider="Be kind.")]).provider("soul")
        StaticContext('Be kind.')
        """
        with self._lock:
            slot = self._slots.get(label)
            return self._resolve(slot) if slot is not None else None

    @property
    def lock(self) -> threading.RLock:
        """The lock of the cache and the writes. Code that writes blocks inside a store
        transaction takes it before opening the transaction — the order the blocks' own writes
        take the two in — or two threads could each wait for the other's.

        >>> with ContextBlocks().lock:
        ...     pass
        """
        return self._lock

    def forget(self) -> None:
        """Drop the cached contents: the next read asks the providers again (after writes
        that were rolled back).

        >>> blocks = ContextBlocks([ContextConfig("soul", provider="Be kind.")])
        >>> blocks.forget(); blocks.get("soul").content
        'Be kind.'
        """
        with self._lock:
            for slot in self._slots.values():
                slot.block = None

    def _keyed_slot(self, label: str, kind: ProviderKind | None = None) -> _Slot:
        slot = self._slot(label)
        matches = slot.kind == kind if kind else is_keyed_kind(slot.kind)
        if not matches:
            what = {"skill": "a skill block", "search": "searchable"}.get(kind or "", "keyed")
            raise InvalidArgumentError(f'block "{label}" is not {what}')
        return slot

    def write_entry(
        self,
        label: str,
        content: str,
        *,
        title: str | None = None,
        description: str | None = None,
    ) -> str:
        """Store one entry of a skill or search block and return its key.

        The key comes from ``title`` if given, else from ``content`` (``entry_key``); the same
        title updates the same entry. ``max_tokens`` limits the entry's content.

        >>> import threadline
        >>> from threadline.context.providers import StoreSkillProvider
        >>> skills = StoreSkillProvider(threadline.connect(":memory:"))
        >>> blocks = ContextBlocks([ContextConfig("skills", provider=skills)])
        >>> blocks.write_entry("skills", "Talk like a pirate.", title="Pirate",
        ...                    description="Pirate voice")
        'pirate'
        >>> blocks.get("skills").content
        '- pirate: Pirate voice'
        """
        content = _check_content(content)
        with self._lock:
            slot = self._keyed_slot(label)
            if not slot.writable:
                raise ReadOnlyBlockError(f'block "{label}" is readonly')
            self._check_size(slot, content)
            key = entry_key(content, title)
            if slot.kind == "skill" and description is not None:
                call_provider(slot.source, "set", key, content, description)
            else:
                call_provider(slot.source, "set", key, content)
            self._read(slot)  # the listing or summary changed
            return key

    def load(self, label: str, key: str) -> str | None:
        """A skill block's document ``key``, or ``None`` if it has none.

        >>> import threadline
        >>> from threadline.context.providers import StoreSkillProvider
        >>> skills = StoreSkillProvider(threadline.connect(":memory:"))
        >>> blocks = ContextBlocks([ContextConfig("skills", provider=skills)])
        >>> key = blocks.write_entry("skills", "Talk like a pirate.", title="Pirate")
        >>> blocks.load("skills", key), blocks.load("skills", "ninja")
        ('Talk like a pirate.', None)
        """
        with self._lock:
            slot = self._keyed_slot(label, "skill")
            source = slot.source
        return _optional_text(call_provider(source, "load", key), source, "load")

    def search(self, label: str, query: str) -> str | None:
        """Run a search block's ``search(query)``; ``None`` when it found nothing.

        >>> import threadline
        >>> from threadline.context.providers import StoreSearchProvider
        >>> notes = StoreSearchProvider(threadline.connect(":memory:"))
        >>> blocks = ContextBlocks([ContextConfig("notes", provider=notes)])
        >>> blocks.write_entry("notes", "The user drinks green tea.", title="tea")
        'tea'
        >>> print(blocks.search("notes", "green tea"))
        [tea]
        The user drinks green tea.
        >>> blocks.search("notes", "coffee") is None
        True
        """
        with self._lock:
            slot = self._keyed_slot(label, "search")
            source = slot.source
        return _optional_text(call_provider(source, "search", query), source, "search")
