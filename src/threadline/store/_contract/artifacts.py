"""The storage contract, part seven: stored files with versions (what
``threadline.integrations.adk.ThreadlineArtifactService`` keeps ADK artifacts in).

A file belongs to a user of an app, and to one of its sessions or (``session`` ``None``)
to the user alone. Each save adds a version (0 for the first); the content is an attachment
of the app (content-addressed, stored once however many files or messages hold it), so an
attachment a stored file refers to is never collected. Deleting the session deletes its
files, ``forget_user`` the user's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from threadline.store._contract.values import StoredArtifact


@runtime_checkable
class ArtifactsContract(Protocol):
    """Stored files: save a version, read one, list them, delete a file, load one verbatim."""

    def put_artifact(
        self,
        app: str,
        user_id: str,
        session: str | None,
        filename: str,
        data: bytes | str,
        *,
        part: Mapping[str, Any] | None = None,
        mime_type: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        created: float | None = None,
    ) -> StoredArtifact:
        """Save ``data`` (``bytes``, or ``str`` for text) as the file's next version (one
        more than its highest, 0 for the first) in one transaction; ``created`` (seconds
        since the epoch) defaults to now.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.put_artifact("app", "ana", "s1", "a.bin", b"one").version
        0
        >>> store.put_artifact("app", "ana", "s1", "a.bin", b"two").version
        1
        """

    def get_artifact(
        self,
        app: str,
        user_id: str,
        session: str | None,
        filename: str,
        version: int | None = None,
    ) -> StoredArtifact | None:
        """One version of the file with its content (the latest with ``version`` ``None``),
        or ``None``.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.put_artifact("app", "ana", None, "user:cv.txt", "v0")
        >>> _ = store.put_artifact("app", "ana", None, "user:cv.txt", "v1")
        >>> store.get_artifact("app", "ana", None, "user:cv.txt").content
        'v1'
        >>> store.get_artifact("app", "ana", None, "user:cv.txt", 0).content
        'v0'
        >>> store.get_artifact("app", "ana", None, "user:cv.txt", 7) is None
        True
        """

    def list_artifacts(
        self,
        app: str,
        user_id: str,
        session: str | None = None,
        filename: str | None = None,
    ) -> list[StoredArtifact]:
        """Every version of the files of that scope (the session ``session``'s, or the user's with
        ``session`` ``None``), of ``filename`` only when given, by name then version;
        their ``content`` is ``None`` (not read).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.put_artifact("app", "ana", "s1", "b", "x")
        >>> _ = store.put_artifact("app", "ana", "s1", "a", "x")
        >>> [(a.filename, a.version, a.content) for a in store.list_artifacts("app", "ana", "s1")]
        [('a', 0, None), ('b', 0, None)]
        """

    def delete_artifact(self, app: str, user_id: str, session: str | None, filename: str) -> int:
        """Delete every version of the file (and its content, unless something else holds
        it); how many versions there were.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.put_artifact("app", "ana", "s1", "a", "x")
        >>> store.delete_artifact("app", "ana", "s1", "a")
        1
        >>> store.delete_artifact("app", "ana", "s1", "a")
        0
        """

    def load_artifact(self, app: str, stored: StoredArtifact) -> None:
        """Write ``stored`` as it is (its version and time kept; import and ``threadline
        copy``). The same version already there with the same values is left alone; with
        other values it is ``InvalidArgumentError``.

        >>> import threadline
        >>> source, target = threadline.connect(":memory:"), threadline.connect(":memory:")
        >>> saved = source.put_artifact("app", "ana", "s1", "a", b"x")
        >>> target.load_artifact("app", saved)
        >>> target.get_artifact("app", "ana", "s1", "a") == saved
        True
        """
