"""One run's steps over a session, shared by ``threadline.Runner`` and its async twin
(``threadline._async_runner.AsyncRunner``): :class:`Turn` holds what the run built so far and
does each step; the runners only order the steps and run the model, the hooks and ``memory``
(sync, or awaited). Also the run's public values, :class:`TurnResult` and :class:`RunContext`
(exported by ``threadline.runner``).

>>> from types import SimpleNamespace
>>> import threadline
>>> limits = SimpleNamespace(runs=None, max_context_tokens=None, memory=None, read_only_scopes=())
>>> turn = Turn(limits, threadline.Session.create(":memory:"), "hi")
>>> turn.load_state(); turn.start()
>>> turn.take("Hello!")
[]
>>> [m["role"] for m in turn.commit().messages]
['user', 'assistant']
"""

from __future__ import annotations

import copy
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from threadline._run_edits import RunEdits
from threadline._session_compaction import check_compact_result, overlay_ends
from threadline._settings import async_compactor
from threadline._state import split_delta, validate_delta
from threadline._turns import (
    ContextWindow,
    as_messages,
    check_same_ids,
    context_window,
    counts_of,
    fixed_cost,
    pending_calls,
)
from threadline.compaction.overlays import apply_overlays
from threadline.errors import InvalidArgumentError
from threadline.messages import is_overlay_id, normalize_message
from threadline.session import Session
from threadline.tools import Toolset, build_context_tools
from threadline.types import Compaction, Message

__all__ = [
    "RunContext",
    "RunLimits",
    "Turn",
    "TurnResult",
    "build_context",
    "input_message",
    "run_window",
    "tag",
]

logger = logging.getLogger("threadline.runner")


@dataclass
class TurnResult:
    """What a run produced: the final assistant message, every message appended (the input
    first), the session id, the messages that fell out of the context window, and why the
    run stopped: ``"done"`` (the model answered without calling a threadline tool) or
    ``"max_steps"`` (its ``max_steps``-th call still called one; those calls were executed,
    their results stored, and the model not called again).

    >>> result = TurnResult(output=None, messages=[], session_id="s")
    >>> result.overflow, result.stop_reason
    ([], 'done')
    """

    output: Message | None
    messages: list[Message]
    session_id: str
    overflow: list[Message] = field(default_factory=list)
    stop_reason: Literal["done", "max_steps"] = "done"


class RunContext:
    """What a hook sees: the session id, user, the input message, and state it may read and
    change (changes are committed with the run's messages, in its one transaction).

    >>> ctx = RunContext("s", None, {"role": "user", "parts": []}, lambda key: None)
    >>> ctx.set_state("visits", 1); ctx.get_state("visits")
    1
    """

    def __init__(
        self,
        session_id: str,
        user_id: str | None,
        input: Message,
        read_state: Callable[[str], Any],
    ) -> None:
        self.session_id = session_id
        self.user_id = user_id
        self.input = input
        self.delta: dict[str, Any] = {}
        self._read_state = read_state

    def get_state(self, key: str, default: Any = None) -> Any:
        """The value of ``key``: this run's pending change first, else the stored state.

        >>> RunContext("s", None, {}, lambda key: "fr").get_state("lang")
        'fr'
        """
        value = self.delta[key] if key in self.delta else self._read_state(key)
        return default if value is None else value

    def set_state(self, key: str, value: Any) -> None:
        """Change ``key`` (``app:``/``user:``/``temp:`` scoping as in ``update_state``);
        stored after the run.

        >>> ctx = RunContext("s", None, {}, lambda key: None)
        >>> ctx.set_state("k", 2); ctx.delta
        {'k': 2}
        """
        self.delta[key] = value


class RunLimits(Protocol):
    """What a :class:`Turn` reads of its runner: how many past runs the model sees, the
    context budget, and the ``memory`` function (a ``Runner`` has all three).

    >>> from threadline import Runner, Session
    >>> limits: RunLimits = Runner(Session.create(":memory:"), print, runs=2)
    >>> limits.runs
    2
    """

    runs: int | None
    max_context_tokens: int | None
    memory: Callable[..., Any] | None
    read_only_scopes: tuple[str, ...]


