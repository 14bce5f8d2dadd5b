"""Compaction: read-time summary overlays, the default compaction function, micro-compaction.

>>> from threadline.compaction import create_compact_function, truncate_older_messages
>>> fn = create_compact_function(lambda prompt: "## Topic\\n...")
"""

from __future__ import annotations

from threadline.compaction.function import (
    AsyncCompactFunction,
    CompactFunction,
    Summarize,
    build_summary_prompt,
    create_async_compact_function,
    create_compact_function,
    plan_compaction,
)
from threadline.compaction.micro import (
    enforce_row_size,
    shrink_value,
    truncate_older_messages,
    truncate_tool_output,
)
from threadline.compaction.overlays import (
    OverlaySpan,
    apply_overlays,
    earliest_visible_overlay,
    overlay_message,
    superseded,
    visible_overlays,
)

__all__ = [
    "AsyncCompactFunction",
    "CompactFunction",
    "OverlaySpan",
    "Summarize",
    "apply_overlays",
    "build_summary_prompt",
    "create_async_compact_function",
    "create_compact_function",
    "earliest_visible_overlay",
    "enforce_row_size",
    "overlay_message",
    "plan_compaction",
    "shrink_value",
    "superseded",
    "truncate_older_messages",
    "truncate_tool_output",
    "visible_overlays",
]
