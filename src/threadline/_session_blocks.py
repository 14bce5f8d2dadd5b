"""The blocks layer of :class:`~threadline.Session`: memory blocks, their entries, the tools
derived from them and the frozen system prompt (rendered once, optionally cached).

>>> from threadline import Session
>>> s = Session.create(":memory:").with_context("memory")
>>> _ = s.replace_context_block("memory", "Likes tea.")
>>> "Likes tea." in s.freeze_system_prompt()
True
"""

from __future__ import annotations

from typing import Any

from threadline._session_state import SessionState, skill_name
from threadline.context import ContextBlocks, ContextConfig
from threadline.tools import Toolset, build_context_tools
from threadline.types import ContextBlock, Scope

__all__ = ["SessionBlocks"]


class SessionBlocks(SessionState):
    """Memory blocks and the system prompt of a session (a layer of ``threadline.Session``).

    >>> from threadline import Session
    >>> Session.create(":memory:").get_context_blocks()
    []
    """

    # -- memory blocks and the system prompt -------------------------------------------------------
    @property
    def _blocks(self) -> ContextBlocks:
        self._used = True
        if self._blocks_obj is None:
            self._blocks_obj = ContextBlocks(
                self._settings.context,
                store=self.store,
                app_name=self._app_name,
                session_id=self._session_id,
                user_id=self._user_id,
                generation=self._generation,
            )
        return self._blocks_obj

    def _register(self, config: ContextConfig) -> None:
        self._settings.add_context(config)
        if self._blocks_obj is not None:
            self._blocks_obj.add(config)

    def _current_prompt(self) -> str:
        """The frozen prompt if there is one (memory or cache), else a fresh render (not saved)."""
        if self._frozen is not None:
            return self._frozen
        if self._settings.cached_prompt:
            stored = self._load_cached_prompt()
            if stored is not None:
                return stored
        return self._blocks.render()

    def get_context_block(self, label: str) -> ContextBlock | None:
        """One memory block (providers are loaded on first use), or ``None``.

        >>> from threadline import Session
        >>> s = Session.create(":memory:").with_context("memory", description="Learned facts")
        >>> s.get_context_block("memory").description, s.get_context_block("nope")
        ('Learned facts', None)
        """
        return self._blocks.get(label)

    def get_context_blocks(self) -> list[ContextBlock]:
        """All memory blocks in registration order.

        >>> from threadline import Session
        >>> s = Session.create(":memory:").with_context("soul", provider="Be brief.")
        >>> s = s.with_context("memory")
        >>> [(b.label, b.writable) for b in s.get_context_blocks()]
        [('soul', False), ('memory', True)]
        """
        return self._blocks.all()

    def replace_context_block(self, label: str, content: str) -> ContextBlock:
        """Replace a writable block's content (limits checked; the frozen prompt is unchanged).

        >>> from threadline import Session
        >>> s = Session.create(":memory:").with_context("memory", max_tokens=100)
        >>> s.replace_context_block("memory", "Likes tea.").content
        'Likes tea.'
        """
        return self._blocks.replace(label, content)

    def append_context_block(self, label: str, content: str) -> ContextBlock:
        """Append to a writable block (joined with a newline unless empty / already starting so).

        >>> from threadline import Session
        >>> s = Session.create(":memory:").with_context("memory")
        >>> _ = s.append_context_block("memory", "Likes tea.")
        >>> print(s.append_context_block("memory", "Lives in Porto.").content)
        Likes tea.
        Lives in Porto.
        """
        return self._blocks.append(label, content)

    def add_context(
        self,
        label: str,
        *,
        description: str | None = None,
        max_tokens: int | None = None,
        provider: Any = None,
        scope: Scope = "session",
    ) -> ContextBlock | None:
        """Add a block at run time, with ``with_context``'s options (the frozen prompt is
        unchanged until refreshed).

        >>> from threadline import Session
        >>> s = Session.create(":memory:")
        >>> block = s.add_context("notes", description="Scratch space")
        >>> block.label, block.writable
        ('notes', True)
        """
        self._register(ContextConfig(label, description, max_tokens, provider, scope))
        return self._blocks.get(label)

    def remove_context(self, label: str) -> bool:
        """Remove a block at run time; ``False`` if no such block.

        >>> from threadline import Session
        >>> s = Session.create(":memory:").with_context("memory")
        >>> s.remove_context("memory"), s.remove_context("memory")
        (True, False)
        """
        removed = self._settings.remove_context(label)
        if self._blocks_obj is not None:
            self._blocks_obj.remove(label)
        return removed

    def freeze_system_prompt(self) -> str:
        """Render the system prompt once; later calls (and, if cached, new processes) reuse it.

        >>> from threadline import Session
        >>> s = Session.create(":memory:").with_context("soul", provider="You are concise.")
        >>> s = s.with_context("memory")
        >>> prompt = s.freeze_system_prompt()
        >>> _ = s.replace_context_block("memory", "Likes tea.")
        >>> "You are concise." in prompt, s.freeze_system_prompt() == prompt
        (True, True)
        """
        if self._frozen is not None:
            return self._frozen
        if self._settings.cached_prompt:
            stored = self._load_cached_prompt()
            if stored is not None:
                self._frozen = stored
                return stored
        self._frozen = self._blocks.render()
        if self._settings.cached_prompt:
            self._save_cached_prompt(self._frozen)
        return self._frozen

    def refresh_system_prompt(self) -> str:
        """Re-read every provider, re-render, persist (if cached) and return the new prompt.

        >>> from threadline import Session
        >>> s = Session.create(":memory:").with_context("memory")
        >>> _ = s.freeze_system_prompt()
        >>> _ = s.replace_context_block("memory", "Likes tea.")
        >>> "Likes tea." in s.refresh_system_prompt()
        True
        """
        self._blocks.reload()
        self._frozen = self._blocks.render()
        if self._settings.cached_prompt:
            self._save_cached_prompt(self._frozen)
        return self._frozen

    def _load_cached_prompt(self) -> str | None:
        if self._settings.prompt_cache is not None:
            value = self._settings.prompt_cache.get()
            return value if isinstance(value, str) and value != "" else None
        return self._store_handle("with_cached_prompt()").get_prompt()

    def _save_cached_prompt(self, prompt: str) -> None:
        if self._settings.prompt_cache is not None:
            self._settings.prompt_cache.set(prompt)
            return
        self._store_handle("with_cached_prompt()").set_prompt(prompt)

    # -- tools and skills --------------------------------------------------------------------------
    def tools(self) -> Toolset:
        """Tools the model can call to edit its memory, derived from the block kinds.

        >>> from threadline import Session
        >>> s = Session.create(":memory:").with_context("memory")
        >>> tools = s.tools()
        >>> list(tools)
        ['set_context']
        >>> _ = tools.execute("set_context", {"label": "memory", "content": "Likes tea."})
        >>> s.get_context_block("memory").content
        'Likes tea.'
        """
        return build_context_tools(self)

    def write_context_entry(
        self,
        label: str,
        content: str,
        *,
        title: str | None = None,
        description: str | None = None,
    ) -> str:
        """Write a keyed entry into a skill or search block; returns its key.

        >>> from threadline import Session
        >>> import threadline
        >>> s = Session.create(":memory:")
        >>> _ = s.with_context("notes", provider=threadline.StoreSearchProvider(s.store))
        >>> s.write_context_entry("notes", "The user drinks green tea.", title="tea")
        'tea'
        """
        return self._blocks.write_entry(label, content, title=title, description=description)

    def load_context_entry(self, label: str, key: str) -> str | None:
        """Load a skill document and remember it as loaded (``"label:key"``).

        >>> from threadline import Session
        >>> import threadline
        >>> s = Session.create(":memory:")
        >>> _ = s.with_context("skills", provider=threadline.StoreSkillProvider(s.store))
        >>> _ = s.write_context_entry("skills", "Talk like a pirate.", title="pirate")
        >>> s.load_context_entry("skills", "pirate"), s.loaded_skills
        ('Talk like a pirate.', {'skills:pirate'})
        """
        content = self._blocks.load(label, key)
        if content is not None:
            self._loaded_set().add(skill_name(label, key))
        return content

    def search_context_block(self, label: str, query: str) -> str | None:
        """Search a searchable block; ``None`` when nothing is found.

        >>> from threadline import Session
        >>> import threadline
        >>> s = Session.create(":memory:")
        >>> _ = s.with_context("notes", provider=threadline.StoreSearchProvider(s.store))
        >>> _ = s.write_context_entry("notes", "The user drinks green tea.", title="tea")
        >>> print(s.search_context_block("notes", "tea"))
        [tea]
        The user drinks green tea.
        >>> s.search_context_block("notes", "coffee") is None
        True
        """
        return self._blocks.search(label, query)
