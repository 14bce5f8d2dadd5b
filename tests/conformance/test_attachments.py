"""Nothing is silently lost for size: long strings go out of row as deduplicated attachments
and come back byte-identical; ``"truncate"`` and ``"error"`` are explicit choices; every
policy refuses a message over ``max_message_bytes``."""

from __future__ import annotations

import base64
import os
from typing import Any

import pytest

import threadline
from threadline import Session, SessionManager
from threadline._attachments import ATTACH_MIN_BYTES, MARKER
from threadline.errors import InvalidArgumentError, InvalidMessageError, MessageTooLargeError
from threadline.messages import normalize_message

MB = 1024 * 1024


def _image(size: int, seed: int = 0) -> str:
    raw = (bytes([seed % 256]) + os.urandom(15)) * (size // 16)
    return "data:image/png;base64," + base64.b64encode(raw).decode()


def _file_message(url: str, text: str = "look at this") -> dict[str, Any]:
    return {
        "role": "user",
        "parts": [
            {"type": "text", "text": text},
            {"type": "file", "mediaType": "image/png", "url": url},
        ],
    }


def _counts(store: Any) -> tuple[int, int, int]:
    tables = ("tl_attachments", "tl_attachment_chunks", "tl_message_refs")
    return tuple(_count(store, t) for t in tables)  # type: ignore[return-value]


def _count(store: Any, table: str) -> int:
    return int(store._read("count", lambda tx: tx.one(f"SELECT COUNT(*) FROM {table}"))[0])


def test_large_messages_round_trip_byte_identical(store: Any) -> None:
    session = Session.create(store).for_session("big")
    text = "lorem ipsum dolor " * (5 * MB // 18) + " zanzibar at the very end"
    image = _image(20 * MB)
    tool_output = {"rows": ["x" * 1000] * 2048}
    written = [
        session.append_message({"role": "user", "content": text}),
        session.append_message(_file_message(image)),
        session.append_message(
            {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool-query",
                        "toolCallId": "c1",
                        "state": "output-available",
                        "input": {"sql": "select 1"},
                        "output": "y" * (2 * MB),
                    },
                    {"type": "text", "text": str(tool_output)[:100]},
                ],
            }
        ),
    ]
    assert session.get_history() == written
    assert [store.get_message("default", "big", m["id"]) for m in written] == written
    assert store.get_head("default", "big") == written[-1]
    assert session.get_history(limit=2) == written[1:]


