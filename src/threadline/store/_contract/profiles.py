"""The storage contract, part six: each app's current profile (``threadline.Profile``).

The store keeps the document as given (a JSON object) with a write counter and a time; what a
profile means is ``threadline.profile``'s business, so every process reads the same one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from threadline.store._contract.values import StoredProfile


@runtime_checkable
class ProfilesContract(Protocol):
    """Profiles: read an app's, write one (the counter grows), load one verbatim, list them."""

    def get_profile(self, app: str) -> StoredProfile | None:
        """The app's current profile, or ``None`` when none was ever written.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.get_profile("travel") is None
        True
        >>> _ = store.put_profile("travel", {"format": 1})
        >>> store.get_profile("travel").version
        1
        """

    def put_profile(self, app: str, document: Mapping[str, Any]) -> StoredProfile:
        """Replace the app's profile with ``document`` (a JSON object) in one transaction;
        its ``version`` is one more than the one it replaces (1 for the first).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.put_profile("travel", {"format": 1})
        >>> store.put_profile("travel", {"format": 1, "blocks": []}).version
        2
        """

    def load_profile(self, app: str, stored: StoredProfile) -> None:
        """Write ``stored`` as it is, keeping its ``version`` and ``updated_at`` (import and
        ``threadline copy``: the copy must read back identical).

        >>> import threadline
        >>> source, target = threadline.connect(":memory:"), threadline.connect(":memory:")
        >>> _ = source.put_profile("travel", {"format": 1})
        >>> target.load_profile("travel", source.get_profile("travel"))
        >>> target.get_profile("travel") == source.get_profile("travel")
        True
        """

    def list_profiles(self) -> list[StoredProfile]:
        """Every app's profile, by app name.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.put_profile("b", {"format": 1}), store.put_profile("a", {"format": 1})
        >>> [p.app for p in store.list_profiles()]
        ['a', 'b']
        """
