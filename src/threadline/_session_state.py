"""The skills and state layer of :class:`~threadline.Session`: which skills are loaded in the
history, and the session's merged state (``app:``, ``user:``, session and ``temp:`` keys).

>>> from threadline import Session
>>> s = Session.create(":memory:")
>>> s.update_state({"topic": "tea"})
>>> dict(s.state), s.loaded_skills
({'topic': 'tea'}, set())
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from threadline._session_core import SessionCore
from threadline._state import StateView, merge_state, scope_of, split_delta, validate_delta
from threadline.messages import mark_skill_unloaded, skill_loads_of
from threadline.types import Message

__all__ = ["SessionState", "skill_name"]


class SessionState(SessionCore):
    """Loaded skills and state of a session (a layer of ``threadline.Session``).

    >>> from threadline import Session
    >>> Session.create(":memory:").get_state("missing", "none")
    'none'
    """

    @property
    def loaded_skills(self) -> set[str]:
        """Skills currently loaded in history, as ``"label:key"`` (rebuilt from history).

        >>> from threadline import Session
        >>> import threadline
        >>> s = Session.create(":memory:")
        >>> _ = s.with_context("skills", provider=threadline.StoreSkillProvider(s.store))
        >>> _ = s.write_context_entry("skills", "Talk like a pirate.", title="pirate")
        >>> _ = s.load_context_entry("skills", "pirate")
        >>> s.loaded_skills
        {'skills:pirate'}
        """
        return set(self._loaded_set())

    def _loaded_set(self) -> set[str]:
        if self._loaded is None:
            self._loaded = {skill_name(s.label, s.key) for s in self._backend.get_skill_loads()}
        return self._loaded

    def _note_skill_loads(self, stored: Sequence[Message]) -> None:
        """Keep a built ``loaded_skills`` set in step with ``load_context`` results appended."""
        if self._loaded is not None:
            for message in stored:
                self._loaded.update(skill_name(lbl, k) for lbl, k, _ in skill_loads_of(message))

    def unload_skill(self, label: str, key: str) -> bool:
        """Rewrite the stored ``load_context`` result to ``[skill unloaded: <key>]``.

        Returns ``False`` if that skill is not currently loaded.

        >>> from threadline import Session
        >>> import threadline
        >>> s = Session.create(":memory:")
        >>> _ = s.with_context("skills", provider=threadline.StoreSkillProvider(s.store))
        >>> _ = s.write_context_entry("skills", "Talk like a pirate.", title="pirate")
        >>> _ = s.load_context_entry("skills", "pirate")
        >>> s.unload_skill("skills", "pirate"), s.unload_skill("skills", "pirate"), s.loaded_skills
        (True, False, set())
        """
        loads = self._backend.get_skill_loads()
        if self._loaded is None:  # first use: build the set from the same read
            self._loaded = {skill_name(s.label, s.key) for s in loads}
        loaded = self._loaded
        name = skill_name(label, key)
        records = [s for s in loads if (s.label, s.key) == (label, key)]
        for record in records:
            message = self._backend.get_message(record.message_id)
            if message is not None:
                self._backend.update_message(mark_skill_unloaded(message, label, key))
        if name not in loaded and not records:
            return False
        loaded.discard(name)
        return True

    # -- state -------------------------------------------------------------------------------------
    @property
    def state(self) -> Mapping[str, Any]:
        """Read-only merged view of ``app:``, ``user:``, session and live ``temp:`` keys.

        Over a custom ``SessionProvider`` (no threadline Store) only ``temp:`` keys exist:
        the view holds them alone, and reading or writing a stored key raises.

        >>> from threadline import Session
        >>> s = Session.create(":memory:").for_user("ana")
        >>> s.update_state({"topic": "tea", "user:lang": "pt", "temp:step": 1})
        >>> dict(s.state)
        {'topic': 'tea', 'user:lang': 'pt', 'temp:step': 1}
        """
        return MappingProxyType(merge_state(self._stored_state(), self._temp))

    def get_state(self, key: str, default: Any = None) -> Any:
        """One state value by its (prefixed) key.

        >>> from threadline import Session
        >>> s = Session.create(":memory:")
        >>> s.update_state({"topic": "tea"})
        >>> s.get_state("topic"), s.get_state("missing", "none")
        ('tea', 'none')
        """
        if scope_of(key) != "temp" and self.store is None:
            self._require_store("state")  # raises: stored keys need a Store, as for writes
        return self.state.get(key, default)

    def update_state(self, delta: Mapping[str, Any]) -> None:
        """Apply a delta atomically; a ``None`` value deletes the key; ``temp:`` keys stay local.

        >>> from threadline import Session
        >>> s = Session.create(":memory:").for_user("ana")
        >>> s.update_state({"user:lang": "pt", "draft": "hi"})
        >>> s.update_state({"draft": None})  # None deletes
        >>> dict(s.state)
        {'user:lang': 'pt'}
        """
        stored, temp = split_delta(validate_delta(delta))
        if stored:
            self._store_handle("state").update_state(stored)
        self._temp_apply(temp)

    def state_view(self) -> StateView:
        """The state with a pending delta (ADK-TS ``State``): ``get``, ``set``, ``has``,
        ``has_delta()``, ``delta``, ``to_dict()`` and ``commit()``, which applies the delta
        with :meth:`update_state` (same scopes; ``None`` deletes). Reads current values once,
        when made.

        >>> from threadline import Session
        >>> s = Session.create(":memory:").for_user("ana")
        >>> state = s.state_view()
        >>> state.set("temp:counter", state.get("temp:counter", 0) + 1)
        >>> state.set("user:last_seen", 1767225600)
        >>> dict(s.state), state.has_delta()
        ({}, True)
        >>> state.commit()
        >>> dict(s.state)
        {'user:last_seen': 1767225600, 'temp:counter': 1}
        """
        return StateView(
            self.state, self.update_state, user_id=self._user_id, stored=self.store is not None
        )

    def _stored_state(self) -> dict[str, Any]:
        self._used = True
        if self.store is None:
            return {}
        return self._store_handle("state").get_state()

    def _temp_apply(self, temp: Mapping[str, Any]) -> None:
        for key, value in temp.items():
            if value is None:
                self._temp.pop(key, None)
            else:
                self._temp[key] = value


def skill_name(label: str, key: str) -> str:
    """How a loaded skill is named in ``loaded_skills``: ``"label:key"``.

    >>> skill_name("skills", "pirate")
    'skills:pirate'
    """
    return f"{label}:{key}"
