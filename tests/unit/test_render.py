"""System prompt rendering: golden output, skip rules, percentages."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from hypothesis import given
from hypothesis import strategies as st

from threadline.context import ContextBlocks, ContextConfig, StaticContext
from threadline.context.render import SEP, render_header, render_system_prompt, usage_percent
from threadline.types import ContextBlock


def block(
    label: str = "b",
    content: str = "",
    *,
    description: str | None = None,
    tokens: int = 0,
    max_tokens: int | None = None,
    writable: bool = False,
    skill: bool = False,
    search: bool = False,
) -> ContextBlock:
    return ContextBlock(label, description, content, tokens, max_tokens, writable, skill, search)


class Memory:
    """A minimal writable provider (user-defined, duck-typed)."""

    def __init__(self, text: str | None = None) -> None:
        self.text = text

    def get(self) -> str | None:
        return self.text

    def set(self, content: str) -> None:
        self.text = content


def test_golden_example_byte_for_byte(formats_golden: str) -> None:
    blocks = ContextBlocks(
        [
            ContextConfig("soul", provider=StaticContext("You are helpful.")),
            ContextConfig(
                "memory", description="Facts", max_tokens=1100, provider=Memory("likes TypeScript")
            ),
        ]
    )
    assert blocks.render() == formats_golden
    assert blocks.get("memory") is not None and blocks.get("memory").tokens == 4  # type: ignore[union-attr]


def test_separator() -> None:
    assert SEP == "\u2550" * 46


def test_no_blocks_renders_empty() -> None:
    assert render_system_prompt([]) == ""


def test_only_empty_readonly_blocks_are_skipped() -> None:
    rendered = render_system_prompt(
        [
            block("gone"),
            block("mem", writable=True),
            block("docs", skill=True),
            block("notes", search=True),
            block("spaces", " "),
        ]
    )
    assert "GONE" not in rendered
    for header in ("MEM [writable]", "DOCS [loadable]", "NOTES [searchable]", "SPACES [readonly]"):
        assert header in rendered
    assert rendered.count(SEP) == 8
    assert rendered.endswith(f"SPACES [readonly]\n{SEP}\n ")


def test_empty_block_layout() -> None:
    assert render_system_prompt([block("mem", writable=True)]) == f"{SEP}\nMEM [writable]\n{SEP}\n"


def test_exactly_one_tag_with_precedence() -> None:
    assert render_header(block("a", writable=True, search=True, skill=True)) == "A [searchable]"
    assert render_header(block("a", writable=True, skill=True)) == "A [loadable]"
    assert render_header(block("a", skill=True)) == "A [loadable]"
    assert render_header(block("a")) == "A [readonly]"


def test_header_parts() -> None:
    assert render_header(block("my notes", description="Things")) == "MY NOTES (Things) [readonly]"
    assert render_header(block("m", description="")) == "M [readonly]"
    assert (
        render_header(block("m", "x", tokens=55, max_tokens=100, writable=True))
        == "M [55% — 55/100 tokens] [writable]"
    )


def test_percentage_rounds_half_up() -> None:
    assert usage_percent(1, 8) == 13  # 12.5 → 13 (round() would give 12)
    assert usage_percent(5, 200) == 3  # 2.5 → 3
    assert usage_percent(1, 200) == 1  # 0.5 → 1
    assert usage_percent(1, 201) == 0  # 0.497...
    assert usage_percent(3, 8) == 38
    assert usage_percent(0, 10) == 0
    assert usage_percent(6, 5) == 120


@given(st.integers(min_value=0, max_value=10**7), st.integers(min_value=1, max_value=10**7))
def test_percentage_matches_decimal_half_up(tokens: int, max_tokens: int) -> None:
    expected = (Decimal(tokens) * 100 / Decimal(max_tokens)).quantize(
        Decimal(1), rounding=ROUND_HALF_UP
    )
    assert usage_percent(tokens, max_tokens) == int(expected)


def test_stored_value_over_limit_still_renders() -> None:
    big = "word " * 20  # 26 tokens
    blocks = ContextBlocks([ContextConfig("memory", max_tokens=20, provider=Memory(big))])
    assert "[130% — 26/20 tokens] [writable]" in blocks.render()


def test_blocks_render_in_registration_order() -> None:
    blocks = ContextBlocks(
        [ContextConfig(label, provider=label.upper()) for label in ("zeta", "alpha", "mid")]
    )
    rendered = blocks.render()
    assert rendered.index("ZETA") < rendered.index("ALPHA") < rendered.index("MID")
