""" "What the model sees": :class:`ContextView`, built by ``Runner.context`` from the very steps
a run starts with (``threadline._run_turn.build_context``), without calling a model. Exported
by ``threadline.runner``.

>>> import threadline
>>> manager = threadline.SessionManager(":memory:").with_context("soul", provider="Be brief.")
>>> runner = threadline.Runner(manager, lambda s, m, t: "ok", runs=1)
>>> _ = runner.run("first", session_id="s"); _ = runner.run("second", session_id="s")
>>> view = runner.context("s")
>>> [m["parts"][0]["text"] for m in view.messages], len(view.dropped)
(['second', 'ok'], 2)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from threadline._run_turn import RunLimits, build_context, input_message
from threadline._turns import counts_of
from threadline.context.render import split_system_prompt
from threadline.session import Session
from threadline.types import ContextBlock, Message

__all__ = ["ContextView", "PromptBlock", "context_view"]


@dataclass(frozen=True)
class PromptBlock:
    """One block of the system prompt as the model gets it: its ``label`` (``None`` for text
    that is no block's), the rendered ``text`` and its ``tokens``.

    >>> PromptBlock("soul", "Be brief.", 3).tokens
    3
    """

    label: str | None
    text: str
    tokens: int


@dataclass(frozen=True)
class ContextView:
    """The context a run of ``Runner.run`` would send now: the frozen ``system`` prompt (and
    its ``blocks``), the history window (``messages``, oldest first, each with its count in
    ``message_tokens``), what falls out of it (``dropped``, ``dropped_tokens``), the input
    counted when one was given (``input_tokens``), and the runner's ``runs`` and
    ``max_context_tokens`` (the budget). Counts use the session's ``token_counter`` (else the
    heuristic of ``threadline.tokens``), as the run's window does. With ``memory=`` on the
    runner a run would first summarise ``dropped`` into an overlay (not done here).

    >>> view = ContextView("s", "", [], 0, [], [], [], [], 0, None, None)
    >>> view.total_tokens, view.history_tokens
    (0, 0)
    """

    session_id: str
    system: str
    blocks: list[PromptBlock]
    system_tokens: int
    messages: list[Message]
    message_tokens: list[int]
    dropped: list[Message]
    dropped_tokens: list[int]
    input_tokens: int
    runs: int | None
    max_context_tokens: int | None

    @property
    def history_tokens(self) -> int:
        """Tokens of the window's messages.

        >>> ContextView("s", "", [], 0, [], [3, 4], [], [], 0, None, None).history_tokens
        7
        """
        return sum(self.message_tokens)

    @property
    def total_tokens(self) -> int:
        """System prompt + input + window: what counts against ``max_context_tokens``.

        >>> ContextView("s", "", [], 5, [], [3], [], [], 4, None, 100).total_tokens
        12
        """
        return self.system_tokens + self.input_tokens + self.history_tokens

    def to_dict(self, *, dropped_limit: int | None = None) -> dict[str, Any]:
        """A JSON-able summary (message ids, roles and counts; not their content).
        ``dropped_limit``: list only the newest that many of ``dropped`` (a long session drops
        most of itself); ``dropped_count`` and ``totals.dropped`` always cover all of them.

        >>> view = ContextView("s", "", [], 0, [], [], [{"id": "a"}, {"id": "b"}], [2, 3], 0,
        ...                    2, None)
        >>> view.to_dict()["totals"]
        {'system': 0, 'input': 0, 'history': 0, 'total': 0, 'budget': None, 'dropped': 5}
        >>> [m["id"] for m in view.to_dict(dropped_limit=1)["dropped"]]
        ['b']
        """
        shown = len(self.dropped) if dropped_limit is None else max(dropped_limit, 0)
        first = len(self.dropped) - min(shown, len(self.dropped))
        return {
            "session_id": self.session_id,
            "system": {
                "blocks": [
                    {"label": b.label, "tokens": b.tokens, "text": b.text} for b in self.blocks
                ],
                "tokens": self.system_tokens,
            },
            "messages": [
                {"id": m.get("id"), "role": m.get("role"), "tokens": t}
                for m, t in zip(self.messages, self.message_tokens, strict=True)
            ],
            "dropped": [
                {"id": m.get("id"), "role": m.get("role"), "tokens": t}
                for m, t in zip(self.dropped[first:], self.dropped_tokens[first:], strict=True)
            ],
            "dropped_count": len(self.dropped),
            "totals": {
                "system": self.system_tokens,
                "input": self.input_tokens,
                "history": self.history_tokens,
                "total": self.total_tokens,
                "budget": self.max_context_tokens,
                "dropped": sum(self.dropped_tokens),
            },
            "runs": self.runs,
            "max_context_tokens": self.max_context_tokens,
        }


def _label(header: str, blocks: list[ContextBlock]) -> str | None:
    """The block a rendered header belongs to (headers show the label upper-cased)."""
    if not header:
        return None
    for block in blocks:
        name = block.label.upper()
        if header == name or header.startswith(name + " "):
            return block.label
    return header.split(" ", 1)[0].lower()


def context_view(limits: RunLimits, session: Session, user_input: Any = None) -> ContextView:
    """The :class:`ContextView` of ``session`` for a runner (``Runner.context``).

    >>> from types import SimpleNamespace
    >>> import threadline
    >>> limits = SimpleNamespace(runs=None, max_context_tokens=50, memory=None)
    >>> context_view(limits, threadline.Session.create(":memory:"), "hi").input_tokens
    6
    """
    user = input_message(user_input, "") if user_input is not None else None
    system, window = build_context(limits, session, user)
    counts = counts_of(session._settings.token_counter)
    known = session.get_context_blocks() if system else []
    blocks = [
        PromptBlock(_label(header, known), text, counts.text(text))
        for header, text in split_system_prompt(system)
    ]
    return ContextView(
        session_id=session.session_id,
        system=system,
        blocks=blocks,
        system_tokens=counts.text(system),
        messages=window.kept,
        message_tokens=[counts.messages([m]) for m in window.kept],
        dropped=window.dropped,
        dropped_tokens=[counts.messages([m]) for m in window.dropped],
        input_tokens=counts.messages([user]) if user is not None else 0,
        runs=limits.runs,
        max_context_tokens=limits.max_context_tokens,
    )
