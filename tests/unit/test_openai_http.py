"""``threadline._openai_http`` against a scripted OpenAI-compatible endpoint (a fake of the
external LLM, ``tests/fixtures/fake_openai.py``): what is sent (URL, bearer key, messages,
tools), what comes back, and the typed errors — never showing the key."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))

from fake_openai import FakeOpenAI, error_reply, text_reply, tool_call_reply

import threadline
from threadline._openai_http import chat, check_spec, openai_model, openai_summarize
from threadline.errors import InvalidArgumentError, ModelError

KEY = "sk-test-0123456789secret"


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv("THREADLINE_TEST_LLM_KEY", KEY)
    with FakeOpenAI() as fake:
        yield fake


def test_chat_posts_to_chat_completions_with_the_key_and_returns_the_message(
    llm: FakeOpenAI,
) -> None:
    llm.add(text_reply("Hello there"))
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    message = chat(llm.url + "/", "gpt-x", "THREADLINE_TEST_LLM_KEY", [{"role": "user",
                   "content": "hi"}], tools)  # fmt: skip
    assert message == {"role": "assistant", "content": "Hello there"}
    [sent] = llm.requests
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["Authorization"] == f"Bearer {KEY}"
    assert sent["body"] == {
        "model": "gpt-x",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": tools,
    }


def test_an_endpoint_without_a_key_variable_gets_no_authorization(llm: FakeOpenAI) -> None:
    spec = {"type": "openai", "base_url": llm.url, "model": "local"}
    runner = threadline.Runner(threadline.SessionManager(":memory:"), openai_model(spec))
    assert runner.run("hi", session_id="s").output is not None
    assert "Authorization" not in llm.requests[0]["headers"]


def test_a_missing_key_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("THREADLINE_UNSET_KEY", raising=False)
    with pytest.raises(InvalidArgumentError, match="THREADLINE_UNSET_KEY"):
        chat("http://127.0.0.1:9/v1", "m", "THREADLINE_UNSET_KEY", [])


def test_an_http_error_has_its_status_and_an_excerpt_never_the_key(llm: FakeOpenAI) -> None:
    llm.add(error_reply(401, f"invalid key {KEY} " + "x" * 2000))
    with pytest.raises(ModelError) as caught:
        chat(llm.url, "m", "THREADLINE_TEST_LLM_KEY", [{"role": "user", "content": "hi"}])
    assert caught.value.status == 401
    text = str(caught.value)
    assert "HTTP 401" in text and "invalid key" in text and KEY not in text
    assert len(text) < 500


def test_unreachable_and_unusable_answers_are_model_errors(llm: FakeOpenAI) -> None:
    llm.stop()
    with pytest.raises(ModelError, match="unreachable") as caught:
        chat(llm.url, "m", "THREADLINE_TEST_LLM_KEY", [], timeout=5)
    assert caught.value.status is None


def test_an_answer_without_a_message_is_a_model_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("THREADLINE_TEST_LLM_KEY", KEY)
    with FakeOpenAI() as fake:
        fake.add(error_reply(200, '{"choices": []}'))
        with pytest.raises(ModelError, match="without choices"):
            chat(fake.url, "m", "THREADLINE_TEST_LLM_KEY", [])


@pytest.mark.parametrize(
    ("spec", "where"),
    [
        ("nope", "model must be a JSON object"),
        ({"type": "anthropic"}, "model.type"),
        ({"type": "openai", "base_url": "ftp://x", "model": "m", "api_key_env": "K"}, "base_url"),
        ({"type": "openai", "base_url": "http://x", "model": "", "api_key_env": "K"},
         "model.model"),
        ({"type": "openai", "base_url": "http://x", "model": "m", "api_key_env": "a b"},
         "api_key_env"),
        ({"type": "openai", "base_url": "http://x", "model": "m", "api_key_env": "K", "k": 1},
         "model.k"),
    ],
)  # fmt: skip
def test_bad_specs_are_typed_errors_naming_the_field(spec: Any, where: str) -> None:
    with pytest.raises(InvalidArgumentError, match=where):
        check_spec(spec)


def test_openai_model_runs_a_tool_call_then_answers(llm: FakeOpenAI) -> None:
    llm.add(
        tool_call_reply("set_context", {"label": "memory", "content": "likes tea"}, "call_1"),
        text_reply("Noted: you like tea."),
    )
    manager = threadline.SessionManager(":memory:").with_context("memory")
    runner = threadline.Runner(manager, openai_model(llm.spec("THREADLINE_TEST_LLM_KEY")))
    result = runner.run("I like tea", session_id="s")
    assert result.output is not None
    assert result.output["parts"] == [{"type": "text", "text": "Noted: you like tea."}]
    assert manager.get_session("s").get_context_block("memory").content == "likes tea"
    first, second = (r["body"] for r in llm.requests)
    assert first["messages"][0]["role"] == "system" and "MEMORY" in first["messages"][0]["content"]
    assert first["messages"][1:] == [{"role": "user", "content": "I like tea"}]
    assert [t["function"]["name"] for t in first["tools"]] == ["set_context"]
    # the second call carries the call and its result, as OpenAI expects them
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["messages"][3]["tool_call_id"] == "call_1"
    assert second["messages"][3]["content"].startswith("Written to memory")


def test_openai_model_sends_no_tools_key_without_tools(llm: FakeOpenAI) -> None:
    runner = threadline.Runner(
        threadline.SessionManager(":memory:"), openai_model(llm.spec("THREADLINE_TEST_LLM_KEY"))
    )
    result = runner.run("ping", session_id="s")
    assert result.output is not None and result.output["parts"][0]["text"] == "Echo: ping"
    body = llm.requests[0]["body"]
    assert "tools" not in body and body["messages"] == [{"role": "user", "content": "ping"}]


def test_openai_summarize_sends_the_prompt_and_returns_the_text(llm: FakeOpenAI) -> None:
    llm.add(text_reply("## Covers\nTea."), text_reply(""))
    summarize = openai_summarize(llm.spec("THREADLINE_TEST_LLM_KEY", model="small"))
    assert summarize("Summarise: tea") == "## Covers\nTea."
    assert llm.requests[0]["body"]["messages"] == [{"role": "user", "content": "Summarise: tea"}]
    assert llm.requests[0]["body"]["model"] == "small"
    with pytest.raises(ModelError, match="no summary text"):
        summarize("again")


def test_a_summarizer_spec_is_checked_under_its_own_name() -> None:
    with pytest.raises(InvalidArgumentError, match=r"summarizer\.type"):
        openai_summarize({"type": "extractive"})


def test_a_profiles_named_openai_summarizer_compacts_through_the_endpoint(
    llm: FakeOpenAI,
) -> None:
    """``summarizers.named`` (what a profile's compaction names) calls this module."""
    from threadline.compaction import create_compact_function
    from threadline.summarizers import named

    summarize = named(llm.spec("THREADLINE_TEST_LLM_KEY"))
    session = (
        threadline.Session.create(":memory:")
        .for_session("s")
        .on_compaction(create_compact_function(summarize, protect_head=0, tail_token_budget=10))
    )
    for i in range(6):
        session.append_message({"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"})
    llm.add(text_reply("## Covers\nm0 to m3."))
    result = session.compact()
    assert result is not None and result.summary.startswith("## Covers")
    [request] = llm.requests
    assert "m0" in request["body"]["messages"][-1]["content"]


def test_a_redirect_is_refused_and_the_key_goes_nowhere_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import http.server
    import threading

    monkeypatch.setenv("THREADLINE_TEST_LLM_KEY", KEY)
    seen: list[str | None] = []  # the Authorization headers the redirect's target got

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            if self.path.startswith("/elsewhere"):
                seen.append(self.headers.get("Authorization"))
                self.send_response(404)
            else:
                self.send_response(302)
                self.send_header("Location", "/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = _answer

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        with pytest.raises(ModelError) as refused:
            chat(url, "m", "THREADLINE_TEST_LLM_KEY", [{"role": "user", "content": "hi"}])
        assert refused.value.status == 302
        assert KEY not in str(refused.value)
        assert seen == []  # never followed: the key went nowhere else
    finally:
        server.shutdown()
        server.server_close()
