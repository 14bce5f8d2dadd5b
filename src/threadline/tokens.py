"""Token estimation: the default heuristic and optional exact counters.

The heuristic needs nothing installed; :func:`tiktoken_counter` uses ``tiktoken`` (the
``threadline[tiktoken]`` extra) or any object with ``encode(str) -> list``.

>>> estimate_tokens("Hello world")
3
>>> estimate_message_tokens([{"role": "user", "parts": [{"type": "text", "text": "Hello world"}]}])
7
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from threadline.errors import ThreadlineError
from threadline.messages import compact_json, is_tool_part
from threadline.types import ContextBlock, Message

MESSAGE_OVERHEAD = 4
"""Tokens added per message for role and framing."""

MEDIA_PART_TOKENS = 1000
"""Tokens counted for each media part (``file``: an image, audio clip, PDF...), whatever its
size: providers bill media by item and resolution, never by the length of its base64, and a
1,000-token allowance covers a high-detail image tile set or a short clip. Pass your own
``token_counter`` where the provider's exact cost matters."""

_TEXT_PART_TYPES = ("text", "reasoning")
_MEDIA_PART_TYPES = ("file", "image")


class TokenCounter(Protocol):
    """A session-level counter, called with keywords ``messages``, ``system_prompt``, ``blocks``.

    :func:`default_token_counter` is one; so is what :func:`tiktoken_counter` returns.

    >>> counter: TokenCounter = default_token_counter
    >>> counter(messages=[], system_prompt="Hello world", blocks=[])
    3
    """

    def __call__(
        self, *, messages: list[Message], system_prompt: str, blocks: list[ContextBlock]
    ) -> int: ...


MessageCounter = Callable[[list[Message]], int]
"""A per-message-list counter, as taken by ``create_compact_function(token_counter=...)``."""


class Encoder(Protocol):
    """Anything tiktoken-compatible: ``encode(text)`` returns a sized sequence of tokens.

    >>> class Words:
    ...     def encode(self, text): return text.split()
    >>> count = exact_message_counter(Words())
    >>> count([{"role": "user", "parts": [{"type": "text", "text": "a b"}]}])
    6
    """

    def encode(self, text: str) -> Sequence[Any]:
        """The tokens of ``text``; only their number matters to threadline.

        >>> class Chars:
        ...     def encode(self, text): return list(text)
        >>> tiktoken_counter(Chars())(messages=[], system_prompt="Hello", blocks=[])
        5
        """
        ...


def estimate_tokens(text: str) -> int:
    """Estimate tokens as ``ceil(max(len/4, words*1.3))``; 0 for empty text.

    Integer arithmetic avoids float error (50 words must give 65, not 66).

    >>> estimate_tokens("word " * 50), estimate_tokens("x" * 400), estimate_tokens("")
    (65, 100, 0)
    """
    if not text:
        return 0
    words = len(text.split())
    by_chars = -(-len(text) // 4)
    by_words = -(-words * 13 // 10)
    return max(by_chars, by_words)


def _as_text(value: Any) -> str:
    """Strings as-is; other values as compact JSON; None as nothing."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return compact_json(value)
    except (TypeError, ValueError):  # circular structures and the like: count their repr
        return repr(value)


def _part_texts(part: object) -> list[str]:
    """The strings of a part that count towards its size (empty for unknown parts)."""
    if not isinstance(part, dict):
        return []
    if part.get("type") in _TEXT_PART_TYPES:
        text = part.get("text")
        return [text] if isinstance(text, str) else []
    if is_tool_part(part):
        return [_as_text(part.get("input")), _as_text(part.get("output"))]
    return []


def _count_messages(messages: Iterable[object], count: Callable[[str], int]) -> int:
    total = 0
    for message in messages:
        total += MESSAGE_OVERHEAD
        parts = message.get("parts") if isinstance(message, dict) else None
        if not isinstance(parts, list):
            continue
        for part in parts:
            if isinstance(part, dict) and part.get("type") in _MEDIA_PART_TYPES:
                total += MEDIA_PART_TOKENS
                continue
            total += sum(count(text) for text in _part_texts(part) if text)
    return total


def estimate_message_tokens(messages: Iterable[Message]) -> int:
    """Heuristic size of messages: 4 each plus their text, reasoning and tool input/output,
    and :data:`MEDIA_PART_TOKENS` per media part.

    >>> estimate_message_tokens([{"role": "user", "parts": [{"type": "text", "text": "x" * 400}]}])
    104
    """
    return _count_messages(messages, estimate_tokens)


def default_token_counter(
    *, messages: Iterable[Message], system_prompt: str = "", blocks: Iterable[ContextBlock] = ()
) -> int:
    """Session counter used when none is given: messages plus the system prompt (heuristic).

    ``blocks`` are already rendered into ``system_prompt`` and are not counted again.

    >>> default_token_counter(messages=[], system_prompt="Hello world")
    3
    """
    return estimate_message_tokens(messages) + estimate_tokens(system_prompt)


def _resolve_encoder(encoding: str | Encoder) -> Encoder:
    if not isinstance(encoding, str):
        if not callable(getattr(encoding, "encode", None)):
            raise TypeError("encoder must be an encoding name or have an encode(str) method")
        return encoding
    try:
        import tiktoken  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        raise ThreadlineError(
            "exact token counting needs tiktoken: pip install 'threadline[tiktoken]'"
        ) from exc
    return _PlainText(tiktoken.get_encoding(encoding))


class _PlainText:
    """Encode user text as plain text: tiktoken raises on special-token strings by default."""

    def __init__(self, encoding: Any) -> None:
        self._encoding = encoding

    def encode(self, text: str) -> Sequence[int]:
        tokens: Sequence[int] = self._encoding.encode(text, disallowed_special=())
        return tokens


def exact_message_counter(encoder: str | Encoder = "cl100k_base") -> MessageCounter:
    """Per-message-list counter using a tokenizer: 4 per message plus encoded part text.

    >>> class Chars:
    ...     def encode(self, text): return list(text)
    >>> count = exact_message_counter(Chars())
    >>> count([{"role": "user", "parts": [{"type": "text", "text": "abc"}]}])
    7
    """
    enc = _resolve_encoder(encoder)

    def count(messages: list[Message]) -> int:
        return _count_messages(messages, lambda text: len(enc.encode(text)))

    return count


def tiktoken_counter(encoding: str | Encoder = "cl100k_base") -> TokenCounter:
    """Session counter using a tiktoken encoding name or any tiktoken-compatible encoder.

    Raises ``ThreadlineError`` naming the ``threadline[tiktoken]`` extra if a name is given
    and tiktoken is not installed.

    >>> class Chars:
    ...     def encode(self, text): return list(text)
    >>> tiktoken_counter(Chars())(messages=[], system_prompt="abc", blocks=[])
    3
    """
    enc = _resolve_encoder(encoding)
    count_messages = exact_message_counter(enc)

    def count(
        *,
        messages: list[Message],
        system_prompt: str = "",
        blocks: list[ContextBlock] | None = None,
    ) -> int:
        prompt = len(enc.encode(system_prompt)) if system_prompt else 0
        return count_messages(list(messages)) + prompt

    return count


__all__ = [
    "MEDIA_PART_TOKENS",
    "MESSAGE_OVERHEAD",
    "Encoder",
    "MessageCounter",
    "TokenCounter",
    "default_token_counter",
    "estimate_message_tokens",
    "estimate_tokens",
    "exact_message_counter",
    "tiktoken_counter",
]
