"""Context blocks: providers, their kinds, the per-session block manager and rendering.

>>> from threadline.context import ContextBlocks, ContextConfig, StaticContext
>>> blocks = ContextBlocks([ContextConfig("soul", provider=StaticContext("Be kind."))])
>>> blocks.render().splitlines()[1]
'SOUL [readonly]'
"""

from __future__ import annotations

from threadline.context.blocks import ContextBlocks, ContextConfig
from threadline.context.keys import entry_key, fnv1a_base36, slug
from threadline.context.kinds import (
    ContextProvider,
    ProviderKind,
    SearchProvider,
    SkillProvider,
    WritableContextProvider,
    provider_kind,
)
from threadline.context.providers import (
    CallableContext,
    DirectorySkillProvider,
    StaticContext,
    StoreContextProvider,
    StoreSearchProvider,
    StoreSkillProvider,
    as_provider,
)
from threadline.context.render import SEP, render_system_prompt, usage_percent

__all__ = [
    "SEP",
    "CallableContext",
    "ContextBlocks",
    "ContextConfig",
    "ContextProvider",
    "DirectorySkillProvider",
    "ProviderKind",
    "SearchProvider",
    "SkillProvider",
    "StaticContext",
    "StoreContextProvider",
    "StoreSearchProvider",
    "StoreSkillProvider",
    "WritableContextProvider",
    "as_provider",
    "entry_key",
    "fnv1a_base36",
    "provider_kind",
    "render_system_prompt",
    "slug",
    "usage_percent",
]
