"""An app's memory, described as data and kept in the store: :class:`Profile`.

A profile says which blocks an app's sessions have, how they are compacted (with a *named*
summarizer, so any process can run it), the size policy, the Runner's defaults and the model
turns started by the service use. ``manager.save_profile()`` stores what a manager's builder
declared; ``SessionManager.from_profile(store, app_name=...)`` builds an equivalent manager in
any other process (a service worker, the CLI, the studio); ``threadline serve`` configures
every app from its stored profile. The document is validated on write: unknown keys and wrong
types raise ``InvalidArgumentError`` naming the path (``blocks[2].scope``). docs/profiles.md
has a complete example document.

>>> import threadline
>>> store = threadline.connect(":memory:")
>>> profile = Profile.from_dict({"blocks": [{"label": "memory", "scope": "user"}],
...                              "compaction": {"after_tokens": 8000}})
>>> stored = profile.save(store, "travel")
>>> stored.version, Profile.load(store, "travel").blocks[0]["scope"]
(1, 'user')
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from threadline._profile_check import FORMAT, check_document
from threadline.errors import InvalidArgumentError
from threadline.store.base import Store, StoredProfile

__all__ = ["Profile"]


def _runner_defaults() -> dict[str, Any]:
    return {"runs": None, "max_context_tokens": None, "max_steps": 8}


@dataclass(frozen=True)
class Profile:
    """One app's memory definition (module docstring). Build it with :meth:`from_dict` (which
    validates); ``version`` (the store's write counter, 0 when never stored) and
    ``updated_at`` come from the store.

    >>> Profile().to_dict()["runner"]
    {'runs': None, 'max_context_tokens': None, 'max_steps': 8}
    """

    format: int = FORMAT
    blocks: tuple[dict[str, Any], ...] = ()
    compaction: dict[str, Any] | None = None
    size_policy: dict[str, Any] | None = None
    runner: dict[str, Any] = field(default_factory=_runner_defaults)
    model: dict[str, Any] | None = None
    token_counter: str | None = None
    cached_prompt: bool = False
    version: int = 0
    updated_at: datetime | None = None

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> Profile:
        """Read and validate a profile document (``version``/``updated_at`` are kept).

        >>> Profile.from_dict({"blocks": [{"label": "soul", "kind": "readonly"}]})
        Traceback (most recent call last):
        threadline.errors.InvalidArgumentError: blocks[0].text is required for a readonly block
        """
        # The parts are built anew from checked scalars: nothing of ``document`` is kept, and
        # no deep copy of it is made first (a hostile value may nest without end).
        parts = check_document(document)
        version = document.get("version", 0)
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise InvalidArgumentError(f"version must be an integer >= 0, got {version!r}")
        updated = document.get("updated_at")
        if updated is not None:
            try:
                updated = datetime.fromisoformat(str(updated))
            except ValueError:
                raise InvalidArgumentError(
                    f"updated_at must be an ISO 8601 time, got {updated!r}"
                ) from None
        return cls(**parts, version=version, updated_at=updated)

    def to_dict(self) -> dict[str, Any]:
        """The document (JSON-able); ``version`` and ``updated_at`` only once stored.

        >>> Profile.from_dict({"cached_prompt": True}).to_dict()["cached_prompt"]
        True
        """
        document: dict[str, Any] = {"format": self.format}
        if self.version:
            document["version"] = self.version
        if self.updated_at is not None:
            document["updated_at"] = self.updated_at.isoformat()
        document.update(copy.deepcopy(self._parts()))
        return document

    def _parts(self) -> dict[str, Any]:
        return {
            "blocks": [dict(block) for block in self.blocks],
            "compaction": self.compaction,
            "size_policy": self.size_policy,
            "runner": self.runner,
            "model": self.model,
            "token_counter": self.token_counter,
            "cached_prompt": self.cached_prompt,
        }

    def document(self) -> dict[str, Any]:
        """What the store keeps: :meth:`to_dict` without ``version`` and ``updated_at``.

        >>> sorted(Profile().document())[:3]
        ['blocks', 'cached_prompt', 'compaction']
        """
        return {"format": self.format, **copy.deepcopy(self._parts())}

    @classmethod
    def of_stored(cls, stored: StoredProfile) -> Profile:
        """The profile a store row holds (``Store.get_profile``).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> Profile.of_stored(store.put_profile("travel", {"format": 1})).version
        1
        """
        profile = cls.from_dict(stored.document)
        return replace(profile, version=stored.version, updated_at=stored.updated_at)

    @classmethod
    def load(cls, store: Store, app: str) -> Profile | None:
        """The app's stored profile, or ``None`` when it has none.

        >>> import threadline
        >>> Profile.load(threadline.connect(":memory:"), "travel") is None
        True
        """
        stored = store.get_profile(app)
        return None if stored is None else cls.of_stored(stored)

    def save(self, store: Store, app: str) -> Profile:
        """Store this profile as the app's current one (one transaction; the stored
        ``version`` grows by one); returns the stored profile.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = Profile().save(store, "travel")
        >>> Profile(cached_prompt=True).save(store, "travel").version
        2
        """
        return Profile.of_stored(store.put_profile(app, self.document()))
