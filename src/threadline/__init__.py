"""threadline — durable, branching, searchable conversation memory for LLM agents.

>>> import threadline
>>> session = threadline.Session.create(":memory:").for_session("chat-1")
>>> _ = session.append_message({"role": "user", "content": "Deploy on Friday?"})
>>> [hit.content for hit in session.search("deploy")]
['Deploy on Friday?']
"""

from __future__ import annotations

from threadline import messages
from threadline._session_provider import SessionProvider
from threadline._state import StateView
from threadline.aio import AsyncSession, AsyncSessionManager
from threadline.compaction import (
    create_compact_function,
    enforce_row_size,
    truncate_older_messages,
)
from threadline.context import (
    ContextConfig,
    DirectorySkillProvider,
    StaticContext,
    StoreContextProvider,
    StoreSearchProvider,
    StoreSkillProvider,
)
from threadline.errors import (
    AttachmentNotFoundError,
    BlockNotFoundError,
    BlockTooLargeError,
    CompactionError,
    HeadMovedError,
    InvalidArgumentError,
    InvalidMessageError,
    MessageNotFoundError,
    ReadOnlyBlockError,
    SessionExistsError,
    SessionNotFoundError,
    StoreError,
    ThreadlineError,
)
from threadline.manager import SessionManager
from threadline.profile import Profile
from threadline.runner import ContextView, Hooks, RunContext, Runner, TurnResult
from threadline.session import Session
from threadline.store import PostgresStore, SQLiteStore, Store, connect
from threadline.tokens import estimate_message_tokens, estimate_tokens
from threadline.tools import Tool, Toolset
from threadline.types import (
    AUTO,
    AppendResult,
    CompactContext,
    Compaction,
    CompactResult,
    ContextBlock,
    RecentHistory,
    SearchHit,
    SessionInfo,
    SessionPage,
)

__version__ = "0.1.0"

__all__ = [
    "AUTO",
    "AppendResult",
    "AsyncSession",
    "AsyncSessionManager",
    "AttachmentNotFoundError",
    "BlockNotFoundError",
    "BlockTooLargeError",
    "CompactContext",
    "CompactResult",
    "Compaction",
    "CompactionError",
    "ContextBlock",
    "ContextConfig",
    "ContextView",
    "DirectorySkillProvider",
    "HeadMovedError",
    "Hooks",
    "InvalidArgumentError",
    "InvalidMessageError",
    "MessageNotFoundError",
    "PostgresStore",
    "Profile",
    "ReadOnlyBlockError",
    "RecentHistory",
    "RunContext",
    "Runner",
    "SQLiteStore",
    "SearchHit",
    "Session",
    "SessionExistsError",
    "SessionInfo",
    "SessionManager",
    "SessionNotFoundError",
    "SessionPage",
    "SessionProvider",
    "StateView",
    "StaticContext",
    "Store",
    "StoreContextProvider",
    "StoreError",
    "StoreSearchProvider",
    "StoreSkillProvider",
    "ThreadlineError",
    "Tool",
    "Toolset",
    "TurnResult",
    "__version__",
    "connect",
    "create_compact_function",
    "enforce_row_size",
    "estimate_message_tokens",
    "estimate_tokens",
    "messages",
    "truncate_older_messages",
]
