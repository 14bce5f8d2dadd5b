"""Every room of the storage contract in one protocol: what a store does with the data.

:class:`threadline.store.base.Store` is this plus the store's lifecycle (``close``,
``transaction``, ``now``) and its session view (``session()``, a ``SessionStore``). The
session view holds a store through this protocol, so that the view and the contract that
returns it do not import each other.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from threadline.store._contract.artifacts import ArtifactsContract
from threadline.store._contract.content import ContentContract
from threadline.store._contract.keys import KeysContract
from threadline.store._contract.profiles import ProfilesContract
from threadline.store._contract.registry import RegistryContract
from threadline.store._contract.transfer import TransferContract
from threadline.store._contract.tree import TreeContract

__all__ = ["StoreRooms"]


@runtime_checkable
class StoreRooms(
    RegistryContract,
    TreeContract,
    ContentContract,
    KeysContract,
    ProfilesContract,
    ArtifactsContract,
    TransferContract,
    Protocol,
):
    """The sessions, tree, content, keys, profiles, artifacts and transfer rooms of the contract,
    together."""
