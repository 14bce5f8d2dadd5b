"""Rendering context blocks into the system prompt.

Pure functions over :class:`~threadline.types.ContextBlock` values.

>>> from threadline.types import ContextBlock
>>> soul = ContextBlock("soul", None, "You are helpful.", 4, None, False, False, False)
>>> print(render_system_prompt([soul]).splitlines()[1])
SOUL [readonly]
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from threadline.types import ContextBlock

__all__ = [
    "SEP",
    "block_tag",
    "render_block",
    "render_header",
    "render_system_prompt",
    "split_system_prompt",
    "usage_percent",
]

SEP = "═" * 46
"""The line drawn above and below every block header (46 × U+2550)."""


def usage_percent(tokens: int, max_tokens: int) -> int:
    """``tokens / max_tokens * 100`` rounded half up, in exact integer arithmetic.

    ``round()`` would round half to even (and floats drift), so 1/8 = 12.5% must give 13.

    >>> usage_percent(1, 8), usage_percent(4, 1100), usage_percent(6, 5)
    (13, 0, 120)
    """
    if max_tokens <= 0:  # a zero limit cannot be divided by; report any content as full
        return 100 if tokens > 0 else 0
    return (200 * tokens + max_tokens) // (2 * max_tokens)


def block_tag(block: ContextBlock) -> str:
    """The single kind tag of a block: searchable, loadable, readonly or writable.

    >>> block_tag(ContextBlock("m", None, "", 0, None, True, False, False))
    '[writable]'
    """
    if block.is_searchable:
        return "[searchable]"
    if block.is_skill:
        return "[loadable]"
    return "[writable]" if block.writable else "[readonly]"


def render_header(block: ContextBlock) -> str:
    """``LABEL (description) [P% — T/M tokens] [tag]`` with the optional parts left out.

    >>> render_header(ContextBlock("memory", "Facts", "x", 4, 1100, True, False, False))
    'MEMORY (Facts) [0% — 4/1100 tokens] [writable]'
    """
    header = block.label.upper()
    if block.description:
        header += f" ({block.description})"
    if block.max_tokens is not None:
        percent = usage_percent(block.tokens, block.max_tokens)
        header += f" [{percent}% — {block.tokens}/{block.max_tokens} tokens]"
    return f"{header} {block_tag(block)}"


def render_block(block: ContextBlock) -> str:
    """One block: separator, header, separator, content.

    >>> render_block(ContextBlock("a", None, "b", 1, None, False, False, False)).count(SEP)
    2
    """
    return f"{SEP}\n{render_header(block)}\n{SEP}\n{block.content}"


def _is_skipped(block: ContextBlock) -> bool:
    # Empty writable, search and skill blocks still render so their tools stay discoverable.
    return (
        not block.content and not block.writable and not block.is_searchable and not block.is_skill
    )


def render_system_prompt(blocks: Sequence[ContextBlock]) -> str:
    """Render blocks in the given order, joined by a blank line; ``""`` when none render.

    >>> render_system_prompt([])
    ''
    """
    return "\n\n".join(render_block(b) for b in blocks if not _is_skipped(b))


_HEADER = re.compile(rf"(?:\A|\n\n){SEP}\n(.+?)\n{SEP}\n", re.S)


def split_system_prompt(prompt: str) -> list[tuple[str, str]]:
    """A rendered system prompt (possibly frozen long ago) cut back into its blocks:
    ``(header, text)`` pairs, ``text`` being the block as rendered (separators, header and
    content). Text before the first block (a prompt written by hand) comes first, with an
    empty header.

    >>> soul = ContextBlock("soul", None, "Be brief.", 3, None, False, False, False)
    >>> memory = ContextBlock("memory", "Facts", "Likes tea.", 3, None, True, False, False)
    >>> prompt = render_system_prompt([soul, memory])
    >>> [(h, t.splitlines()[-1]) for h, t in split_system_prompt(prompt)]
    [('SOUL [readonly]', 'Be brief.'), ('MEMORY (Facts) [writable]', 'Likes tea.')]
    >>> split_system_prompt("You are terse.")
    [('', 'You are terse.')]
    """
    found = list(_HEADER.finditer(prompt))
    starts = [m.start() + (2 if m.start() > 0 else 0) for m in found]  # past the blank line
    pieces: list[tuple[str, str]] = []
    head = prompt[: found[0].start()] if found else prompt
    if head:
        pieces.append(("", head))
    for i, match in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(prompt)
        pieces.append((match.group(1), prompt[starts[i] : end]))
    return pieces
