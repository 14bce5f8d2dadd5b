"""The memory edits of one agent run, held back until the run commits (``threadline.Runner``).

A run's tools write through :class:`RunEdits` instead of the session: each block or entry
write is checked as the session would check it, answered, and recorded. Tools reading a block
during the run see the run's own edits. At the end, :meth:`RunEdits.replay_stored` replays the
edits of store-backed blocks in order inside the run's transaction (an ``append`` re-reads the
block there, so edits other writers committed meanwhile come first), and
:meth:`RunEdits.replay_custom` those of custom providers after the commit, best-effort.

>>> import threadline
>>> session = threadline.Session.create(":memory:").with_context("memory")
>>> edits = RunEdits(session)
>>> _ = edits.append_context_block("memory", "likes tea")
>>> edits.get_context_blocks()[0].content, session.get_context_block("memory").content
('likes tea', '')
>>> session.store.transaction(edits.replay_stored)
>>> session.get_context_block("memory").content
'likes tea'
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, NamedTuple

from threadline._session_state import skill_name
from threadline.context.blocks import appended
from threadline.context.providers import (
    StoreContextProvider,
    StoreSearchProvider,
    StoreSkillProvider,
)
from threadline.store._lazy import LazyStore
from threadline.tokens import estimate_tokens
from threadline.types import ContextBlock

if TYPE_CHECKING:
    from threadline.session import Session

__all__ = ["RunEdits"]

logger = logging.getLogger("threadline.runner")

# Providers whose writes go to the store they were given (exact types: a subclass may not).
_STORE_PROVIDERS = (StoreContextProvider, StoreSearchProvider, StoreSkillProvider)


class _Edit(NamedTuple):
    """One recorded write: ``kind`` is replace, append, entry or unload."""

    kind: str
    label: str
    content: str
    title: str | None = None
    description: str | None = None
    stored: bool = True  # whether it goes to the run's store (else to a custom provider)


def _opened(store: Any) -> Any:
    return store.open() if isinstance(store, LazyStore) else store


class RunEdits:
    """A :class:`~threadline.tools.ToolHost` over ``session`` that records writes instead of
    making them (module docstring).

    >>> import threadline
    >>> RunEdits(threadline.Session.create(":memory:")).edits
    []
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        self.edits: list[_Edit] = []
        self._text: dict[str, str] = {}  # label -> the block's content after this run's edits
        self._entries: dict[tuple[str, str], str] = {}  # (label, key) -> content written

    # -- what the tools read ----------------------------------------------------------------------
    def get_context_blocks(self) -> list[ContextBlock]:
        blocks = self.session.get_context_blocks()
        return [self._seen(block) for block in blocks]

    def _seen(self, block: ContextBlock) -> ContextBlock:
        content = self._text.get(block.label)
        if content is None:
            return block
        tokens = estimate_tokens(content) if content else 0
        return dataclasses.replace(block, content=content, tokens=tokens)

    @property
    def loaded_skills(self) -> set[str]:
        return self.session.loaded_skills

    def load_context_entry(self, label: str, key: str) -> str | None:
        written = self._entries.get((label, key))
        if written is not None and self.session._blocks.kind(label) == "skill":
            return written
        return self.session.load_context_entry(label, key)

    def search_context_block(self, label: str, query: str) -> str | None:
        found = self.session.search_context_block(label, query)  # checks the label's kind
        words = [w.casefold() for w in re.findall(r"\w+", query)]
        own = [
            f"[{key}]\n{content}"
            for (entry_label, key), content in self._entries.items()
            if entry_label == label and any(w in content.casefold() for w in words)
        ]
        return "\n\n".join([*own, found] if found else own) or None

    # -- what the tools write ---------------------------------------------------------------------
    def replace_context_block(self, label: str, content: str) -> ContextBlock:
        block = self.session._blocks.preview(label, content)
        return self._record(_Edit("replace", label, content, stored=self._stored(label)), block)

    def append_context_block(self, label: str, content: str) -> ContextBlock:
        current = self._text.get(label)
        if current is None:
            block = self.session.get_context_block(label)
            current = block.content if block is not None else ""
        preview = self.session._blocks.preview(label, appended(current, content))
        return self._record(_Edit("append", label, content, stored=self._stored(label)), preview)

    def _record(self, edit: _Edit, block: ContextBlock) -> ContextBlock:
        self.edits.append(edit)
        self._text[edit.label] = block.content
        return block

    def write_context_entry(
        self, label: str, content: str, *, title: str | None = None, description: str | None = None
    ) -> str:
        key = self.session._blocks.preview_entry(label, content, title=title)
        self.edits.append(_Edit("entry", label, content, title, description, self._stored(label)))
        self._entries[(label, key)] = content
        return key

    def unload_skill(self, label: str, key: str) -> bool:
        loaded = skill_name(label, key) in self.session.loaded_skills
        self.edits.append(_Edit("unload", label, key, stored=self.session.store is not None))
        return loaded

    def _stored(self, label: str) -> bool:
        """Whether the block keeps its data in the session's store (the run's transaction)."""
        provider = self.session._blocks.provider(label)
        store = self.session.store
        return (
            store is not None
            and type(provider) in _STORE_PROVIDERS
            and _opened(provider.store) is _opened(store)
        )

    # -- the commit --------------------------------------------------------------------------------
    def commit_lock(self) -> AbstractContextManager[Any]:
        """What the run's commit holds around its transaction: the session's blocks lock when
        edits are replayed in it (``ContextBlocks.lock``), else nothing.

        >>> import threadline
        >>> with RunEdits(threadline.Session.create(":memory:")).commit_lock():
        ...     pass
        """
        if any(edit.stored for edit in self.edits):
            return self.session._blocks.lock
        return contextlib.nullcontext()

    def replay_stored(self) -> None:
        """Make the store-backed edits, in order (call it inside the run's transaction)."""
        for edit in self.edits:
            if edit.stored:
                self._apply(edit)

    def replay_custom(self) -> None:
        """Make the edits of custom providers, in order, after the commit: best-effort, a
        failing one is logged (logger ``threadline.runner``) and the rest still made."""
        for edit in self.edits:
            if edit.stored:
                continue
            try:
                self._apply(edit)
            except Exception:
                logger.warning(
                    "a run's %s of block %r could not be written", edit.kind, edit.label,
                    exc_info=True,
                )  # fmt: skip

    def rolled_back(self) -> None:
        """The commit failed: forget what the session cached from its writes."""
        self.session._blocks.forget()
        self.session._loaded = None

    def _apply(self, edit: _Edit) -> None:
        blocks, session = self.session._blocks, self.session
        if edit.kind == "replace":
            blocks.replace(edit.label, edit.content)
        elif edit.kind == "append":
            blocks.append(edit.label, edit.content, reread=True)
        elif edit.kind == "entry":
            session.write_context_entry(
                edit.label, edit.content, title=edit.title, description=edit.description
            )
        else:
            session.unload_skill(edit.label, edit.content)