def build_context(
    limits: RunLimits, session: Session, user: Message | None
) -> tuple[str, ContextWindow]:
    """What a run starts from: the system prompt as freezing would make it (saved, if cached,
    only by the commit's refresh) and the history window (:func:`run_window`). A run and
    ``Runner.context`` both call this.

    >>> from types import SimpleNamespace
    >>> import threadline
    >>> limits = SimpleNamespace(runs=None, max_context_tokens=None, memory=None)
    >>> session = threadline.Session.create(":memory:").with_context("soul", provider="Be brief.")
    >>> system, window = build_context(limits, session, None)
    >>> "Be brief." in system, window.kept
    (True, [])
    """
    system = session._current_prompt()
    return system, run_window(limits, session, system, user, session.get_history())


def input_message(user_input: Any, invocation_id: str) -> Message:
    """A run's input as the user message it stores: a string becomes a text message; a
    message (UIMessage or OpenAI Chat) is normalised; any other role is refused.

    >>> input_message("hi", "run-1")["parts"], input_message("hi", "run-1")["metadata"]
    ([{'type': 'text', 'text': 'hi'}], {'invocationId': 'run-1'})
    """
    text = user_input if isinstance(user_input, str) else None
    message = {"role": "user", "content": text} if text is not None else user_input
    user = tag(normalize_message(message), invocation_id)
    if user["role"] != "user":
        raise InvalidArgumentError("a run's input must be a user message (or a string)")
    return user


def run_window(
    limits: RunLimits, session: Session, system: str, user: Message | None, history: list[Message]
) -> ContextWindow:
    """The history window a run shows its model (``context_window`` with the runner's
    ``runs`` and ``max_context_tokens``, the system prompt and the input counting against the
    budget), counted with the session's ``token_counter`` (else the heuristic). The one
    window of a run and of ``Runner.context``.

    >>> from types import SimpleNamespace
    >>> import threadline
    >>> limits = SimpleNamespace(runs=1, max_context_tokens=None, memory=None)
    >>> h = [{"id": "u1", "role": "user", "parts": []}, {"id": "u2", "role": "user", "parts": []}]
    >>> session = threadline.Session.create(":memory:")
    >>> [m["id"] for m in run_window(limits, session, "", None, h).kept]
    ['u2']
    """
    counts = counts_of(session._settings.token_counter)
    return context_window(
        history,
        runs=limits.runs,
        max_tokens=limits.max_context_tokens,
        fixed_tokens=fixed_cost(system, user, counts),
        count=counts.messages,
    )


