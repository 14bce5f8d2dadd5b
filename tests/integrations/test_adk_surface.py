"""What ``threadline.integrations.adk`` exports, checked as the public-surface test checks
public modules (its names are defined in private modules, which that test does not walk)."""

from __future__ import annotations

import inspect

import threadline.integrations.adk as adk

EXPORTED = [
    "ThreadlineArtifactService",
    "ThreadlineMemoryService",
    "ThreadlineSessionService",
    "event_to_message",
    "message_to_event",
    "register_services",
    "threadline_session_id",
]


def test_the_public_names_stay() -> None:
    assert sorted(adk.__all__) == EXPORTED
    assert all(hasattr(adk, name) for name in EXPORTED)


def test_every_exported_name_and_public_method_shows_an_example() -> None:
    """The names of ``threadline.integrations.adk`` are defined in its private modules, which
    the public-surface test does not walk: the same check, here."""
    missing = []
    for name in adk.__all__:
        obj = getattr(adk, name)
        members = [(name, obj)]
        if inspect.isclass(obj):
            members += [
                (f"{name}.{attr}", value)
                for attr, value in vars(obj).items()
                if not attr.startswith("_") and inspect.isfunction(value)
            ]
        missing += [path for path, member in members if ">>>" not in (member.__doc__ or "")]
    assert missing == []
