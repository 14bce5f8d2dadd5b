"""A manager and its app's stored profile: ``save_profile()``, ``from_profile()`` and the
``profile`` it follows.

A manager built by ``from_profile`` re-reads the profile's version (one indexed read) whenever
it hands out a session; a new version (written by any process) reconfigures the sessions it
hands out from then on. Its builder's own calls are laid over the profile and win.

>>> from threadline import SessionManager
>>> m = SessionManager(":memory:", "travel").with_context("memory", scope="user")
>>> m.save_profile().version
1
>>> other = SessionManager.from_profile(m.store, app_name="travel")
>>> [block["label"] for block in other.profile.blocks]
['memory']
"""

from __future__ import annotations

import threading
import time
from typing import Any, Literal, TypeVar, cast

from threadline._manager_base import ManagerBase, _HistorySearch
from threadline._profile_build import overlay, parts_of, settings_of
from threadline._settings import SessionSettings
from threadline.profile import Profile
from threadline.store.base import Store
from threadline.types import Scope

__all__ = ["ManagerProfile"]

#: Seconds a manager following a profile trusts the version it read last (0: read it on every
#: use, api.md clarification 27; a deployment may raise it to save that read).
PROFILE_TTL = 0.0

# Spelled as the class users hold (as in _manager_base): signatures read -> SessionManager.
SessionManager = TypeVar("SessionManager", bound="ManagerProfile")


class ManagerProfile(ManagerBase):
    """The profile half of a manager (module docstring)."""

    _following = False
    _profile: Profile | None = None
    _profile_settings: SessionSettings | None = None
    _effective: SessionSettings | None = None
    _checked_at = 0.0
    _profile_lock = threading.Lock()  # replaced per manager by from_profile

    @classmethod
    def from_profile(
        cls: type[SessionManager],
        store: Store | str,
        app_name: str = "default",
        *,
        max_messages: int | None = None,
        max_cached_sessions: int = 1024,
        size_policy: Literal["attach", "truncate", "error"] | None = None,
        max_message_bytes: int | None = None,
    ) -> SessionManager:
        """A manager configured by the app's stored profile (none stored: a plain manager
        that picks one up once written). Builder calls made on it afterwards override the
        profile; so do ``size_policy``/``max_message_bytes`` given here.

        >>> from threadline import SessionManager
        >>> m = SessionManager(":memory:").with_context("notes", max_tokens=50)
        >>> _ = m.save_profile()
        >>> follower = SessionManager.from_profile(m.store)
        >>> follower.get_session("s1").get_context_block("notes").max_tokens
        50
        """
        manager = cls(
            store,
            app_name,
            max_messages=max_messages,
            max_cached_sessions=max_cached_sessions,
            size_policy=size_policy,
            max_message_bytes=max_message_bytes,
        )
        manager._follow()
        return manager

    def _follow(self) -> None:
        """Follow the app's stored profile from now on (``from_profile``; the async twin
        calls it on its sync manager). No I/O: the profile is read at the first use, which
        for the async twin is in a worker thread, never on the event loop."""
        self._following = True
        self._profile_lock = threading.Lock()

    @property
    def profile(self) -> Profile | None:
        """The stored profile this manager follows (re-read when its version changed), or
        ``None`` for a manager not built by ``from_profile`` or an app without one.

        >>> from threadline import SessionManager
        >>> SessionManager(":memory:").profile is None
        True
        """
        if not self._following:
            return None
        self._refresh_profile(force=True)
        return self._profile

    def save_profile(
        self, *, model: dict[str, Any] | None = None, runner: dict[str, Any] | None = None
    ) -> Profile:
        """Store what this manager's builder declared (its blocks, compaction with a named
        summarizer, size policy, prompt caching) as the app's profile; ``model`` and
        ``runner`` (the Runner's defaults for service turns) replace the stored ones when
        given, else are kept. Parts that exist only as code are stored as ``{"kind":
        "code"}`` entries. Returns the stored profile (its ``version`` grew by one).

        >>> from threadline import SessionManager
        >>> from threadline.compaction import create_compact_function
        >>> from threadline.summarizers import named
        >>> m = SessionManager(":memory:").on_compaction(
        ...     create_compact_function(named({"type": "extractive"}))).compact_after(8000)
        >>> m.save_profile().compaction
        {'after_tokens': 8000, 'summarizer': {'type': 'extractive'}}
        """
        stored = Profile.load(self.store, self.app_name)
        settings = self._current_settings()
        parts = parts_of(settings, history=_HistorySearch)
        document: dict[str, Any] = {
            **{k: v for k, v in parts.items() if v is not None},
            "runner": runner if runner is not None else (stored.runner if stored else {}),
        }
        chosen = model if model is not None else (stored.model if stored else None)
        if chosen is not None:
            document["model"] = chosen
        if stored is not None and stored.token_counter and not parts["token_counter"]:
            document["token_counter"] = stored.token_counter
        saved = Profile.from_dict(document).save(self.store, self.app_name)
        if self._following:
            self._adopt(saved)
        return saved

    # -- following ---------------------------------------------------------------------------
    def _refresh_profile(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._checked_at < PROFILE_TTL:
            return
        stored = self.store.get_profile(self.app_name)
        self._checked_at = now
        # A stored profile is told apart by (version, updated_at): an import or copy with
        # --replace writes another store's profile verbatim, whose version may be the same.
        seen = None if stored is None else (stored.version, stored.updated_at)
        current = self._profile
        if seen != (None if current is None else (current.version, current.updated_at)):
            self._adopt(None if stored is None else Profile.of_stored(stored))

    def _adopt(self, profile: Profile | None) -> None:
        # Built before anything is replaced: a profile this process cannot apply (a token
        # counter it lacks) raises here, typed, and is tried again at the next use.
        built = None if profile is None else settings_of(
            profile.document(), self.store,
            history=lambda scope: _HistorySearch(self, cast(Scope, scope)),
        )  # fmt: skip
        with self._profile_lock:
            self._profile, self._profile_settings = profile, built
            self._effective = None
        self._changed()

    def _current_settings(self) -> SessionSettings:
        if not self._following:
            return self._settings
        self._refresh_profile()
        with self._profile_lock:  # one consistent (profile, builder) pair per computation
            if self._effective is None:
                base = self._profile_settings
                self._effective = self._settings if base is None else overlay(base, self._settings)
            return self._effective

    def _changed(self: SessionManager) -> SessionManager:
        if self._following:
            with self._profile_lock:
                self._effective = None  # builder calls change what is laid over the profile
        return super()._changed()
