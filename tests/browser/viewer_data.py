"""The store the browser tests (and the docs screenshot) look at: app ``travel`` with

- ``lisbon`` ("Lisbon trip", user ``ana``): a chat whose first answer was regenerated (two
  branches off ``u1``; the head is on the second one), a compaction overlay covering three
  messages of the head path (one a tool call), an image attachment, a tool call on the head
  path, a memory block and state;
- ``porto`` ("Weekend in Porto"): a short linear chat, its last message with a 300×300 image
  big enough to be stored out of row (an attachment the viewer loads on demand);
- ``hostile`` ("Markup probe"): a message whose text is HTML that would run script if the viewer
  parsed it.

Run as a script to write such a store: ``python tests/browser/viewer_data.py sqlite:///x.db``.
"""

from __future__ import annotations

import base64
import random
import struct
import sys
import zlib
from typing import Any

from threadline import CompactResult, SessionManager

APP = "travel"
XSS_TEXT = (
    '<img src=x onerror="window.__pwned = 1"> and <script>window.__pwned = 2</script> <b>bold?</b>'
)


def _encode_png(rows: list[bytes], width: int, height: int) -> str:
    """RGB rows (each starting with its filter byte) as a PNG, base64."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = chunk(b"IDAT", zlib.compress(b"".join(rows)))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + idat + chunk(b"IEND", b"")
    return base64.b64encode(png).decode()


def _png(colours: list[tuple[int, int, int]], width: int = 96, height: int = 24) -> str:
    """A PNG of vertical colour bands, base64 (a real image, built here: no binary file)."""
    band = width // len(colours)
    row = b"\x00" + b"".join(bytes(colours[min(x // band, len(colours) - 1)]) for x in range(width))
    return _encode_png([row] * height, width, height)


def _noise_png(side: int = 300) -> str:
    """A square PNG of seeded noise: over 256 KiB, so the store keeps it out of row."""
    noise = random.Random(7)
    return _encode_png([b"\x00" + noise.randbytes(side * 3) for _ in range(side)], side, side)


_PNG = _png([(79, 70, 229), (124, 58, 237), (14, 116, 144), (234, 179, 8)])


def _text(role: str, text: str, mid: str, when: str) -> dict[str, Any]:
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": text}], "createdAt": when}


def _tool(mid: str, name: str, args: Any, output: Any, when: str, text: str = "") -> dict[str, Any]:
    parts: list[dict[str, Any]] = [
        {
            "type": f"tool-{name}",
            "toolCallId": f"call_{mid}",
            "state": "output-available",
            "input": args,
            "output": output,
        }
    ]
    if text:
        parts.append({"type": "text", "text": text})
    return {"id": mid, "role": "assistant", "parts": parts, "createdAt": when}


def compact(history: list[dict[str, Any]]) -> CompactResult | None:
    """The demo app's compaction: every message but the last two, summarised in markdown
    (what "Compact now" in the studio runs)."""
    if len(history) < 3:
        return None
    covered = history[:-2]
    return CompactResult(
        covered[0]["id"],
        covered[-1]["id"],
        f"**Summary** of {len(covered)} messages:\n\n- from `{covered[0]['id']}`\n"
        f"- to `{covered[-1]['id']}`",
    )


def configure(manager: SessionManager) -> SessionManager:
    """The blocks every session of the demo app has, and its compaction (the server's
    ``configure`` hook)."""
    return (
        manager.with_context("soul", provider="You are a calm, precise travel assistant.")
        .with_context("memory", description="Facts about the traveller", max_tokens=400)
        .on_compaction(compact)
    )


def populate(url: str) -> dict[str, Any]:
    """Write the demo sessions into the store at ``url``; return the ids the tests use."""
    manager = configure(SessionManager(url, app_name=APP))
    try:
        day = "2026-05-02T09:{:02d}:00.000Z".format
        manager.create("Lisbon trip", session_id="lisbon", user_id="ana", state={"trip_days": 4})
        lisbon = manager.get_session("lisbon", user_id="ana")
        lisbon.append_messages(
            [
                _text(
                    "user",
                    "I have four days in Lisbon in May and I like quiet streets. "
                    "Where should I stay?",
                    "u1",
                    day(0),
                ),
                _text(
                    "assistant",
                    "Alfama: the old Moorish quarter, all stairs, tiled façades and fado bars. "
                    "Charming, but lively at night in the summer.",
                    "a1",
                    day(1),
                ),
                _text("user", "Is Alfama loud at night?", "u1b", day(2)),
                _text(
                    "assistant", "Around the fado houses, yes, until about midnight.", "a1b", day(3)
                ),
            ]
        )
        # The first answer regenerated: a second branch off u1, which becomes the head path.
        lisbon.append_message(
            _text(
                "assistant",
                "Príncipe Real: leafy squares, independent shops and quiet evenings, "
                "ten minutes' walk from Bairro Alto.",
                "a2",
                day(4),
            ),
            parent_id="u1",
        )
        lisbon.append_messages(
            [
                _text("user", "Sounds right. Where can we eat well nearby?", "u2", day(5)),
                _tool(
                    "t1",
                    "search_restaurants",
                    {"near": "Príncipe Real", "style": "Portuguese"},
                    [
                        {"name": "Tasca do Chico", "rating": 4.6},
                        {"name": "Cervejaria Ramiro", "rating": 4.7},
                    ],
                    day(6),
                ),
                _text(
                    "assistant",
                    "Cervejaria Ramiro for seafood (book ahead), Tasca do Chico for a "
                    "small room with fado.",
                    "a3",
                    day(7),
                ),
                {
                    "id": "u3",
                    "role": "user",
                    "createdAt": day(8),
                    "parts": [
                        {
                            "type": "text",
                            "text": "Here is the colour scheme of our itinerary cards.",
                        },
                        {
                            "type": "file",
                            "mediaType": "image/png",
                            "filename": "palette.png",
                            "url": f"data:image/png;base64,{_PNG}",
                        },
                    ],
                },
                _text(
                    "assistant",
                    "Noted: indigo and violet, like the azulejos at the Gulbenkian.",
                    "a4",
                    day(9),
                ),
                _text("user", "What about a day trip? Something with a castle.", "u4", day(10)),
                _tool(
                    "t2",
                    "get_weather",
                    {"city": "Sintra", "date": "2026-05-04"},
                    {"forecast": "sunny", "high_c": 22},
                    day(11),
                    text="Sintra: Pena Palace and the Moorish Castle, 40 minutes by train from "
                    "Rossio. The forecast for Monday is sunny, 22 °C: go early.",
                ),
            ]
        )
        lisbon.add_compaction(
            "The traveller asked where to eat near Príncipe Real. A restaurant search found "
            "Tasca do Chico (4.6) and Cervejaria Ramiro (4.7); the assistant recommended Ramiro "
            "for seafood "
            "(book ahead) and Tasca do Chico for fado.",
            "u2",
            "a3",
        )
        lisbon.replace_context_block(
            "memory", "Travels with a partner in May. Prefers quiet streets. Likes seafood."
        )
        lisbon.update_state({"user:home_city": "Porto", "budget_eur": 1200})

        manager.create("Weekend in Porto", session_id="porto", user_id="ana")
        manager.append_all(
            "porto",
            [
                _text("user", "Best francesinha in Porto?", "p1", day(20)),
                _text(
                    "assistant",
                    "Café Santiago is the classic; Brasão for a lighter take.",
                    "p2",
                    day(21),
                ),
                {
                    "id": "p_photo",
                    "role": "user",
                    "createdAt": day(22),
                    "parts": [
                        {"type": "text", "text": "A photo of the queue at Café Santiago."},
                        {
                            "type": "file",
                            "mediaType": "image/png",
                            "filename": "queue.png",
                            "url": f"data:image/png;base64,{_noise_png()}",
                        },
                    ],
                },
            ],
            user_id="ana",
        )
        manager.create("Markup probe", session_id="hostile")
        manager.append_all("hostile", [_text("user", XSS_TEXT, "x1", day(30))])
    finally:
        manager.close()
    return {
        "app": APP,
        "session": "lisbon",
        "head": "t2",
        "other_leaf": "a1b",
        "branch_start": "a1",
        "overlay_from": "u2",
        "overlay_to": "a3",
    }


if __name__ == "__main__":
    print(populate(sys.argv[1]))