class Turn:
    """The I/O-free steps of one run, shared by the sync and async runners; the storage steps
    (``load_state``, ``start``, ``commit``, ``after_commit``) run in one thread each."""

    def __init__(self, runner: RunLimits, session: Session, user_input: Any) -> None:
        self.runner = runner
        self.session = session
        self.invocation_id = uuid.uuid4().hex
        self.user = input_message(user_input, self.invocation_id)
        self._state: dict[str, Any] = {}
        self.context = RunContext(
            session.session_id, session.user_id, self.user, lambda key: self._state.get(key)
        )
        self.produced: list[Message] = []
        self.overflow: list[Message] = []  # what fell out of the window (summaries left out)
        self.dropped: list[Message] = []  # all before the window, summaries included
        self.system = ""
        self.history: list[Message] = []
        self.edits = RunEdits(session)
        self.tools: Toolset = Toolset([])
        self.stop_reason: Literal["done", "max_steps"] = "done"
        self.overlay: tuple[str, str, str] | None = None  # memory's summary: (from, to, text)
        self.stored: list[Message] = []

    # -- before the model: storage reads, and the memory summary ---------------------------------
    def load_state(self) -> None:
        self._state = dict(self.session.state)

    def start(self) -> None:
        self.system, window = build_context(self.runner, self.session, self.user)
        self._keep(window)
        self.tools = build_context_tools(self.edits, read_only_scopes=self.runner.read_only_scopes)

    def needs_memory(self) -> bool:
        return bool(self.overflow) and self.runner.memory is not None

    def memory_input(self) -> tuple[Any, list[Message]]:
        plan = self.session._compaction_input(None)
        # An earlier summary before the window goes along: the new one extends it.
        dropped = {m["id"] for m in self.dropped}
        return plan, [m for m in plan.history if m["id"] in dropped]

    def call_memory(self, covered: list[Message]) -> Any:
        """Call ``memory`` on what fell out (awaitable for an async one). The runner chose the
        range: a function taking a context is told so (``summarize_all``), and
        ``create_compact_function`` then summarises all of it instead of planning a tail."""
        memory = self.runner.memory
        assert memory is not None
        # create_compact_function around an async summariser: its acompact is the one to await
        memory = async_compactor(memory) or memory
        return self.session._invoke_compact_fn(memory, covered, True)

    def apply_memory(self, plan: Any, result: Any) -> None:
        """Show the model the summary in place of what fell out; it is stored after the
        commit (``after_commit``), as an overlay."""
        result = check_compact_result(result)
        ends = overlay_ends(plan, result)
        if result is None or ends is None:
            return
        self.overlay = (*ends, result.summary)
        newest = datetime.max.replace(tzinfo=UTC)  # shown over every stored overlay
        pending = Compaction(uuid.uuid4().hex, result.summary, *ends, newest)
        fell_out = self.overflow
        self._window(apply_overlays(plan.raw_path, [*plan.compactions, pending]))
        self.overflow = fell_out

    def _window(self, history: list[Message]) -> None:
        self._keep(run_window(self.runner, self.session, self.system, self.user, history))

    def _keep(self, window: ContextWindow) -> None:
        self.history, self.dropped = window.kept, window.dropped
        self.overflow = [m for m in window.dropped if not is_overlay_id(m.get("id"))]

    # -- the model loop -----------------------------------------------------------------------
    def messages(self) -> list[Message]:
        # Copies of the run's own messages: a model that edits what it is given changes
        # nothing the run stores.
        return [*self.history, *copy.deepcopy([self.user, *self.produced])]

    def take(self, output: Any) -> list[dict[str, Any]]:
        """Record the model's output; the threadline tool calls it makes, to execute."""
        produced = [tag(m, self.invocation_id) for m in as_messages(output)]
        self.produced.extend(produced)
        names = list(self.tools)
        return [part for m in produced for part in pending_calls(m, names)]

    def tool_name(self, part: dict[str, Any]) -> str:
        kind = str(part.get("type", ""))
        return str(part.get("toolName")) if kind == "dynamic-tool" else kind.removeprefix("tool-")

    @staticmethod
    def answer(part: dict[str, Any], output: str) -> None:
        part["state"] = "output-available"
        part["output"] = output

    # -- the commit, and what follows it -------------------------------------------------------
    def commit(self) -> TurnResult:
        """Store the run in one transaction (module docstring); nothing of it if one step
        fails. Without a threadline store (a custom ``SessionProvider``) the steps run one by
        one: no transaction spans them."""
        session = self.session
        sent = [self.user, *self.produced]
        delta = validate_delta(self.context.delta)  # a bad value fails before any write
        stored_delta, temp = split_delta(delta)
        if stored_delta and session.store is None:
            session._require_store("state")  # raises before the messages are appended

        def write() -> list[Message]:
            stored = session._backend.append_messages(sent)
            check_same_ids(sent, stored)
            session._note_skill_loads(stored)  # before the edits: one may unload them
            self.edits.replay_stored()
            if stored_delta:  # validated and split above: straight to the store
                session._store_handle("state").update_state(stored_delta)
            return stored

        transaction = getattr(session.store, "transaction", None)
        try:
            with self.edits.commit_lock():
                self.stored = transaction(write) if transaction is not None else write()
        except BaseException:
            self.edits.rolled_back()
            raise
        session._temp_apply(temp)
        return TurnResult(
            output=next((m for m in reversed(self.stored) if m["role"] == "assistant"), None),
            messages=self.stored,
            session_id=session.session_id,
            overflow=self.overflow,
            stop_reason=self.stop_reason,
        )

    def after_commit(self) -> None:
        """What follows the commit and never undoes it: custom providers' writes, the memory
        overlay, automatic compaction (errors reported, as for any append), the prompt."""
        session = self.session
        self.edits.replay_custom()
        if self.overlay is not None:
            first_id, to_id, summary = self.overlay
            try:
                session._backend.add_compaction(summary, first_id, to_id)
            except Exception as exc:  # the path changed meanwhile: the run stays stored
                session._report_compaction_error(exc)
        session._after_append()
        try:
            session.refresh_system_prompt()
        except Exception:  # a provider failing to render: the stored run is still the result
            logger.warning("the prompt could not be refreshed after a run", exc_info=True)


def tag(message: Message, invocation_id: str) -> Message:
    """``message`` with the run's ``metadata.invocationId``.

    >>> tag({"role": "user", "parts": []}, "run-1")["metadata"]
    {'invocationId': 'run-1'}
    """
    metadata = dict(message.get("metadata") or {})
    metadata["invocationId"] = invocation_id
    return {**message, "metadata": metadata}