def test_the_same_image_in_two_sessions_is_stored_once_and_collected_with_the_last_use(
    store: Any,
) -> None:
    image = _image(20 * MB, seed=7)
    a = Session.create(store).for_session("a").append_message(_file_message(image))
    b = Session.create(store).for_session("b").append_message(_file_message(image))
    attachments, chunks, refs = _counts(store)
    assert (attachments, refs) == (1, 2)
    assert chunks == -(-len(image.split(",", 1)[1]) // MB)  # the base64 payload, as written
    store.delete_messages("default", "a", [a["id"]])
    assert _counts(store)[0] == 1
    assert Session.create(store).for_session("b").get_history()[0] == b
    store.delete_messages("default", "b", [b["id"]])
    assert _counts(store) == (0, 0, 0)


@pytest.mark.parametrize("how", ["clear", "delete_session", "forget_user", "purge", "update"])
def test_every_way_of_removing_a_message_collects_its_attachments(store: Any, how: str) -> None:
    manager = SessionManager(store)
    manager.create("s", user_id="u")
    stored = manager.append("s", _file_message(_image(MB)), user_id="u")
    assert _counts(store)[0] == 1
    if how == "clear":
        manager.clear_messages("s", user_id="u")
    elif how == "delete_session":
        manager.delete("s", user_id="u")
    elif how == "forget_user":
        manager.forget_user("u")
    elif how == "purge":
        store.purge_sessions("default", before=store.now() + __import__("datetime").timedelta(1))
    else:
        store.update_message("default", "s", {**stored, "parts": [{"type": "text", "text": "x"}]})
    assert _counts(store) == (0, 0, 0)


def test_references_on_request_and_read_attachment(store: Any) -> None:
    session = Session.create(store).for_session("s")
    image = _image(MB)
    long_text = "é" * ATTACH_MIN_BYTES
    session.append_message(_file_message(image, text=long_text))
    parts = session.get_history(attachments="ref")[0]["parts"]
    text_ref, image_ref = parts[0]["text"], parts[1]["url"]
    assert text_ref[MARKER] and text_ref["kind"] == "text"
    assert image_ref["kind"] == "bytes" and image_ref["prefix"] == "data:image/png;base64,"
    assert session.read_attachment(text_ref) == long_text
    raw = session.read_attachment(image_ref)
    assert isinstance(raw, bytes) and base64.b64encode(raw).decode() == image.split(",", 1)[1]
    assert session.read_attachment("sha256:" + image_ref[MARKER]) == raw
    other_app = Session(store, app_name="other", session_id="s")
    with pytest.raises(InvalidArgumentError):
        other_app.read_attachment(image_ref)  # attachments are readable only within their app


def test_odd_data_urls_and_bare_base64_come_back_byte_for_byte(store: Any) -> None:
    session = Session.create(store).for_session("s")
    odd = "data:image/png;base64," + "QUJD\n" * (ATTACH_MIN_BYTES // 4)  # newlines: not canonical
    quoted = 'data:text/plain;base64,"' + "\\é" * ATTACH_MIN_BYTES  # not base64 at all
    bare = "QUJD" * ATTACH_MIN_BYTES
    written = [session.append_message(_file_message(url)) for url in (odd, quoted, bare)]
    assert session.get_history() == written
    refs = [m["parts"][1]["url"] for m in session.get_history(attachments="ref")]
    assert [r["kind"] for r in refs] == ["bytes", "text", "text"]
    assert session.read_attachment(refs[0]) == b"ABC" * (ATTACH_MIN_BYTES // 4)
    assert session.read_attachment(refs[2]) == bare


def test_a_long_text_is_found_by_a_word_near_its_end(store: Any) -> None:
    session = Session.create(store).for_session("s")
    text = "ordinary words again " * (5 * MB // 21) + "the password is xylophonequartz"
    written = session.append_message({"role": "user", "content": text})
    hits = session.search("xylophonequartz")
    assert [h.id for h in hits] == [written["id"]]
    assert len(hits[0].content) <= 2002 and "xylophonequartz" in hits[0].content
    assert [h.id for h in session.search('"the password is"')] == [written["id"]]
    assert [h.id for h in session.search("ordinary xylophonequartz")] == [written["id"]]


def test_policies_truncate_and_error_and_the_hard_cap(store_url: str) -> None:
    big = {"role": "user", "content": "z" * (2 * MB)}
    with threadline.connect(store_url, size_policy="error") as strict:
        with pytest.raises(MessageTooLargeError):
            Session.create(strict).for_session("s").append_message(big)
        assert strict.get_path("default", "s") == []
        loose = Session.create(strict, size_policy="truncate").for_session("t")
        kept = loose.append_message(big)
        assert len(kept["parts"][0]["text"]) < 2000
    with threadline.connect(store_url, max_message_bytes=MB) as capped:
        for policy in ("attach", "truncate", "error"):
            session = Session.create(capped, size_policy=policy).for_session(policy)  # type: ignore[arg-type]
            with pytest.raises(MessageTooLargeError):
                session.append_message(big)
        assert SessionManager(capped, max_message_bytes=4 * MB).append("m", big)


def test_size_options_in_the_url(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}?size_policy=error&max_message_bytes=5000000"
    with threadline.connect(url) as store, pytest.raises(MessageTooLargeError):
        Session.create(store).append_message({"role": "user", "content": "z" * (2 * MB)})
    with pytest.raises(InvalidArgumentError):
        threadline.connect(":memory:", size_policy="shrink")


def test_the_reserved_key_is_refused(store: Any) -> None:
    message = normalize_message({"role": "user", "content": "hi"})
    message["metadata"] = {"x": {MARKER: "0" * 64, "kind": "text", "bytes": 1}}
    with pytest.raises(InvalidMessageError):
        store.append_messages("default", "s", [message])


def test_attaching_is_decided_per_string_whatever_the_message_size(store: Any) -> None:
    # The encoder skips the walk for attachments when the whole JSON is too short to hold a
    # long string and has no reference key: on both sides of that line, what is attached
    # is exactly the strings of ATTACH_MIN_BYTES or more.
    session = Session.create(store).for_session("edges")
    pieces = [{"type": "text", "text": "y" * (ATTACH_MIN_BYTES // 4)} for _ in range(6)]
    many = session.append_message({"role": "user", "parts": pieces})  # JSON over the line
    one = session.append_message({"role": "user", "content": "z" * ATTACH_MIN_BYTES})
    short = session.append_message({"role": "user", "content": "z" * (ATTACH_MIN_BYTES - 1)})
    quoted = session.append_message({"role": "user", "content": f'{{"{MARKER}": 1}}'})
    assert _counts(store)[0] == 1  # only the one string of ATTACH_MIN_BYTES
    history = {m["id"]: m for m in session.get_history()}
    assert history[many["id"]]["parts"] == pieces
    assert history[one["id"]]["parts"][0]["text"] == "z" * ATTACH_MIN_BYTES
    assert history[short["id"]]["parts"][0]["text"] == "z" * (ATTACH_MIN_BYTES - 1)
    assert history[quoted["id"]]["parts"][0]["text"] == f'{{"{MARKER}": 1}}'


def test_token_estimates_count_media_per_item(store: Any) -> None:
    from threadline.tokens import estimate_message_tokens

    small = normalize_message(_file_message(_image(1024)))
    large = normalize_message(_file_message(_image(4 * MB)))
    assert estimate_message_tokens([large]) == estimate_message_tokens([small]) < 2000


def test_messages_with_new_attachments_append_across_index_batches(store: Any) -> None:
    """Regression: SQLite indexes messages in batches of 64, reading each one's text back with
    its attachments. The append that filled a batch indexed it before storing its own new
    attachments, so it failed (``AttachmentNotFoundError``), and so did every retry."""
    session = Session.create(store).for_session("pics")
    written = [
        session.append_message(_file_message(_image(ATTACH_MIN_BYTES + 64, seed=n), f"pic{n}"))
        for n in range(130)
    ]
    assert _count(store, "tl_attachments") == 130
    assert session.get_history() == written
    for n in (0, 63, 64, 127, 129):
        assert [h.id for h in session.search(f"pic{n}")] == [written[n]["id"]]


def test_an_import_of_messages_with_attachments_crosses_index_batches(store: Any) -> None:
    """The same, for an import writing many messages with attachments in one transaction."""
    from threadline.export import export_sessions, import_sessions

    session = Session.create(store).for_session("album")
    for n in range(70):
        session.append_message(_file_message(_image(ATTACH_MIN_BYTES + 64, seed=n), f"img{n}"))
    records = list(export_sessions(store, "default", session_ids=["album"]))
    assert import_sessions(store, records, app="copy") == ["album"]
    copy = Session(store, app_name="copy", session_id="album")
    assert copy.get_history() == session.get_history()
    assert [h.id for h in copy.search("img65")] == [session.get_history()[65]["id"]]
