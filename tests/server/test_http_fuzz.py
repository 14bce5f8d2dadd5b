"""Schema fuzzing of ``/openapi.json`` with schemathesis against a real server, on SQLite and
PostgreSQL: every operation but the event streams gets generated requests (valid and not);
none may answer 5xx, and every answer must match the status codes, content types and schemas
the document declares.

Examples per operation: 40 by default (about 1,480 requests per backend, under a minute
each); 500 with ``THREADLINE_HYPOTHESIS_PROFILE=nightly`` (the project's nightly flag, as for
the other property tests); ``THREADLINE_FUZZ_EXAMPLES=N`` sets it outright.
"""

from __future__ import annotations

import os
from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import checks as sc
from served import Server

NIGHTLY = os.environ.get("THREADLINE_HYPOTHESIS_PROFILE") == "nightly"
EXAMPLES = int(os.environ.get("THREADLINE_FUZZ_EXAMPLES") or (500 if NIGHTLY else 40))
MIN_REQUESTS = 1_000
SKIPPED = {"/v1/sessions/{session_id}/events", "/v1/events"}  # endless streams: not fuzzable
CHECKS = [
    sc.not_a_server_error,
    sc.status_code_conformance,
    sc.content_type_conformance,
    sc.response_schema_conformance,
]


@schemathesis.serializer("application/x-ndjson")
def _ndjson(ctx: Any, value: Any) -> bytes:
    """Generated import bodies: any text (the body is JSON Lines text)."""
    return value.encode("utf-8", "surrogatepass") if isinstance(value, str) else bytes(value)


def _seed(server: Server, key: str) -> None:
    """A session with a branch, blocks and state, so generated ids sometimes hit data."""
    with server.client(key) as http:
        http.post("/v1/sessions", json={"session_id": "0", "user_id": "0"})
        for i, parent in enumerate([None, "m0", "m0"]):
            params = {"parent_id": parent} if parent else {}
            body = {"id": f"m{i}", "role": "user", "content": f"text {i}"}
            http.post("/v1/sessions/0/messages", json=body, params=params)
        http.put("/v1/sessions/0/blocks/memory", json={"content": "fact"})


def test_generated_requests_get_declared_answers_and_no_5xx(server: Server) -> None:
    key = server.key("fuzz")
    _seed(server, key)
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    headers = {"Authorization": f"Bearer {key}"}
    sent = 0
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.path in SKIPPED:
            continue

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def run(case: Any) -> None:
            nonlocal sent
            merged = {**(case.headers or {}), **headers}
            response = case.call(base_url=server.url, headers=merged, timeout=30)
            sent += 1
            case.validate_response(response, checks=CHECKS, headers=merged)

        try:
            run()
        except Exception as exc:  # collect every operation's failure, not only the first
            failures.append(f"{operation.method.upper()} {operation.path}: {exc}")
    assert not failures, "\n\n".join(failures)
    print(f"schemathesis: {sent} generated requests")
    log = server.log.read_text(errors="replace")
    assert "Traceback" not in log and "unexpected error" not in log, log[-3000:]
    assert sent >= MIN_REQUESTS or EXAMPLES < 40, sent
