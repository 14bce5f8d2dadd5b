"""ADK's artifact service on threadline's stored files: ``ThreadlineArtifactService``.

Exported by :mod:`threadline.integrations.adk` (its public home).

Each version of an artifact is a stored file of the app (``Store.put_artifact``): its bytes
(``inline_data``) or text an attachment, content-addressed and stored once per app whatever
holds it (messages or other artifacts); the rest of the part, the MIME type, the custom
metadata and the creation time in the file's row. Session-scoped artifacts belong to the
threadline session of the ADK session (``"<user>/<id>"``, as ``ThreadlineSessionService``
names it), so deleting that session deletes them; ``user:`` files belong to the user alone
and are shared by all their sessions. ``Store.forget_user`` deletes both.

>>> from threadline.integrations.adk import ThreadlineArtifactService
>>> ThreadlineArtifactService(":memory:").store.list_artifacts("app", "u1") == []
True
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any, TypeVar, cast

from google.adk.artifacts import artifact_util
from google.adk.artifacts.base_artifact_service import (
    ArtifactVersion,
    BaseArtifactService,
    ensure_part,
)
from google.adk.errors.input_validation_error import InputValidationError
from google.genai import types

from threadline.integrations._adk_mapping import normal_id, owner_of, threadline_session_id
from threadline.internal import lazily
from threadline.store import Store, StoredArtifact

__all__ = ["ThreadlineArtifactService"]

_T = TypeVar("_T")
_USER_PREFIX = "user:"


def _payload(part: types.Part) -> tuple[bytes | str, dict[str, Any], str | None]:
    """``(content, the part's JSON without it, MIME type)`` of an artifact part."""
    shape = part.model_dump(mode="json", exclude_none=True)
    if part.inline_data is not None:
        if part.inline_data.data is None:
            raise InputValidationError("An inline_data artifact must carry data.")
        del shape["inline_data"]["data"]
        return bytes(part.inline_data.data), shape, part.inline_data.mime_type
    if part.text is not None:
        del shape["text"]
        return part.text, shape, "text/plain"
    if part.file_data is not None:
        return "", shape, None if artifact_util.is_artifact_ref(part) else part.file_data.mime_type
    raise InputValidationError("Not supported artifact type.")


def _part_of(stored: StoredArtifact) -> types.Part:
    shape = dict(stored.part)
    if isinstance(stored.content, bytes):
        shape["inline_data"] = {**shape.get("inline_data", {}), "data": stored.content}
    elif "file_data" not in shape:
        shape["text"] = stored.content
    return types.Part.model_validate(shape)


class ThreadlineArtifactService(BaseArtifactService):
    """ADK's ``BaseArtifactService`` on threadline's store: versions (0, 1, ...), ``user:``
    files shared across a user's sessions, ``artifact://`` references followed on load (within
    the caller's app, user and session, as ADK's own services). ``store`` as for
    :class:`ThreadlineSessionService` (a URL, a path or an open ``Store``; they may share
    one). Ids are checked as ADK's services check them (``InputValidationError``).

    >>> import asyncio
    >>> from google.genai import types
    >>> service = ThreadlineArtifactService(":memory:")
    >>> part = types.Part.from_bytes(data=b"%PDF", mime_type="application/pdf")
    >>> asyncio.run(service.save_artifact(app_name="app", user_id="u1", session_id="s1",
    ...                                   filename="report.pdf", artifact=part))
    0
    >>> loaded = asyncio.run(service.load_artifact(app_name="app", user_id="u1",
    ...                                            session_id="s1", filename="report.pdf"))
    >>> loaded.inline_data.data, loaded.inline_data.mime_type
    (b'%PDF', 'application/pdf')
    """

    def __init__(self, store: str | os.PathLike[str] | Store) -> None:
        self.store, self._owns_store = lazily(store)

    async def _run(self, function: Callable[..., _T], /, *args: Any) -> _T:
        return await asyncio.to_thread(function, *args)  # the loop never blocks on storage

    async def close(self) -> None:
        """Close the store if this service opened it (from a URL). Idempotent.

        >>> import asyncio
        >>> asyncio.run(ThreadlineArtifactService(":memory:").close())
        """
        if self._owns_store:
            await self._run(self.store.close)

    # -- scope ---------------------------------------------------------------------------
    @staticmethod
    def _where(
        app_name: str, user_id: str, filename: str | None, session_id: str | None
    ) -> tuple[str, str | None, str | None]:
        """``(owner, threadline session id or None, normalised ADK session id)``; the ids
        checked as ADK checks them (``InputValidationError``)."""
        artifact_util.validate_path_segment(app_name, "app_name")
        artifact_util.validate_path_segment(user_id, "user_id")
        session = normal_id(session_id) if session_id is not None else None
        if session_id is not None:
            artifact_util.validate_path_segment(session_id, "session_id")
        if filename is not None and filename.startswith(_USER_PREFIX):
            return owner_of(user_id), None, session
        if session is None:
            if filename is None:
                return owner_of(user_id), None, None
            raise InputValidationError("Session ID must be provided for session-scoped artifacts.")
        return owner_of(user_id), threadline_session_id(user_id, session), session

    @staticmethod
    def _version_of(
        app_name: str, user_id: str, session: str | None, stored: StoredArtifact
    ) -> ArtifactVersion:
        # The form of ADK's InMemoryArtifactService (memory://apps/...): code and tests written
        # against ADK's reference service read the same canonical URIs from this one (ADK
        # reads none back; an artifact:// reference is what loads another artifact).
        reference = artifact_util.get_artifact_uri(
            app_name, user_id, stored.filename, stored.version,
            session if stored.session_id is not None else None,
        )  # fmt: skip
        uri = "memory://" + reference.removeprefix("artifact://")
        return ArtifactVersion(
            version=stored.version,
            canonical_uri=uri,
            custom_metadata=dict(stored.metadata),
            create_time=stored.created,
            mime_type=stored.mime_type,
        )

    # -- the service -----------------------------------------------------------------------
    async def save_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        artifact: types.Part | dict[str, Any],
        session_id: str | None = None,
        custom_metadata: dict[str, Any] | None = None,
    ) -> int:
        """Save the artifact as the file's next version; its number (0 for the first).

        >>> import asyncio
        >>> from google.genai import types
        >>> service = ThreadlineArtifactService(":memory:")
        >>> save = lambda text: asyncio.run(service.save_artifact(app_name="app", user_id="u1",
        ...     filename="user:notes.txt", artifact=types.Part(text=text)))
        >>> save("one"), save("two")
        (0, 1)
        """
        owner, tl_session, session = self._where(app_name, user_id, filename, session_id)
        if tl_session is not None:
            artifact_util._validate_session_id_for_flat_storage(cast(str, session))
        part = ensure_part(artifact)
        if artifact_util.is_artifact_ref(part):
            uri = cast(str, cast(types.FileData, part.file_data).file_uri)
            parsed = artifact_util.parse_artifact_uri(uri)
            if not parsed:
                raise InputValidationError(f"Invalid artifact reference URI: {uri}")
            artifact_util.validate_artifact_reference_scope(
                app_name=app_name, user_id=user_id, session_id=session, parsed_uri=parsed
            )
        content, shape, mime_type = _payload(part)
        # The version's time as ADK's services take it (``ArtifactVersion``'s default).
        created = ArtifactVersion(version=0, canonical_uri="").create_time
        stored: StoredArtifact = await self._run(
            lambda: self.store.put_artifact(
                app_name, owner, tl_session, filename, content, part=shape,
                mime_type=mime_type, metadata=custom_metadata or {}, created=created,
            )
        )  # fmt: skip
        return stored.version

    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> types.Part | None:
        """The artifact's version (the latest with ``version`` ``None``), or ``None``.

        >>> import asyncio
        >>> service = ThreadlineArtifactService(":memory:")
        >>> asyncio.run(service.load_artifact(app_name="app", user_id="u1", session_id="s1",
        ...                                   filename="missing.txt")) is None
        True
        """
        return await self._load(
            app_name, user_id, filename, session_id, version,
            artifact_util._MAX_ARTIFACT_REFERENCE_DEPTH,
        )  # fmt: skip

    async def _load(
        self,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None,
        version: int | None,
        depth: int,
    ) -> types.Part | None:
        owner, tl_session, session = self._where(app_name, user_id, filename, session_id)
        stored = await self._run(
            self.store.get_artifact, app_name, owner, tl_session, filename, version
        )
        if stored is None:
            return None
        part = _part_of(stored)
        if artifact_util.is_artifact_ref(part):
            target = artifact_util.resolve_artifact_reference(
                file_uri=cast(str, cast(types.FileData, part.file_data).file_uri),
                app_name=app_name,
                user_id=user_id,
                session_id=session,
                remaining_depth=depth,
            )
            return await self._load(
                target.app_name, target.user_id, target.filename, target.session_id,
                target.version, depth - 1,
            )  # fmt: skip
        if part == types.Part() or artifact_util._is_rewind_tombstone(part):
            return None
        return part

    async def list_artifact_keys(
        self, *, app_name: str, user_id: str, session_id: str | None = None
    ) -> list[str]:
        """The names of the session's artifacts and the user's ``user:`` files, sorted.

        >>> import asyncio
        >>> service = ThreadlineArtifactService(":memory:")
        >>> asyncio.run(service.list_artifact_keys(app_name="app", user_id="u1", session_id="s1"))
        []
        """
        owner, tl_session, _ = self._where(app_name, user_id, None, session_id)

        def run() -> set[str]:
            names = {a.filename for a in self.store.list_artifacts(app_name, owner, None)}
            if tl_session is not None:
                own = self.store.list_artifacts(app_name, owner, tl_session)
                names |= {a.filename for a in own}
            return names

        return sorted(await self._run(run))

    async def delete_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
    ) -> None:
        """Delete every version of the artifact (nothing if it does not exist).

        >>> import asyncio
        >>> service = ThreadlineArtifactService(":memory:")
        >>> asyncio.run(service.delete_artifact(app_name="app", user_id="u1",
        ...                                     filename="user:gone.txt"))
        """
        owner, tl_session, _ = self._where(app_name, user_id, filename, session_id)
        await self._run(self.store.delete_artifact, app_name, owner, tl_session, filename)

    async def _versions(
        self, app_name: str, user_id: str, filename: str, session_id: str | None
    ) -> list[ArtifactVersion]:
        owner, tl_session, session = self._where(app_name, user_id, filename, session_id)
        stored = await self._run(self.store.list_artifacts, app_name, owner, tl_session, filename)
        return [self._version_of(app_name, user_id, session, s) for s in stored]

    async def list_versions(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
    ) -> list[int]:
        """The artifact's version numbers, ascending.

        >>> import asyncio
        >>> service = ThreadlineArtifactService(":memory:")
        >>> asyncio.run(service.list_versions(app_name="app", user_id="u1", filename="user:x"))
        []
        """
        versions = await self._versions(app_name, user_id, filename, session_id)
        return [v.version for v in versions]

    async def list_artifact_versions(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
    ) -> list[ArtifactVersion]:
        """Every version of the artifact with its metadata (``artifact://`` canonical URIs).

        >>> import asyncio
        >>> from google.genai import types
        >>> service = ThreadlineArtifactService(":memory:")
        >>> _ = asyncio.run(service.save_artifact(app_name="app", user_id="u1", session_id="s1",
        ...     filename="a.txt", artifact=types.Part(text="hi"), custom_metadata={"k": 1}))
        >>> [v] = asyncio.run(service.list_artifact_versions(app_name="app", user_id="u1",
        ...                                                  session_id="s1", filename="a.txt"))
        >>> v.canonical_uri
        'memory://apps/app/users/u1/sessions/s1/artifacts/a.txt/versions/0'
        >>> v.custom_metadata, v.mime_type
        ({'k': 1}, 'text/plain')
        """
        return await self._versions(app_name, user_id, filename, session_id)

    async def get_artifact_version(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> ArtifactVersion | None:
        """One version's metadata (the latest with ``version`` ``None``), or ``None``.

        >>> import asyncio
        >>> service = ThreadlineArtifactService(":memory:")
        >>> asyncio.run(service.get_artifact_version(app_name="app", user_id="u1",
        ...                                          filename="user:x")) is None
        True
        """
        versions = await self._versions(app_name, user_id, filename, session_id)
        if version is None:
            return versions[-1] if versions else None
        return next((v for v in versions if v.version == version), None)
