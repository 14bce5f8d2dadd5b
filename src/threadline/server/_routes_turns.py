"""Agent turns over HTTP: ``GET .../context`` ("what the model sees", built by
``Runner.context``: the run's own context builder) and ``POST .../turns`` (one ``Runner`` turn
with the model the app's profile names). Defaults (``runs``, ``max_context_tokens``,
``max_steps``) come from the profile's ``runner`` document. A user-bound key's turn may not
write app-wide blocks (clarification 28): its runner gets ``read_only_scopes=("app",)``.
"""

from __future__ import annotations

from typing import Any

from fastapi import Query, Request

from threadline.errors import InvalidArgumentError
from threadline.internal import openai_model
from threadline.profile import Profile
from threadline.runner import Runner
from threadline.server._deps import TenantDep, changed, router
from threadline.server._tenancy import Tenant
from threadline.server._turn_models import ContextOut, TurnIn, TurnOut

routes = router()

NO_MODEL = (
    "this app's profile names no model: a turn needs one. Set it with PUT /v1/profile (or "
    '`threadline profile set FILE`) giving "model": {"type": "openai", "base_url": ..., '
    '"model": ..., "api_key_env": ...}, an endpoint the operator allows '
    "(`threadline serve --allow-model NAME=base_url,env`)"
)


def _defaults(profile: Profile | None) -> dict[str, Any]:
    """The profile's ``runner`` document (``{}`` for an app without a stored profile)."""
    return dict(profile.runner) if profile is not None else {}


def _no_model(system: str, messages: Any, tools: Any) -> str:
    raise InvalidArgumentError(NO_MODEL)  # never called: the context route runs no model


@routes.get("/sessions/{session_id}/context", response_model=ContextOut, tags=["turns"])
def get_context(
    session_id: str,
    tenant: Tenant = TenantDep,
    runs: int | None = Query(default=None, ge=0, description="Past runs shown (profile default)"),
    max_context_tokens: int | None = Query(
        default=None, ge=0, description="Token budget of a turn (profile default)"
    ),
    dropped_limit: int | None = Query(
        default=None, ge=0, description="List only the newest N messages that fall out"
    ),
) -> Any:
    """What the model would see on this session's next turn, built by the Runner's own
    context builder: the frozen system prompt block by block with token counts, the history
    window (``runs``, ``max_context_tokens``; absent: the profile's ``runner`` defaults), what
    falls out of it (``dropped_limit``: only the newest N listed; ``dropped_count`` and
    ``totals.dropped`` count all), and totals against the budget (the app's token counter)."""
    defaults = _defaults(Profile.load(tenant.manager.store, tenant.app))
    runner = Runner(
        tenant.session(session_id),
        _no_model,
        runs=runs if runs is not None else defaults.get("runs"),
        max_context_tokens=(
            max_context_tokens
            if max_context_tokens is not None
            else defaults.get("max_context_tokens")
        ),
    )
    return runner.context().to_dict(dropped_limit=dropped_limit)


@routes.post("/sessions/{session_id}/turns", response_model=TurnOut, tags=["turns"])
def run_turn(session_id: str, body: TurnIn, request: Request, tenant: Tenant = TenantDep) -> Any:
    """Run one agent turn: the input, the model the app's profile names (an OpenAI-compatible
    endpoint), the memory tools it calls, then everything stored in one transaction (created
    on the first turn, owned by the key's user). 400 when the profile names no model; 502
    when the model endpoint fails (nothing stored). A user-bound key's turn cannot write
    app-wide blocks."""
    profile = Profile.load(tenant.manager.store, tenant.app)
    spec = profile.model if profile is not None else None
    if not spec:
        raise InvalidArgumentError(NO_MODEL)
    if spec.get("type") == "code":
        raise InvalidArgumentError(
            "this app's model is provided by code in some process, not by the profile: the "
            "service cannot call it. " + NO_MODEL.split(": a turn needs one. ", 1)[1]
        )
    defaults = _defaults(profile)
    runner = Runner(
        tenant.writable(session_id),
        openai_model(spec),
        runs=defaults.get("runs"),
        max_context_tokens=defaults.get("max_context_tokens"),
        max_steps=defaults.get("max_steps") or 8,
        read_only_scopes=("app",) if tenant.user is not None else (),
    )
    result = runner.run(body.input)
    changed(request, tenant, session_id)
    return {
        "session_id": result.session_id,
        "output": result.output,
        "messages": result.messages,
        "stop_reason": result.stop_reason,
        "overflow": [str(m.get("id")) for m in result.overflow],
    }
