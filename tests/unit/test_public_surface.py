"""The public surface is deliberate: what users import resolves, and every public function,
class and method shows a running example in its docstring (the doctests run in src/)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from types import ModuleType

import pytest

import threadline

# Amendment 10: these paths keep working whatever moves inside.
KEPT_PATHS = (
    "threadline",
    "threadline.messages",
    "threadline.types",
    "threadline.tokens",
    "threadline.summarizers",
    "threadline.store",
    "threadline.context",
    "threadline.compaction",
)
# Methods a user implements (protocol members), documented by their class's example.
IMPLEMENTED_BY_USERS = {"SessionProvider"}


def _public_modules() -> list[ModuleType]:
    found = [threadline]
    for info in pkgutil.walk_packages(threadline.__path__, prefix="threadline."):
        parts = info.name.split(".")[1:]
        if any(p.startswith("_") for p in parts) or info.name == "threadline.cli":
            continue
        try:
            found.append(importlib.import_module(info.name))
        except ImportError:  # an optional extra (a driver) is not installed
            continue
    return found


_STORE = "threadline.store"


def _private(module_name: str) -> bool:
    """Whether a module is internal (a name starting with ``_``): what a public module
    re-exports from one, and what a public class inherits from one, is checked with it."""
    return module_name.startswith("threadline.") and any(
        part.startswith("_") for part in module_name.split(".")[1:]
    )


def _documented(module: ModuleType) -> Iterator[tuple[str, object]]:
    for name in getattr(module, "__all__", []):
        obj = getattr(module, name)
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        # Re-exported: checked where it is defined, unless that is a private module (a split
        # class's layers, threadline.internal's names) other than a store's: a store's
        # methods implement the contract, documented (and checked) on the Store protocol.
        elsewhere = module is not threadline and obj.__module__ != module.__name__
        if elsewhere and (not _private(obj.__module__) or obj.__module__.startswith(_STORE)):
            continue
        yield f"{obj.__module__}.{name}", obj
        if not inspect.isclass(obj) or name in IMPLEMENTED_BY_USERS:
            continue
        # A class's own methods, and for a protocol those of the protocols it is made of
        # (the Store contract is declared room by room in private modules).
        members: dict[str, object] = {}
        for base in reversed(obj.__mro__):
            own = base is obj
            contract = getattr(obj, "_is_protocol", False) and getattr(base, "_is_protocol", False)
            # A layer of a split class (Session, the managers); the stores' mixins implement
            # the contract, whose methods are documented on the protocol.
            layer = _private(base.__module__) and not base.__module__.startswith(_STORE)
            if base.__module__.startswith("threadline") and (own or contract or layer):
                members.update(vars(base))
        for attr, value in members.items():
            if attr.startswith("_"):
                continue
            if isinstance(value, (classmethod, staticmethod)):
                value = value.__func__
            elif isinstance(value, property):
                value = value.fget
            if inspect.isfunction(value):
                yield f"{obj.__module__}.{name}.{attr}", value


@pytest.mark.parametrize("path", KEPT_PATHS)
def test_the_module_paths_users_import_keep_working(path: str) -> None:
    assert importlib.import_module(path).__all__


def test_every_public_module_declares_what_it_exports() -> None:
    for module in _public_modules():
        assert hasattr(module, "__all__"), module.__name__
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_every_public_function_class_and_method_has_an_example() -> None:
    seen: dict[str, object] = {}
    for module in _public_modules():
        seen.update(_documented(module))
    missing = sorted(q for q, obj in seen.items() if ">>>" not in (inspect.getdoc(obj) or ""))
    assert len(seen) > 250
    assert missing == []
