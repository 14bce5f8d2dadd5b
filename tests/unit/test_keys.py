"""Keys for keyed entries: goldens and invariants."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from threadline.context.keys import entry_key, fnv1a_base36, slug

KEY = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def test_golden_keys() -> None:
    assert entry_key("no key") == "no-key-1nprufp"
    assert entry_key("Hello world") == "hello-world-os091j"
    assert entry_key("any content", title="Pirate style") == "pirate-style"


def test_slug_rules() -> None:
    assert slug("Hello, World!") == "hello-world"
    assert slug("--Already--slugged--") == "already-slugged"
    assert slug("Äpfel & Birnen") == "pfel-birnen"
    assert slug("a" * 70) == "a" * 60
    assert slug("") == ""
    assert slug("日本語") == ""


def test_slug_counts_utf16_code_units() -> None:
    # An emoji is two UTF-16 code units, so 29 emoji + "abc" uses 58 + 3 units: "a" survives
    # the 60-unit cut only as "ab".
    assert slug("😀" * 29 + "abc") == "ab"
    # A cut through a surrogate pair must not crash and drops the half.
    assert slug("a" * 59 + "😀z") == "a" * 59


def test_fnv1a_known_values() -> None:
    assert fnv1a_base36("") == "ztntfp"  # 0x811c9dc5 (the offset basis) in base 36
    assert fnv1a_base36("no key") == "1nprufp"
    # Astral characters hash as their two surrogates, exactly like JavaScript strings.
    assert fnv1a_base36("😀") == _reference_fnv([0xD83D, 0xDE00])


def test_keys_without_slug_text() -> None:
    assert entry_key("日本語") == f"entry-{fnv1a_base36('日本語')}"
    assert entry_key("x", title="!!!") == f"entry-{fnv1a_base36('!!!')}"
    # An empty title counts as no title.
    assert entry_key("no key", title="") == "no-key-1nprufp"


def _reference_fnv(units: list[int]) -> str:
    value = 0x811C9DC5
    for unit in units:
        value = ((value ^ unit) * 0x01000193) % 2**32
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, rem = divmod(value, 36)
        out = digits[rem] + out
        if value == 0:
            return out


@given(st.text(alphabet=st.characters(max_codepoint=0xFFFF, exclude_categories=["Cs"])))
def test_fnv_matches_reference_for_bmp_text(text: str) -> None:
    assert fnv1a_base36(text) == _reference_fnv([ord(c) for c in text])


@given(st.text())
def test_content_keys_are_slug_shaped(content: str) -> None:
    key = entry_key(content)
    assert KEY.match(key), key
    assert key.endswith("-" + fnv1a_base36(content))
    assert key == entry_key(content)


@given(st.text(min_size=1), st.text(), st.text())
def test_same_title_same_key(title: str, first: str, second: str) -> None:
    key = entry_key(first, title=title)
    assert key == entry_key(second, title=title)
    assert KEY.match(key), key


@given(st.text())
def test_slug_is_short_idempotent_and_clean(text: str) -> None:
    out = slug(text)
    assert len(out) <= 60
    assert slug(out) == out
    assert out == "" or KEY.match(out)
