"""Conformance: full-text search over a session.

User text is never query syntax: any string returns hits or ``[]``, never an error.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from threadline import Session
from threadline.messages import text_of
from threadline.types import SearchHit


def msg(mid: str, text: str, *, role: str = "user", at: str | None = None) -> dict[str, Any]:
    m: dict[str, Any] = {"id": mid, "role": role, "parts": [{"type": "text", "text": text}]}
    if at is not None:
        m["createdAt"] = at
    return m


def hit_ids(hits: list[SearchHit]) -> list[str]:
    return [h.id for h in hits]


@pytest.fixture
def session(store: Any) -> Session:
    return Session.create(store).for_session("s1")


def add(session: Session, **texts: str) -> None:
    for mid, text in texts.items():
        session.append_message(msg(mid, text))


# --------------------------------------------------------------------------- hits


def test_search_hit_fields(session: Session) -> None:
    session.append_message(
        msg("m1", "where is the lighthouse beacon", at="2026-03-04T05:06:07.089Z"))
    session.append_message(msg("m2", "the lighthouse keeper answers", role="assistant"))
    hits = session.search("lighthouse keeper")
    assert hit_ids(hits) == ["m2"]
    hit = hits[0]
    assert isinstance(hit, SearchHit)
    assert hit.role == "assistant"
    assert hit.content == "the lighthouse keeper answers"
    assert hit.session_id == "s1"
    assert isinstance(hit.score, float)
    assert isinstance(hit.created_at, datetime)
    assert hit.created_at.utcoffset() is not None
    expected = datetime.strptime(session.get_message("m2")["createdAt"], "%Y-%m-%dT%H:%M:%S.%fZ")
    assert hit.created_at == expected.replace(tzinfo=UTC)
    first = session.search("beacon")[0]
    assert first.created_at == datetime(2026, 3, 4, 5, 6, 7, 89000, tzinfo=UTC)
    assert set(hit.to_dict()) >= {"id", "role", "content", "created_at", "session_id", "score"}
    session.update_message({**msg("m1", "where is the lighthouse beacon"),
                            "createdAt": "2027-01-01T00:00:00.000Z", "role": "assistant"})
    [moved] = session.search("beacon")
    assert moved.created_at == datetime(2027, 1, 1, tzinfo=UTC)
    assert moved.role == "assistant"
    with pytest.raises(dataclasses.FrozenInstanceError):
        hit.score = 0.0  # type: ignore[misc]


def test_content_is_text_of_the_message(session: Session) -> None:
    message = {
        "id": "m1", "role": "assistant",
        "parts": [{"type": "text", "text": "alpha part"}, {"type": "reasoning", "text": "secret"},
                  {"type": "text", "text": "omega part"}],
    }
    session.append_message(message)
    [hit] = session.search("omega")
    assert hit.content == text_of(message) == "alpha part omega part"


def test_only_text_parts_are_indexed(session: Session) -> None:
    session.append_message({
        "id": "m1", "role": "assistant",
        "parts": [
            {"type": "reasoning", "text": "zebrafish"},
            {"type": "tool-lookup", "toolCallId": "c1", "toolName": "lookup",
             "state": "output-available", "input": {"q": "giraffe"}, "output": "okapi"},
            {"type": "data-x", "data": {"animal": "capybara"}},
            {"type": "text", "text": "visible words"},
        ],
        "metadata": {"note": "narwhal"},
    })
    for hidden in ("zebrafish", "giraffe", "okapi", "capybara", "narwhal", "lookup"):
        assert session.search(hidden) == [], hidden
    assert hit_ids(session.search("visible")) == ["m1"]


def test_search_is_case_insensitive(session: Session) -> None:
    add(session, m1="Kubernetes Cluster Upgrade")
    assert hit_ids(session.search("kubernetes")) == ["m1"]
    assert hit_ids(session.search("CLUSTER upgrade")) == ["m1"]


# --------------------------------------------------------------------------- matching rules


def test_stemming(session: Session) -> None:
    add(session, m1="we are deploying the app", m2="it was deployed yesterday",
        m3="the deployment failed", m4="cats sleep all day")
    for query in ("deploy", "deploys", "deployed", "deployment"):
        assert set(hit_ids(session.search(query))) == {"m1", "m2", "m3"}, query


def test_all_words_first(session: Session) -> None:
    add(session, m1="apple banana smoothie", m2="apple cherry pie", m3="banana cherry split")
    assert hit_ids(session.search("apple banana")) == ["m1"]
    assert hit_ids(session.search("banana apple")) == ["m1"]
    assert hit_ids(session.search("cherry split")) == ["m3"]


def test_any_word_fallback(session: Session) -> None:
    add(session, m1="apple banana smoothie", m2="apple cherry pie", m3="banana cherry split")
    assert set(hit_ids(session.search("apple durian"))) == {"m1", "m2"}
    assert set(hit_ids(session.search("durian kiwi pie"))) == {"m2"}
    assert session.search("durian kiwi") == []


def test_quoted_phrase(session: Session) -> None:
    add(session, m1="the quick brown fox", m2="brown and quick fox", m3="a quick fox that is brown")
    assert hit_ids(session.search('"quick brown"')) == ["m1"]
    assert set(hit_ids(session.search("quick brown"))) == {"m1", "m2", "m3"}


def test_phrase_is_one_term_in_both_passes(session: Session) -> None:
    add(session, m1="the quick brown fox", m2="brown and quick fox", m3="zebra crossing")
    # all-terms pass: phrase AND zebra -> nothing; any-term pass: phrase OR zebra
    assert set(hit_ids(session.search('"quick brown" zebra'))) == {"m1", "m3"}
    assert hit_ids(session.search('"quick brown" fox')) == ["m1"]


def test_stop_words_do_not_block_matches(session: Session) -> None:
    add(session, m1="deploy now", m2="unrelated")
    assert hit_ids(session.search("the deploy")) == ["m1"]


def test_search_covers_every_branch_of_the_session(session: Session) -> None:
    add(session, m1="root", m2="abandoned branch with marmalade")
    session.append_message(msg("b2", "new branch"), "m1")
    assert hit_ids(session.search("marmalade")) == ["m2"]


def test_search_is_scoped_to_the_session(store: Any) -> None:
    a = Session.create(store).for_session("a")
    b = Session.create(store).for_session("b")
    a.append_message(msg("m1", "shared vocabulary word"))
    b.append_message(msg("m1", "shared vocabulary too"))
    b.append_message(msg("m2", "shared again"))
    hits = a.search("shared")
    assert hit_ids(hits) == ["m1"]
    assert hits[0].session_id == "a"
    assert hits[0].content == "shared vocabulary word"
    assert {h.session_id for h in b.search("shared")} == {"b"}
    assert len(b.search("shared")) == 2


# --------------------------------------------------------------------------- ranking and limit


def test_ranked_by_relevance(session: Session) -> None:
    add(session,
        m1="python python python tips",
        m2="python is one language among many with lots of other words in this sentence here",
        m3="nothing relevant")
    hits = session.search("python")
    assert hit_ids(hits) == ["m1", "m2"]
    assert hits[0].score > hits[1].score
    scores = [h.score for h in session.search("python tips")]
    assert scores == sorted(scores, reverse=True)


def test_ties_newest_seq_first(session: Session) -> None:
    # createdAt deliberately runs backwards: ties use seq, not time
    session.append_message(msg("t1", "identical tie words", at="2026-01-03T00:00:00.000Z"))
    session.append_message(msg("t2", "identical tie words", at="2026-01-02T00:00:00.000Z"))
    session.append_message(msg("t3", "identical tie words", at="2026-01-01T00:00:00.000Z"))
    hits = session.search("identical")
    assert hit_ids(hits) == ["t3", "t2", "t1"]
    assert hits[0].score == hits[1].score == hits[2].score


def test_limit(session: Session) -> None:
    session.append_messages([msg(f"n{i:02d}", f"needle number {i}") for i in range(25)])
    assert len(session.search("needle")) == 20  # default
    assert len(session.search("needle", limit=5)) == 5
    assert len(session.search("needle", limit=1)) == 1
    assert len(session.search("needle", limit=100)) == 25
    # equal relevance: newest first
    assert hit_ids(session.search("needle", limit=3)) == ["n24", "n23", "n22"]


# --------------------------------------------------------------------------- index consistency


def test_overlay_summaries_are_not_found(session: Session) -> None:
    add(session, m1="first", m2="second")
    session.add_compaction("quetzalcoatl summary text", "m1", "m2")
    assert session.search("quetzalcoatl") == []


def test_update_delete_clear_keep_the_index_consistent(session: Session) -> None:
    add(session, m1="original aardvark", m2="second aardvark", m3="third aardvark")
    session.update_message(msg("m1", "replacement pangolin"))
    assert set(hit_ids(session.search("aardvark"))) == {"m2", "m3"}
    assert hit_ids(session.search("pangolin")) == ["m1"]
    assert session.search("original") == []
    session.delete_messages(["m2"])
    assert hit_ids(session.search("aardvark")) == ["m3"]
    session.clear_messages()
    assert session.search("aardvark") == []
    assert session.search("pangolin") == []
    session.append_message(msg("m1", "aardvark reborn"))
    assert hit_ids(session.search("aardvark")) == ["m1"]


def test_reappend_does_not_reindex(session: Session) -> None:
    add(session, m1="kept text")
    session.append_message(msg("m1", "ignored replacement"))
    assert session.search("ignored") == []
    assert [h.content for h in session.search("kept")] == ["kept text"]


# --------------------------------------------------------------------------- substrings and scripts


def test_cjk_text_is_found(session: Session) -> None:
    add(session, m1="東京は晴れです", m2="大阪は雨です", m3="plain english")
    assert hit_ids(session.search("東京")) == ["m1"]
    assert hit_ids(session.search("晴れ")) == ["m1"]
    assert hit_ids(session.search("東京は晴れです")) == ["m1"]


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("please contact bob@example.com for access", "bob@example.com"),
        ("see https://example.com/path?q=1 for details", "example.com/path"),
        ("see https://example.com/path?q=1 for details", "https://example.com/path?q=1"),
        ("upgraded the runtime to 3.11.7 today", "3.11.7"),
    ],
    ids=["email", "url-part", "url-full", "version"],
)
def test_substrings_are_found(session: Session, text: str, query: str) -> None:
    add(session, m1=text, d1="write to alice@example.org or visit https://other.net/x",
        d2="runtime 3.12.1 is out", d3="nothing to see here")
    hits = session.search(query)
    assert "m1" in hit_ids(hits)
    assert hits[0].id == "m1"


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("Contact Bob@Example.com today", "bob"),
        ("Contact Bob@Example.com today", "example"),
        ("mail alice.smith@corp.io please", "smith"),
        ("visit www.python.org/downloads soon", "python"),
        ("visit www.python.org/downloads soon", "downloads"),
        ("see https://example.com/path?q=1 now", "path"),
    ],
    ids=["email-user", "email-domain", "email-dotted-user", "url-host-word", "url-path-word",
         "url-path"],
)
def test_words_inside_emails_and_urls_are_found(session: Session, text: str, query: str) -> None:
    # a word the user can see in the text is found, even when it is part of an e-mail or URL
    add(session, m1=text, d1="nothing to see here", d2="another unrelated message")
    assert hit_ids(session.search(query)) == ["m1"]


def test_emoji_text(session: Session) -> None:
    add(session, m1="launch 🚀 today", m2="other")
    assert "m1" in hit_ids(session.search("launch 🚀"))
    assert isinstance(session.search("🚀"), list)


# ------------------------------------------------------------------ empty and hostile queries


@pytest.mark.parametrize("query", ["", " ", "   \n\t  ", "\u3000"])
def test_empty_or_blank_query_returns_nothing(session: Session, query: str) -> None:
    add(session, m1="anything at all", m2=" ")
    assert session.search(query) == []


HOSTILE = [
    '"', '""', '"unbalanced', 'a "b c', "'", "''", "deploy AND (", "AND", "OR", "NOT",
    "deploy OR", "NOT deploy", "deploy NOT", "*", "deploy*", "**", "NEAR(", "NEAR(deploy app, 2)",
    "col:term", "text:deploy", "{deploy}", "^deploy", "-deploy", "+deploy", "deploy -", "(", ")",
    "()", "[", "]", "\\", "%", "_", "%deploy%", "&", "|", "!", "<->", "deploy & app",
    "deploy | app",
    "!deploy", "deploy:*", "'; DROP TABLE tl_messages; --", "\"; DROP TABLE tl_messages; --",
    "Robert'); DROP TABLE tl_messages;--", "\x00", "deploy\x00app", "\x01\x02\x7f",
    "x" * 10_000, "deploy " * 2_000, "🚀", "👨‍👩‍👧‍👦", "\u200b", "\ufeffdeploy", "\U0010ffff",
    "東京 AND", "NEAR", "MATCH", "rank", "bm25(", "$1", "?", ":", "@", "#", "~", "`",
]


def test_hostile_queries_never_raise(session: Session) -> None:
    # one test per backend (not one per query) keeps the suite fast; failures name the query
    add(session, m1="deploy the app now", m2="AND OR NOT NEAR words", m3="text: col value")
    problems: list[str] = []
    for query in HOSTILE:
        try:
            hits = session.search(query)
        except Exception as exc:
            problems.append(f"{query[:40]!r} raised {exc!r}")
            continue
        if not isinstance(hits, list) or not all(isinstance(h, SearchHit) for h in hits):
            problems.append(f"{query[:40]!r} returned {hits!r}")
        elif not {h.id for h in hits} <= {"m1", "m2", "m3"}:
            problems.append(f"{query[:40]!r} returned unknown ids")
    assert not problems, "\n".join(problems)
    # the store is intact afterwards
    assert session.get_path_length() == 3
    assert hit_ids(session.search("deploy")) == ["m1"]
    assert hit_ids(session.search("col value")) == ["m3"]


def test_hostile_queries_still_find_their_words(session: Session) -> None:
    add(session, m1="deploy the app now", m2="unrelated")
    for query in ("deploy AND (", "deploy*", '"deploy', "NEAR deploy", "deploy:", "(deploy)"):
        assert "m1" in hit_ids(session.search(query)), query


@settings(max_examples=50, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(query=st.text())
def test_any_text_is_a_safe_query(session: Session, query: str) -> None:
    if session.get_path_length() == 0:
        add(session, m1="deploy the app now", m2="東京は晴れです", m3='quote " and * star')
    hits = session.search(query)
    assert isinstance(hits, list)
    assert all(isinstance(h, SearchHit) and h.session_id == "s1" for h in hits)
    if not query.strip():
        assert hits == []


# --------------------------------------------------------------------------- Unicode forms

# Words whose NFC and NFD spellings differ: Latin diacritics, kana with voiced marks,
# Hangul syllables (jamo when decomposed), and a mix.
_COMPOSABLE = ("café", "crème", "がっこう", "ぱんだ", "한국어", "Ångström", "naïve résumé")


@pytest.mark.parametrize("stored_form", ["NFC", "NFD"])
def test_either_unicode_form_finds_the_other(session: Session, stored_form: str) -> None:
    """A text written decomposed (macOS, some input methods) is found by a query typed
    precomposed, and the other way round: index and queries are both read in NFC."""
    for n, word in enumerate(_COMPOSABLE):
        add(session, **{f"m{n}": unicodedata.normalize(stored_form, f"about {word} today")})
    add(session, other="nothing to see")
    for n, word in enumerate(_COMPOSABLE):
        for query_form in ("NFC", "NFD"):
            query = unicodedata.normalize(query_form, word)
            assert hit_ids(session.search(query)) == [f"m{n}"], (word, stored_form, query_form)
    # A hit's content is the message's text as written (a long one is cut in NFC).
    assert session.search("café")[0].content == unicodedata.normalize(
        stored_form, "about café today"
    )


_MARKS = st.sampled_from(["\u0301", "\u0308", "\u0300", "\u3099", "\u309a", "\u0327"])
_BASES = st.sampled_from(list("aeiouncAEIOUNCかきくけこはひふへほ"))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    word=st.lists(st.tuples(_BASES, st.lists(_MARKS, max_size=2)), min_size=3, max_size=8).map(
        lambda pairs: "".join(base + "".join(marks) for base, marks in pairs)
    )
)
def test_a_word_in_any_normal_form_is_found_in_any_other(session: Session, word: str) -> None:
    forms = {unicodedata.normalize(f, word) for f in ("NFC", "NFD")}
    text = f"zq {unicodedata.normalize('NFD', word)} zq"
    message = session.append_message({"role": "user", "parts": [{"type": "text", "text": text}]})
    for query in forms:
        assert message["id"] in hit_ids(session.search(query)), (word, query)


def test_an_ascii_word_glued_to_cjk_text_is_a_word(session: Session) -> None:
    """Japanese, Chinese and Korean are written without spaces, so FTS tokenizers keep a run
    like ``私はPythonで`` whole: the word index splits ASCII letters and digits from it (and
    a query's words are split the same way)."""
    add(
        session,
        ja="私はPythonで2024年に書きました",
        zh="我们用Kubernetes部署",
        ko="한국어API문서",
        en="plain python notes",
    )
    assert set(hit_ids(session.search("Python"))) == {"ja", "en"}
    assert hit_ids(session.search("2024")) == ["ja"]
    assert hit_ids(session.search("kubernetes")) == ["zh"]
    assert hit_ids(session.search("API")) == ["ko"]
    # Queries across the seam are found as before, as words and as substrings.
    seams = {"はPythonで": "ja", "Pythonで": "ja", "用Kubernetes": "zh", "私は": "ja",
             "部署": "zh", "api문서": "ko", "API문서": "ko"}  # fmt: skip
    for query, expected in seams.items():
        assert hit_ids(session.search(query)) == [expected], query


def test_a_capital_that_lowercases_to_a_composable_pair_is_found(session: Session) -> None:
    """``T`` + U+0308 has no precomposed capital, but its lowercase ``ẗ`` is precomposed:
    lowercasing after NFC left PostgreSQL's column in another form than the query's."""
    add(session, m1="T\u0308EST and more", m2="plain test")
    for query in ("\u1e97est", "t\u0308est", "T\u0308EST"):
        assert "m1" in hit_ids(session.search(query)), query


def test_an_entry_written_decomposed_is_found_by_either_form(store: Any) -> None:
    """Keyed entries (searchable blocks) are indexed in NFC too."""
    store.put_entry("app", "notes", "k1", unicodedata.normalize("NFD", "がっこうのノート"), None)
    for form in ("NFC", "NFD"):
        query = unicodedata.normalize(form, "がっこう")
        assert [e.key for e in store.search_entries("app", "notes", query)] == ["k1"], form
