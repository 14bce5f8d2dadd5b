"""``ThreadlineArtifactService``: ADK's own artifact-service tests (google/adk-python
``tests/unittests/artifacts/test_artifact_service.py``, its in-memory-parametrised cases) with
our service swapped in, on every backend; then what threadline adds: attachments shared and
collected, ``forget_user``, deleting a session, export and ``threadline copy``."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import sqlite3
from typing import Any
from unittest.mock import patch

import pytest
from google.adk.artifacts.base_artifact_service import ArtifactVersion
from google.adk.errors.input_validation_error import InputValidationError
from google.genai import types

import threadline
from threadline.errors import InvalidArgumentError
from threadline.export import export_app, import_records
from threadline.integrations.adk import ThreadlineArtifactService, ThreadlineSessionService
from threadline.store import Store

pytestmark = pytest.mark.asyncio

FIXED_TIME = 1735732800.0
SCOPE = {"app_name": "app0", "user_id": "user0", "session_id": "123"}


@pytest.fixture
def service(store: Store) -> ThreadlineArtifactService:
    return ThreadlineArtifactService(store)


def _canonical(filename: str, version: int, session: str | None = "123") -> str:
    """The canonical URI of a version: ADK's in-memory service's form (memory://)."""
    return "memory://" + _uri(filename, version, session).removeprefix("artifact://")


def _uri(filename: str, version: int, session: str | None = "123") -> str:
    if session is None:
        return f"artifact://apps/app0/users/user0/artifacts/{filename}/versions/{version}"
    return (
        f"artifact://apps/app0/users/user0/sessions/{session}/artifacts/{filename}"
        f"/versions/{version}"
    )


# -- ADK's cases ---------------------------------------------------------------------------


async def test_load_empty(service: ThreadlineArtifactService) -> None:
    assert not await service.load_artifact(
        app_name="test_app", user_id="test_user", session_id="session_id", filename="filename"
    )


async def test_save_load_delete(service: ThreadlineArtifactService) -> None:
    artifact = types.Part.from_bytes(data=b"test_data", mime_type="text/plain")
    await service.save_artifact(**SCOPE, filename="file456", artifact=artifact)
    assert await service.load_artifact(**SCOPE, filename="file456") == artifact
    assert not await service.load_artifact(**SCOPE, filename="file456", version=3)
    await service.delete_artifact(**SCOPE, filename="file456")
    assert not await service.load_artifact(**SCOPE, filename="file456")


@pytest.mark.parametrize("session_id", ["user", "user/x", "user\\x"])
async def test_save_artifact_rejects_reserved_user_as_session_id(
    service: ThreadlineArtifactService, session_id: str
) -> None:
    with pytest.raises(InputValidationError, match="reserved value 'user'"):
        await service.save_artifact(
            app_name="app0", user_id="user0", session_id=session_id,
            filename="report.txt", artifact=types.Part(text="hello"),
        )  # fmt: skip


@pytest.mark.parametrize("session_id", ["user", "user/x", "user\\x"])
async def test_read_and_delete_paths_allow_reserved_user_as_session_id(
    service: ThreadlineArtifactService, session_id: str
) -> None:
    scope = {"app_name": "app0", "user_id": "user0", "session_id": session_id}
    assert await service.list_artifact_keys(**scope) == []
    assert await service.load_artifact(**scope, filename="report.txt") is None
    assert await service.list_versions(**scope, filename="report.txt") == []
    await service.delete_artifact(**scope, filename="report.txt")


async def test_padded_session_id_lands_in_same_namespace_as_trimmed(
    service: ThreadlineArtifactService,
) -> None:
    artifact = types.Part(text="hello")
    base = {"app_name": "app0", "user_id": "user0", "filename": "report.txt"}
    await service.save_artifact(**base, session_id="sess0\n", artifact=artifact)
    assert await service.load_artifact(**base, session_id="sess0") == artifact
    assert "report.txt" in await service.list_artifact_keys(
        app_name="app0", user_id="user0", session_id="sess0"
    )
    assert await service.load_artifact(**base, session_id="sess0\n") == artifact
    await service.delete_artifact(**base, session_id="sess0")
    assert not await service.load_artifact(**base, session_id="sess0\n")


async def test_artifact_reference_allows_padded_session_id_at_call_site(
    service: ThreadlineArtifactService,
) -> None:
    scope = {"app_name": "app0", "user_id": "user0", "session_id": "sess0\n"}
    await service.save_artifact(**scope, filename="source.txt", artifact=types.Part(text="hello"))
    ref = types.Part(
        file_data=types.FileData(file_uri=_uri("source.txt", 0, "sess0"), mime_type="text/plain")
    )
    await service.save_artifact(**scope, filename="ref.txt", artifact=ref)
    assert await service.load_artifact(**scope, filename="ref.txt") == types.Part(text="hello")


async def test_loads_nested_artifact_reference(service: ThreadlineArtifactService) -> None:
    target = types.Part.from_text(text="target")
    await service.save_artifact(**SCOPE, filename="folder/file456", artifact=target)
    ref = types.Part(
        file_data=types.FileData(file_uri=_uri("folder/file456", 0), mime_type="text/plain")
    )
    await service.save_artifact(**SCOPE, filename="reference", artifact=ref)
    assert await service.load_artifact(**SCOPE, filename="reference") == target


async def test_list_keys(service: ThreadlineArtifactService) -> None:
    artifact = types.Part.from_bytes(data=b"test_data", mime_type="text/plain")
    filenames = [f"filename{i}" for i in range(5)]
    for name in filenames:
        await service.save_artifact(**SCOPE, filename=name, artifact=artifact)
    assert await service.list_artifact_keys(**SCOPE) == filenames


async def test_list_versions(service: ThreadlineArtifactService) -> None:
    versions = [
        types.Part.from_bytes(data=i.to_bytes(2, byteorder="big"), mime_type="text/plain")
        for i in range(3)
    ] + [types.Part.from_text(text="hello")]
    for version in versions:
        await service.save_artifact(**SCOPE, filename="with/slash/filename", artifact=version)
    assert await service.list_versions(**SCOPE, filename="with/slash/filename") == [0, 1, 2, 3]
    for i, version in enumerate(versions):
        loaded = await service.load_artifact(**SCOPE, filename="with/slash/filename", version=i)
        assert loaded == version


async def test_nested_artifact_does_not_leak_versions_into_parent(
    service: ThreadlineArtifactService,
) -> None:
    parent = types.Part.from_text(text="parent v0")
    await service.save_artifact(**SCOPE, filename="doc", artifact=parent)
    for i in range(3):
        await service.save_artifact(
            **SCOPE, filename="doc/nested", artifact=types.Part.from_text(text=f"nested v{i}")
        )
    assert await service.list_versions(**SCOPE, filename="doc") == [0]
    assert await service.load_artifact(**SCOPE, filename="doc") == parent
    again = types.Part.from_text(text="parent v1")
    assert await service.save_artifact(**SCOPE, filename="doc", artifact=again) == 1
    assert await service.list_versions(**SCOPE, filename="doc/nested") == [0, 1, 2]


async def test_list_artifact_versions_excludes_nested_artifact(
    service: ThreadlineArtifactService,
) -> None:
    for name in ("doc", "doc/nested"):
        await service.save_artifact(
            **SCOPE, filename=name, artifact=types.Part.from_text(text=name)
        )
    versions = await service.list_artifact_versions(**SCOPE, filename="doc")
    assert [v.version for v in versions] == [0]
    assert versions[0].canonical_uri == _canonical("doc", 0)


async def test_delete_artifact_keeps_nested_artifact(service: ThreadlineArtifactService) -> None:
    nested = types.Part.from_text(text="nested v0")
    await service.save_artifact(**SCOPE, filename="doc", artifact=types.Part.from_text(text="p"))
    await service.save_artifact(**SCOPE, filename="doc/nested", artifact=nested)
    await service.delete_artifact(**SCOPE, filename="doc")
    assert not await service.list_versions(**SCOPE, filename="doc")
    assert await service.load_artifact(**SCOPE, filename="doc/nested") == nested


async def test_list_keys_includes_nested_artifact(service: ThreadlineArtifactService) -> None:
    for name in ("doc", "doc/nested"):
        await service.save_artifact(
            **SCOPE, filename=name, artifact=types.Part.from_text(text=name)
        )
    assert await service.list_artifact_keys(**SCOPE) == ["doc", "doc/nested"]


async def test_list_keys_preserves_user_prefix(service: ThreadlineArtifactService) -> None:
    artifact = types.Part.from_bytes(data=b"test_data", mime_type="text/plain")
    for name in ("user:document.pdf", "user:image.png", "session_file.txt"):
        await service.save_artifact(**SCOPE, filename=name, artifact=artifact)
    keys = await service.list_artifact_keys(**SCOPE)
    assert sorted(keys) == ["session_file.txt", "user:document.pdf", "user:image.png"]
    # user: files are the user's, in every session and with none.
    other = {**SCOPE, "session_id": "456"}
    assert await service.list_artifact_keys(**other) == ["user:document.pdf", "user:image.png"]
    assert await service.list_artifact_keys(app_name="app0", user_id="user0") == [
        "user:document.pdf",
        "user:image.png",
    ]
    assert await service.load_artifact(**other, filename="user:image.png") == artifact
    assert await service.load_artifact(**other, filename="session_file.txt") is None


@pytest.mark.parametrize("filename", ["filename", "user:document.pdf"])
async def test_list_artifact_versions_and_get_artifact_version(
    service: ThreadlineArtifactService, filename: str
) -> None:
    versions = [
        types.Part.from_bytes(data=i.to_bytes(2, byteorder="big"), mime_type="text/plain")
        for i in range(4)
    ]
    with patch("google.adk.artifacts.base_artifact_service.platform_time") as clock:
        clock.get_time.return_value = FIXED_TIME
        for i in range(4):
            await service.save_artifact(
                **SCOPE, filename=filename, artifact=versions[i],
                custom_metadata={"key": f"value{i}"},
            )  # fmt: skip
    listed = await service.list_artifact_versions(**SCOPE, filename=filename)
    session = None if filename.startswith("user:") else "123"
    expected = [
        ArtifactVersion(
            version=i,
            canonical_uri=_canonical(filename, i, session),
            custom_metadata={"key": f"value{i}"},
            mime_type="text/plain",
            create_time=FIXED_TIME,
        )
        for i in range(4)
    ]
    assert listed == expected
    assert await service.get_artifact_version(**SCOPE, filename=filename) == expected[-1]
    assert await service.get_artifact_version(**SCOPE, filename=filename, version=2) == expected[2]


async def test_get_artifact_version_artifact_does_not_exist(
    service: ThreadlineArtifactService,
) -> None:
    assert not await service.get_artifact_version(
        app_name="test_app", user_id="test_user", session_id="session_id", filename="filename"
    )


async def test_get_artifact_version_out_of_index(service: ThreadlineArtifactService) -> None:
    artifact = types.Part.from_bytes(data=b"test_data", mime_type="text/plain")
    await service.save_artifact(**SCOPE, filename="filename", artifact=artifact)
    assert not await service.get_artifact_version(**SCOPE, filename="filename", version=3)


@pytest.mark.parametrize("user_id", ["group/user123", "mdbuser/username"])
async def test_save_and_load_namespaced_user_id_succeeds(
    service: ThreadlineArtifactService, user_id: str
) -> None:
    app_name = "projects/123/locations/us-central1/reasoningEngines/456"
    scope = {"app_name": app_name, "user_id": user_id, "session_id": "sess123"}
    artifact = types.Part.from_bytes(data=b"data", mime_type="text/plain")
    await service.save_artifact(**scope, filename="safe.txt", artifact=artifact)
    loaded = await service.load_artifact(**scope, filename="safe.txt")
    assert loaded is not None and loaded.inline_data is not None
    assert loaded.inline_data.data == b"data"


INVALID_PATH_SEGMENT_CASES = (
    ("../escape", "must not contain traversal segments"),
    ("foo/../../bar", "must not contain traversal segments"),
    ("..", "must not contain traversal segments"),
    (".", "must not contain traversal segments"),
    ("null\x00byte", "must not contain null bytes"),
    ("", "must not be empty"),
    ("/etc/passwd", "must not be an absolute path or start with a slash"),
    ("\\leading\\backslash", "must not be an absolute path or start with a slash"),
    (r"C:\absolute", "must not be drive-qualified"),
    ("C:drive-relative", "must not be drive-qualified"),
    ("victim/sessions/s1", "must not contain reserved path segments"),
    ("victim/versions", "must not contain reserved path segments"),
)


@pytest.mark.parametrize("field", ["app_name", "user_id", "session_id"])
@pytest.mark.parametrize(("value", "match"), INVALID_PATH_SEGMENT_CASES)
async def test_every_method_rejects_ids_that_escape_their_scope(
    service: ThreadlineArtifactService, field: str, value: str, match: str
) -> None:
    scope: dict[str, Any] = {"app_name": "myapp", "user_id": "user123", field: value}
    name = "safe.txt" if field == "session_id" else "user:safe.txt"
    artifact = types.Part.from_bytes(data=b"data", mime_type="text/plain")
    calls = [
        service.save_artifact(**scope, filename=name, artifact=artifact),
        service.load_artifact(**scope, filename=name),
        service.delete_artifact(**scope, filename=name),
        service.list_artifact_keys(**scope),
        service.list_versions(**scope, filename=name),
    ]
    for call in calls:
        with pytest.raises(InputValidationError, match=match):
            await call


async def test_artifact_reference_allows_same_session_and_same_user_scope(
    service: ThreadlineArtifactService,
) -> None:
    await service.save_artifact(**SCOPE, filename="source.txt", artifact=types.Part(text="hello"))
    ref = types.Part(file_data=types.FileData(file_uri=_uri("source.txt", 0)))
    await service.save_artifact(**SCOPE, filename="ref.txt", artifact=ref)
    assert await service.load_artifact(**SCOPE, filename="ref.txt") == types.Part(text="hello")
    await service.save_artifact(
        **SCOPE, filename="user:profile.txt", artifact=types.Part(text="profile")
    )
    other = {**SCOPE, "session_id": "sess1"}
    ref = types.Part(file_data=types.FileData(file_uri=_uri("user:profile.txt", 0, None)))
    await service.save_artifact(**other, filename="ref.txt", artifact=ref)
    assert await service.load_artifact(**other, filename="ref.txt") == types.Part(text="profile")


@pytest.mark.parametrize(("app_name", "user_id"), [("app0", "attacker"), ("attacker-app", "user0")])
async def test_artifact_reference_rejects_cross_user_or_app_on_save(
    service: ThreadlineArtifactService, app_name: str, user_id: str
) -> None:
    await service.save_artifact(
        app_name="app0", user_id="user0", filename="user:secret.txt",
        artifact=types.Part(text="secret"),
    )  # fmt: skip
    ref = types.Part(file_data=types.FileData(file_uri=_uri("user:secret.txt", 0, None)))
    with pytest.raises(InputValidationError, match="same app and user scope"):
        await service.save_artifact(
            app_name=app_name, user_id=user_id, session_id="s", filename="ref.txt", artifact=ref
        )


async def test_artifact_reference_rejects_cross_session_on_save_and_a_cycle_on_load(
    service: ThreadlineArtifactService,
) -> None:
    ref = types.Part(file_data=types.FileData(file_uri=_uri("source.txt", 0, "sess1")))
    with pytest.raises(InputValidationError, match="same session scope"):
        await service.save_artifact(**SCOPE, filename="ref.txt", artifact=ref)
    loop = types.Part(file_data=types.FileData(file_uri=_uri("loop.txt", 0)))
    await service.save_artifact(**SCOPE, filename="loop.txt", artifact=loop)
    with pytest.raises(InputValidationError, match="Exceeded maximum recursion depth"):
        await service.load_artifact(**SCOPE, filename="loop.txt")


async def test_external_file_data_is_kept_as_given(service: ThreadlineArtifactService) -> None:
    external = types.Part(
        file_data=types.FileData(file_uri="gs://bucket/report.pdf", mime_type="application/pdf")
    )
    await service.save_artifact(**SCOPE, filename="report.pdf", artifact=external)
    assert await service.load_artifact(**SCOPE, filename="report.pdf") == external
    version = await service.get_artifact_version(**SCOPE, filename="report.pdf")
    assert version is not None and version.mime_type == "application/pdf"


@pytest.mark.parametrize(
    "raw",
    [
        {"inlineData": {"mimeType": "image/png", "data": "dGVzdF9pbWFnZV9kYXRh"}},
        {"inline_data": {"mime_type": "text/plain", "data": "aGVsbG8="}},
    ],
)
async def test_save_artifact_with_camel_or_snake_case_dict(
    service: ThreadlineArtifactService, raw: dict[str, Any]
) -> None:
    assert await service.save_artifact(**SCOPE, filename="uploaded", artifact=raw) == 0
    loaded = await service.load_artifact(**SCOPE, filename="uploaded")
    assert loaded is not None and loaded.inline_data is not None
    assert loaded.inline_data.mime_type in ("image/png", "text/plain")
    assert loaded.inline_data.data in (b"test_image_data", b"hello")


async def test_load_artifact_preserves_inline_data_display_name(
    service: ThreadlineArtifactService,
) -> None:
    artifact = types.Part(
        inline_data=types.Blob(
            mime_type="image/png", data=b"\x89PNG\r\n\x1a\n", display_name="My Report (final).png"
        )
    )
    await service.save_artifact(**SCOPE, filename="artifact.bin", artifact=artifact)
    assert await service.load_artifact(**SCOPE, filename="artifact.bin") == artifact


@pytest.mark.parametrize("text", ['{"key": "value"}', "some other text", "ünïcødé ✓"])
async def test_save_load_text_artifact(service: ThreadlineArtifactService, text: str) -> None:
    await service.save_artifact(
        **SCOPE, filename="data.json", artifact=types.Part.from_text(text=text)
    )
    loaded = await service.load_artifact(**SCOPE, filename="data.json")
    assert loaded is not None and loaded.text == text and loaded.inline_data is None


@pytest.mark.parametrize("filename", ["empty.txt", "user:empty.txt"])
@pytest.mark.parametrize("version", [None, 0])
async def test_save_load_empty_text_and_bytes_artifacts(
    service: ThreadlineArtifactService, filename: str, version: int | None
) -> None:
    await service.save_artifact(**SCOPE, filename=filename, artifact=types.Part.from_text(text=""))
    loaded = await service.load_artifact(**SCOPE, filename=filename, version=version)
    assert loaded is not None and loaded.text == "" and loaded.inline_data is None
    binary = "bin-" + filename
    empty = types.Part.from_bytes(data=b"", mime_type="application/pdf")
    await service.save_artifact(**SCOPE, filename=binary, artifact=empty)
    loaded = await service.load_artifact(**SCOPE, filename=binary, version=version)
    assert loaded is not None and loaded.inline_data is not None
    assert loaded.inline_data.data == b""


async def test_inline_data_without_data_is_refused(service: ThreadlineArtifactService) -> None:
    bad = types.Part(inline_data=types.Blob(mime_type="image/png", data=None))
    with pytest.raises(InputValidationError):
        await service.save_artifact(**SCOPE, filename="img.png", artifact=bad)
    assert await service.list_versions(**SCOPE, filename="img.png") == []


async def test_a_session_scoped_file_needs_a_session(service: ThreadlineArtifactService) -> None:
    with pytest.raises(InputValidationError, match="Session ID must be provided"):
        await service.save_artifact(
            app_name="app0", user_id="user0", filename="a.txt", artifact=types.Part(text="x")
        )


async def test_concurrent_saves_take_distinct_versions(service: ThreadlineArtifactService) -> None:
    saves = [
        service.save_artifact(**SCOPE, filename="report.txt", artifact=types.Part(text=f"v{i}"))
        for i in range(8)
    ]
    versions = await asyncio.gather(*saves)
    assert sorted(versions) == list(range(8))
    for version in versions:
        loaded = await service.load_artifact(**SCOPE, filename="report.txt", version=version)
        assert loaded is not None and loaded.text is not None
    texts = {
        (await service.load_artifact(**SCOPE, filename="report.txt", version=v)).text  # type: ignore[union-attr]
        for v in versions
    }
    assert texts == {f"v{i}" for i in range(8)}


async def test_a_rewind_tombstone_loads_as_absent(service: ThreadlineArtifactService) -> None:
    await service.save_artifact(**SCOPE, filename="a.bin", artifact=types.Part(text="kept"))
    tombstone = types.Part(inline_data=types.Blob(mime_type="application/octet-stream", data=b""))
    await service.save_artifact(**SCOPE, filename="a.bin", artifact=tombstone)
    assert await service.load_artifact(**SCOPE, filename="a.bin") is None
    assert await service.load_artifact(**SCOPE, filename="a.bin", version=0) == types.Part(
        text="kept"
    )


async def test_apps_are_isolated(service: ThreadlineArtifactService) -> None:
    scope = {"user_id": "user", "session_id": "session", "filename": "report.txt"}
    await service.save_artifact(app_name="app-a", artifact=types.Part(text="secret-a"), **scope)
    assert await service.load_artifact(app_name="app-b", **scope) is None
    assert await service.list_versions(app_name="app-b", **scope) == []
    assert (
        await service.save_artifact(app_name="app-b", artifact=types.Part(text="b"), **scope) == 0
    )
    await service.delete_artifact(app_name="app-b", **scope)
    assert await service.load_artifact(app_name="app-a", **scope) == types.Part(text="secret-a")


# -- what threadline adds --------------------------------------------------------------------


def _attachment_count(store: Store, app: str) -> int:
    rows = store._read(  # type: ignore[attr-defined]
        "count", lambda tx: tx.all("SELECT COUNT(*) FROM tl_attachments WHERE app = ?", (app,))
    )
    return int(rows[0][0])


async def test_an_artifact_is_an_attachment_shared_with_messages_and_kept_until_unused(
    store: Store, service: ThreadlineArtifactService
) -> None:
    data = bytes(range(256)) * 1200  # the same file in a message (a data URL) and an artifact
    url = "data:image/png;base64," + base64.b64encode(data).decode()
    message = {"id": "m1", "role": "user", "parts": [{"type": "file", "url": url}]}
    store.append_messages("app0", "user0/123", [message], user_id="user0")
    image = types.Part.from_bytes(data=data, mime_type="image/png")
    await service.save_artifact(**SCOPE, filename="photo.png", artifact=image)
    await service.save_artifact(**SCOPE, filename="user:photo.png", artifact=image)
    assert _attachment_count(store, "app0") == 1  # content-addressed: stored once
    sha = hashlib.sha256(base64.b64encode(data)).hexdigest()
    assert store.read_attachment("app0", f"sha256:{sha}") == data

    store.delete_messages("app0", "user0/123", ["m1"])  # only artifacts refer to it now
    assert _attachment_count(store, "app0") == 1
    assert await service.load_artifact(**SCOPE, filename="photo.png") == image
    await service.delete_artifact(**SCOPE, filename="photo.png")
    assert _attachment_count(store, "app0") == 1  # the user: file still holds it
    await service.delete_artifact(**SCOPE, filename="user:photo.png")
    assert _attachment_count(store, "app0") == 0  # collected with the last reference


async def test_deleting_the_adk_session_deletes_its_artifacts_not_the_users(
    store: Store, service: ThreadlineArtifactService
) -> None:
    sessions = ThreadlineSessionService(store)
    await sessions.create_session(app_name="app0", user_id="user0", session_id="123")
    await service.save_artifact(**SCOPE, filename="a.txt", artifact=types.Part(text="session"))
    await service.save_artifact(**SCOPE, filename="user:b.txt", artifact=types.Part(text="user"))
    other = {**SCOPE, "session_id": "456"}
    await service.save_artifact(**other, filename="a.txt", artifact=types.Part(text="other"))
    await sessions.delete_session(app_name="app0", user_id="user0", session_id="123")
    assert await service.list_artifact_keys(**SCOPE) == ["user:b.txt"]
    assert await service.load_artifact(**other, filename="a.txt") == types.Part(text="other")
    assert store.delete_session("app0", "user0/456") is True  # only artifacts: still deleted
    assert await service.list_artifact_keys(**other) == ["user:b.txt"]


async def test_forget_user_deletes_the_users_artifacts_and_collects_their_content(
    store: Store, service: ThreadlineArtifactService
) -> None:
    big = types.Part.from_bytes(data=b"\x01" * 300_000, mime_type="application/octet-stream")
    await service.save_artifact(**SCOPE, filename="a.bin", artifact=big)
    await service.save_artifact(**SCOPE, filename="user:b.txt", artifact=types.Part(text="cv"))
    ben = {**SCOPE, "user_id": "ben"}
    await service.save_artifact(**ben, filename="a.bin", artifact=types.Part(text="bens"))
    store.forget_user("app0", "user0")
    assert await service.list_artifact_keys(**SCOPE) == []
    assert store.list_artifacts("app0", "user0", None) == []
    assert await service.list_artifact_keys(**ben) == ["a.bin"]
    assert _attachment_count(store, "app0") == 1  # ben's text only


async def test_export_v2_and_import_carry_artifacts(
    store: Store, service: ThreadlineArtifactService
) -> None:
    png = types.Part(
        inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG", display_name="p.png")
    )
    await service.save_artifact(**SCOPE, filename="p.png", artifact=png, custom_metadata={"k": 1})
    await service.save_artifact(**SCOPE, filename="user:cv.txt", artifact=types.Part(text="cv"))
    record = json.loads(json.dumps(export_app(store, "app0")))  # JSON through and through
    assert [(a["filename"], a["version"]) for a in record["artifacts"]] == [
        ("user:cv.txt", 0),
        ("p.png", 0),
    ]
    target = threadline.connect(":memory:")
    import_records(target, [record])
    copied = ThreadlineArtifactService(target)
    assert await copied.load_artifact(**SCOPE, filename="p.png") == png
    assert await copied.list_artifact_versions(
        **SCOPE, filename="p.png"
    ) == await service.list_artifact_versions(**SCOPE, filename="p.png")
    assert target.dump_app("app0").artifacts == store.dump_app("app0").artifacts
    import_records(target, [record])  # the same again: left alone
    record["artifacts"][1]["base64"] = base64.b64encode(b"other").decode()
    with pytest.raises(InvalidArgumentError, match="already exists with other values"):
        import_records(target, [record])
    record["artifacts"][1]["base64"] = "not base64!"
    with pytest.raises(InvalidArgumentError, match=r"artifacts\[1\].base64"):
        import_records(target, [record])


async def test_the_service_opens_a_url_and_closes_what_it_opened(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    service = ThreadlineArtifactService(url)
    await service.save_artifact(**SCOPE, filename="a.txt", artifact=types.Part(text="x"))
    await service.close()
    with threadline.connect(url) as store:
        assert [a.filename for a in store.list_artifacts("app0", "user0", "user0/123")] == ["a.txt"]


async def test_a_schema_8_sqlite_store_upgrades_to_9_and_keeps_its_data(tmp_path: Any) -> None:
    path = tmp_path / "old.db"
    with threadline.connect(str(path)) as store:
        store.put_profile("app0", {"format": 1})
        store.append_messages("app0", "s", [{"id": "m", "role": "user", "parts": []}])
    con = sqlite3.connect(path)  # as version 8 left it: no tl_artifacts yet
    con.execute("DROP TABLE tl_artifacts")
    con.execute("UPDATE tl_meta SET value = '8' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    service = ThreadlineArtifactService(str(path))
    await service.save_artifact(**SCOPE, filename="a.txt", artifact=types.Part(text="x"))
    assert await service.load_artifact(**SCOPE, filename="a.txt") == types.Part(text="x")
    await service.close()
    con = sqlite3.connect(path)
    version = con.execute("SELECT value FROM tl_meta WHERE key = 'schema_version'").fetchone()
    con.close()
    assert version == ("9",)
    with threadline.connect(str(path)) as store:
        assert store.get_profile("app0") is not None
        assert store.get_message("app0", "s", "m") is not None


async def test_a_stored_reference_changed_to_another_session_is_refused_on_load(
    store: Store, service: ThreadlineArtifactService
) -> None:
    await service.save_artifact(**SCOPE, filename="source.txt", artifact=types.Part(text="a"))
    other = {**SCOPE, "session_id": "sess1"}
    await service.save_artifact(**other, filename="source.txt", artifact=types.Part(text="b"))
    ref = types.Part(file_data=types.FileData(file_uri=_uri("source.txt", 0)))
    await service.save_artifact(**SCOPE, filename="ref.txt", artifact=ref)
    [row] = store._read(  # type: ignore[attr-defined]
        "part", lambda tx: tx.all("SELECT part FROM tl_artifacts WHERE filename = 'ref.txt'")
    )
    changed = row[0].replace("/sessions/123/", "/sessions/sess1/")
    assert changed != row[0]
    sql = "UPDATE tl_artifacts SET part = ? WHERE filename = 'ref.txt'"
    store._write("tamper", lambda tx: tx.execute(sql, (changed,)))  # type: ignore[attr-defined]
    with pytest.raises(InputValidationError, match="same session scope"):
        await service.load_artifact(**SCOPE, filename="ref.txt")
