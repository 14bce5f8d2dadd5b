"""The complete profile document docs/profiles.md publishes is one this version reads, with
every key the format has (api.md clarification 27: the docs publish one complete example)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from threadline import Profile
from threadline._profile_check import _BLOCK_KEYS, _COMPACTION_KEYS, _TOP_KEYS, BLOCK_KINDS

DOC = Path(__file__).resolve().parents[2] / "docs" / "profiles.md"


def _example() -> dict:
    found = re.search(r"```json\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert found, "docs/profiles.md has no ```json example"
    return json.loads(found.group(1))


def test_the_published_example_is_valid_and_complete() -> None:
    document = _example()
    profile = Profile.from_dict(document)
    assert set(document) == set(_TOP_KEYS) - {"version", "updated_at"}
    assert {b["kind"] for b in profile.blocks} == set(BLOCK_KINDS)
    used = {key for block in document["blocks"] for key in block}
    every = {"label", "kind", "description", "max_tokens"}.union(*_BLOCK_KEYS.values())
    assert used == every
    assert set(document["compaction"]) == set(_COMPACTION_KEYS)
