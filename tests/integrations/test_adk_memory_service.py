"""``ThreadlineMemoryService``: ADK's memory contract over threadline search, on every backend."""

from __future__ import annotations

import asyncio
import threading
import unicodedata

import pytest
from google.adk.events.event import Event
from google.adk.sessions.session import Session
from google.genai import types

from threadline._state import INTERNAL_PREFIX
from threadline.errors import InvalidArgumentError
from threadline.integrations.adk import (
    ThreadlineMemoryService,
    ThreadlineSessionService,
    event_to_message,
)
from threadline.store import Store

pytestmark = pytest.mark.asyncio

APP = "my_app"


@pytest.fixture
def memory(store: Store) -> ThreadlineMemoryService:
    return ThreadlineMemoryService(store)


def said(text: str, author: str = "user", **fields: object) -> Event:
    role = "user" if author == "user" else "model"
    return Event(
        author=author, content=types.Content(role=role, parts=[types.Part(text=text)]), **fields
    )


def session_of(user: str, sid: str, *events: Event, app: str = APP) -> Session:
    return Session(id=sid, app_name=app, user_id=user, events=list(events))


async def texts(
    memory: ThreadlineMemoryService, query: str, user: str = "u1", app: str = APP
) -> list[str]:
    found = await memory.search_memory(app_name=app, user_id=user, query=query)
    return sorted(part.text or "" for m in found.memories for part in m.content.parts or [])


async def test_an_added_session_is_searchable(memory: ThreadlineMemoryService) -> None:
    await memory.add_session_to_memory(session_of("u1", "s1", said("My cat is called Miso")))
    assert await texts(memory, "cat") == ["My cat is called Miso"]


async def test_sessions_not_added_are_not_searchable(
    memory: ThreadlineMemoryService, store: Store
) -> None:
    service = ThreadlineSessionService(store)
    session = await service.create_session(app_name=APP, user_id="u1", session_id="s1")
    await service.append_event(session, said("The dog barks at night"))
    assert await texts(memory, "dog") == []
    await memory.add_session_to_memory(session)
    assert await texts(memory, "dog") == ["The dog barks at night"]


async def test_memory_is_per_user(memory: ThreadlineMemoryService) -> None:
    await memory.add_session_to_memory(session_of("u1", "s1", said("Blue bicycle")))
    assert await texts(memory, "bicycle", user="u2") == []


async def test_memory_is_per_app(memory: ThreadlineMemoryService) -> None:
    await memory.add_session_to_memory(session_of("u1", "s1", said("Blue bicycle"), app="other"))
    assert await texts(memory, "bicycle") == []
    assert await texts(memory, "bicycle", app="other") == ["Blue bicycle"]


async def test_adding_a_session_again_adds_only_new_events(memory: ThreadlineMemoryService) -> None:
    first = said("Pancakes for breakfast")
    await memory.add_session_to_memory(session_of("u1", "s1", first))
    await memory.add_session_to_memory(session_of("u1", "s1", first, said("Pancakes with jam")))
    assert await texts(memory, "pancakes") == ["Pancakes for breakfast", "Pancakes with jam"]


async def test_events_without_content_are_not_memorised(
    memory: ThreadlineMemoryService, store: Store
) -> None:
    await memory.add_session_to_memory(session_of("u1", "s1", Event(author="user")))
    assert store.count_sessions(APP) == 0


async def test_a_memory_entry_carries_the_events_content_author_id_and_time(
    memory: ThreadlineMemoryService,
) -> None:
    event = said("Flight to Lisbon on Friday", author="travel_agent", timestamp=1700000000.5)
    await memory.add_session_to_memory(session_of("u1", "s1", event))
    (entry,) = (await memory.search_memory(app_name=APP, user_id="u1", query="Lisbon")).memories
    assert entry.content == event.content
    assert (entry.id, entry.author) == (event.id, "travel_agent")
    assert entry.timestamp is not None and entry.timestamp.startswith("2023-11-")


async def test_add_events_to_memory_adds_an_increment(memory: ThreadlineMemoryService) -> None:
    await memory.add_events_to_memory(
        app_name=APP, user_id="u1", events=[said("Gym on Tuesdays")], session_id="s1"
    )
    assert await texts(memory, "gym") == ["Gym on Tuesdays"]


async def test_a_deleted_memory_is_gone_and_not_added_again(
    memory: ThreadlineMemoryService,
) -> None:
    event = said("Secret password hint")
    session = session_of("u1", "s1", event)
    await memory.add_session_to_memory(session)
    await memory.delete_memory(app_name=APP, user_id="u1", memory_id=event.id)
    assert await texts(memory, "password") == []
    await memory.add_session_to_memory(session)
    assert await texts(memory, "password") == []


async def test_memory_sessions_are_not_listed_as_adk_sessions(
    memory: ThreadlineMemoryService, store: Store
) -> None:
    await memory.add_session_to_memory(session_of("u1", "s1", said("hello")))
    listed = await ThreadlineSessionService(store).list_sessions(app_name=APP)
    assert listed.sessions == []


async def test_search_never_raises_on_odd_query_text(memory: ThreadlineMemoryService) -> None:
    await memory.add_session_to_memory(session_of("u1", "s1", said("plain words")))
    for query in ('"(', "AND OR NOT", "*", ""):
        await memory.search_memory(app_name=APP, user_id="u1", query=query)


async def test_memories_matching_some_query_words_are_found_those_matching_most_first(
    memory: ThreadlineMemoryService,
) -> None:
    # ADK's memory services find a memory that shares any word with the query, ranking by
    # how many it shares; threadline's search alone keeps only all-word matches when some
    # exist, which would hide the other two here.
    await memory.add_session_to_memory(
        session_of(
            "u1",
            "s1",
            said("The release is ready."),
            said("Ready."),
            said("The release checklist is ready."),
            said("Lunch at noon."),
        )
    )
    found = await memory.search_memory(app_name=APP, user_id="u1", query="release checklist ready")
    assert [m.content.parts[0].text for m in found.memories] == [
        "The release checklist is ready.",
        "The release is ready.",
        "Ready.",
    ]


async def test_a_search_returns_at_most_limit_memories_best_first(store: Store) -> None:
    memory = ThreadlineMemoryService(store, limit=4)
    notes = [said(f"note {i} about work") for i in range(12)] + [said("backlog note about work")]
    await memory.add_session_to_memory(session_of("u1", "s1", *notes))
    found = await memory.search_memory(app_name=APP, user_id="u1", query="work backlog note")
    texts_found = [m.content.parts[0].text for m in found.memories]
    assert len(texts_found) == 4 and texts_found[0] == "backlog note about work"


async def test_adding_a_session_again_refreshes_an_event_whose_content_changed(
    memory: ThreadlineMemoryService,
) -> None:
    # ADK's in-memory and SQLite memory services both keep the latest copy of an event a
    # session is added with; an event added on its own (add_events_to_memory) does not
    # replace one already there (as the in-memory service).
    event = said("Meeting room 4 on Monday")
    await memory.add_session_to_memory(session_of("u1", "s1", event))
    edited = event.model_copy(deep=True)
    edited.content.parts[0].text = "Meeting room 7 on Tuesday"  # type: ignore[union-attr,index]
    await memory.add_session_to_memory(session_of("u1", "s1", edited))
    assert await texts(memory, "Tuesday") == ["Meeting room 7 on Tuesday"]
    assert await texts(memory, "Monday") == []
    again = edited.model_copy(deep=True)
    again.content.parts[0].text = "Meeting room 9 on Friday"  # type: ignore[union-attr,index]
    await memory.add_events_to_memory(app_name=APP, user_id="u1", events=[again], session_id="s1")
    assert await texts(memory, "Friday") == []
    assert await texts(memory, "meeting") == ["Meeting room 7 on Tuesday"]


# -- ADK's memory contract (tests/unittests/memory/test_in_memory_memory_service.py @ 2049ee6,
# the cases that do not read InMemoryMemoryService's internals), restated --------------------


def fact(tag: str, text: str, author: str = "user", timestamp: float = 1.0) -> Event:
    return Event(
        id=f"ev-{tag}",
        invocation_id=f"inv-{tag}",
        author=author,
        timestamp=timestamp,
        content=types.Content(parts=[types.Part(text=text)]),
    )


async def found_texts(memory: ThreadlineMemoryService, query: str, user: str = "u1") -> list[str]:
    """The texts found, in the order the search returned them."""
    found = await memory.search_memory(app_name=APP, user_id=user, query=query)
    return [m.content.parts[0].text or "" for m in found.memories if m.content.parts]


async def test_a_word_finds_the_one_memory_holding_it_with_its_author(
    memory: ThreadlineMemoryService,
) -> None:
    await memory.add_session_to_memory(
        session_of("u1", "s1", fact("a", "The kit is handy."), fact("b", "Sure.", "model"))
    )
    await memory.add_session_to_memory(session_of("u1", "s2", fact("c", "I write Go daily.")))
    found = await memory.search_memory(app_name=APP, user_id="u1", query="Go")
    assert [(m.content.parts[0].text, m.author) for m in found.memories if m.content.parts] == [
        ("I write Go daily.", "user")
    ]


async def test_search_ignores_case(memory: ThreadlineMemoryService) -> None:
    await memory.add_session_to_memory(session_of("u1", "s1", fact("a", "Agent Toolkit rocks")))
    assert await found_texts(memory, "toolkit") == ["Agent Toolkit rocks"]


async def test_a_question_finds_every_memory_sharing_a_word(
    memory: ThreadlineMemoryService,
) -> None:
    await memory.add_session_to_memory(
        session_of(
            "u1",
            "s1",
            fact("a", "The ADK helps."),
            Event(id="ev-empty", author="user", timestamp=2.0),  # no content: not a memory
            fact("b", "Yes, the Agent Development Kit (ADK) helps a lot!", "model"),
        )
    )
    assert sorted(await found_texts(memory, "What about ADK?")) == [
        "The ADK helps.",
        "Yes, the Agent Development Kit (ADK) helps a lot!",
    ]
    assert await found_texts(memory, "nonexistent") == []


async def test_another_users_memories_are_not_found(memory: ThreadlineMemoryService) -> None:
    await memory.add_session_to_memory(session_of("u1", "s1", fact("a", "Plain notes.")))
    await memory.add_session_to_memory(session_of("u2", "s2", fact("b", "A hidden password.")))
    assert await found_texts(memory, "password", user="u1") == []
    assert await found_texts(memory, "password", user="u2") == ["A hidden password."]


async def test_a_slash_in_an_app_name_does_not_reach_another_app_and_user(
    memory: ThreadlineMemoryService,
) -> None:
    secret = Session(
        id="s1", app_name="app/other-user", user_id="user", events=[fact("a", "A secret.")]
    )
    await memory.add_session_to_memory(secret)
    found = await memory.search_memory(app_name="app", user_id="other-user/user", query="secret")
    assert found.memories == []


async def test_the_empty_user_id_has_a_memory_of_its_own(memory: ThreadlineMemoryService) -> None:
    await memory.add_session_to_memory(session_of("", "s1", fact("a", "Empty user note.")))
    await memory.add_session_to_memory(session_of("%", "s1", fact("b", "Percent user note.")))
    assert await found_texts(memory, "note", user="") == ["Empty user note."]
    assert await found_texts(memory, "note", user="%") == ["Percent user note."]
    await memory.delete_memory(app_name=APP, user_id="", memory_id="ev-a")
    assert await found_texts(memory, "note", user="") == []


async def test_memories_stored_under_percent_user_ids_stay_theirs_beside_the_empty_user(
    memory: ThreadlineMemoryService, store: Store
) -> None:
    # As the adapter wrote them before user_id="" was allowed (686c7f1): each memory session
    # owned by the ADK user id itself.
    for user, tag in (("%", "a"), ("%%", "b")):
        message = event_to_message(fact(tag, f"Old note {tag}."), message_id=f"ev-{tag}")
        memory_id = "adk-memory:" + user.replace("%", "%25")
        store.append_messages(APP, memory_id, [message], user_id=user)
    await memory.add_session_to_memory(session_of("", "s1", fact("c", "Empty user note.")))
    await memory.add_session_to_memory(session_of("%", "s2", fact("d", "New note d.")))
    assert await found_texts(memory, "note", user="") == ["Empty user note."]
    assert await found_texts(memory, "note", user="%") == ["Old note a.", "New note d."]
    assert await found_texts(memory, "note", user="%%") == ["Old note b."]
    await memory.delete_memory(app_name=APP, user_id="%%", memory_id="ev-b")
    assert await found_texts(memory, "note", user="%%") == []
    assert await found_texts(memory, "note", user="") == ["Empty user note."]


async def test_the_empty_users_owner_name_is_refused_as_a_memory_user_id(
    memory: ThreadlineMemoryService,
) -> None:
    name = INTERNAL_PREFIX + "adk:empty-user"
    calls = [
        memory.add_session_to_memory(session_of(name, "s1", fact("a", "A note."))),
        memory.add_events_to_memory(app_name=APP, user_id=name, events=[fact("b", "B note.")]),
        memory.search_memory(app_name=APP, user_id=name, query="note"),
        memory.delete_memory(app_name=APP, user_id=name, memory_id="ev-a"),
    ]
    for call in calls:
        with pytest.raises(InvalidArgumentError, match="reserved"):
            await call


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


@pytest.mark.parametrize(
    ("stored", "query", "hits"),
    [
        ("私の名前は太郎です", "太郎", 1),
        ("私の名前は太郎です", "天気", 0),
        ("我喜欢机器学习", "机器学习", 1),
        ("我喜欢机器学习", "天气预报", 0),
        ("제 이름은 민수입니다", "민수입니다", 1),
        ("Меня зовут Алексей", "Алексей", 1),
        ("太郎 works at ABC Corp", "太郎", 1),
        ("太郎 works at ABC Corp", "ABC", 1),
        ("私はPythonでADKを使っています", "Python", 1),
        ("私はPythonでADKを使っています", "adk", 1),
        ("我用Python写代码", "python", 1),
        ("私はPythonでADKを使っています", "使って", 1),
        ("私はPythonでADKを使っています", "Java", 0),
        ("I like to code in Python.", "thon", 0),
        ("私はPythonでADKを使っています", "thon", 0),
        (_nfd("私はCaféでADKを使っています"), "Café", 1),
        (_nfd("私はCaféでADKを使っています"), "café", 1),
        (_nfd("私はCaféでADKを使っています"), "Ruby", 0),
        (_nfd("Meet at the Café"), "Café", 1),
        ("Meet at the Café", _nfd("Café"), 1),
        (_nfd("プログラミングを学ぶ"), "プログラミング", 1),
        (_nfd("제 이름은 민수입니다"), "민수입니다", 1),
    ],
)
async def test_scripts_without_spaces_accents_and_normal_forms(
    memory: ThreadlineMemoryService, stored: str, query: str, hits: int
) -> None:
    # A Latin word glued to CJK text (Python, Café) is a word; a part of a Latin word is not.
    await memory.add_session_to_memory(session_of("u1", "s1", fact("a", stored)))
    assert len(await found_texts(memory, query)) == hits


async def test_memories_sharing_more_query_words_come_first(
    memory: ThreadlineMemoryService,
) -> None:
    await memory.add_session_to_memory(
        session_of(
            "u1",
            "s1",
            fact("a", "The build is green."),
            fact("b", "Green."),
            fact("c", "The build pipeline is green."),
        )
    )
    assert await found_texts(memory, "build pipeline green") == [
        "The build pipeline is green.",
        "The build is green.",
        "Green.",
    ]


async def test_at_most_ten_memories_and_ties_keep_the_order_they_were_added_in(
    memory: ThreadlineMemoryService,
) -> None:
    events = [fact(f"n{i}", f"memo {i} about chores") for i in range(20)]
    events.append(fact("best", "the laundry memo about chores"))  # added last, ranks first
    await memory.add_session_to_memory(session_of("u1", "s1", *events))
    assert await found_texts(memory, "chores laundry memo") == [
        "the laundry memo about chores",
        *(f"memo {i} about chores" for i in range(9)),
    ]


async def test_ties_keep_the_order_added_across_sessions_and_single_words(
    memory: ThreadlineMemoryService,
) -> None:
    await memory.add_session_to_memory(session_of("u1", "s2", fact("x", "tea time, long tea")))
    assert await found_texts(memory, "tea") == ["tea time, long tea"]
    await memory.add_session_to_memory(session_of("u1", "s1", fact("y", "tea")))
    await memory.add_events_to_memory(app_name=APP, user_id="u1", events=[fact("z", "Tea!")])
    assert await found_texts(memory, "tea") == ["tea time, long tea", "tea", "Tea!"]
    # Added by another service object (another process): seen in its place too.
    other = ThreadlineMemoryService(memory.store)
    await other.add_events_to_memory(app_name=APP, user_id="u1", events=[fact("w", "more tea")])
    assert await found_texts(memory, "tea") == ["tea time, long tea", "tea", "Tea!", "more tea"]
    await memory.delete_memory(app_name=APP, user_id="u1", memory_id="ev-w")
    assert await found_texts(memory, "tea") == ["tea time, long tea", "tea", "Tea!"]


async def test_searching_while_other_threads_add_memories_never_fails(store: Store) -> None:
    memory = ThreadlineMemoryService(store)

    def session(tag: str) -> Session:
        return session_of("u1", f"s-{tag}", fact(tag, f"fact about {tag}"))

    for i in range(10):
        await memory.add_session_to_memory(session(f"seed{i}"))
    start = threading.Barrier(3)

    def writer() -> None:  # each thread runs event loops of its own, as in ADK's test
        start.wait()
        for i in range(30):
            asyncio.run(memory.add_session_to_memory(session(f"w{i}")))

    def reader() -> None:
        start.wait()
        for _ in range(30):
            asyncio.run(memory.search_memory(app_name=APP, user_id="u1", query="fact"))

    await asyncio.gather(*(asyncio.to_thread(f) for f in (writer, reader, reader)))
    assert len(await found_texts(memory, "fact")) == 10


@pytest.mark.parametrize("whole_session", [True, False], ids=["session", "events"])
async def test_a_memory_keeps_what_was_added_not_later_edits_of_the_event(
    memory: ThreadlineMemoryService, whole_session: bool
) -> None:
    event = fact("a", "I prefer oolong tea.", timestamp=12345)
    if whole_session:
        await memory.add_session_to_memory(session_of("u1", "s1", event))
    else:
        await memory.add_events_to_memory(
            app_name=APP, user_id="u1", session_id="s1", events=[event]
        )
    event.author = "changed"
    event.content.parts[0].text = "I prefer coffee."  # type: ignore[union-attr,index]
    found = await memory.search_memory(app_name=APP, user_id="u1", query="oolong")
    assert [(m.author, m.content.parts[0].text) for m in found.memories if m.content.parts] == [
        ("user", "I prefer oolong tea.")
    ]


@pytest.mark.parametrize("whole_session", [True, False], ids=["session", "events"])
async def test_editing_a_search_result_changes_neither_memory_nor_the_session(
    memory: ThreadlineMemoryService, whole_session: bool
) -> None:
    source = session_of("u1", "s1", fact("a", "I prefer oolong tea.", timestamp=12345))
    if whole_session:
        await memory.add_session_to_memory(source)
    else:
        await memory.add_events_to_memory(
            app_name=APP, user_id="u1", session_id="s1", events=source.events
        )
    first = await memory.search_memory(app_name=APP, user_id="u1", query="oolong")
    first.memories[0].content.parts.clear()  # type: ignore[union-attr]
    assert await found_texts(memory, "oolong") == ["I prefer oolong tea."]
    assert source.events[0].content.parts[0].text == "I prefer oolong tea."  # type: ignore[union-attr,index]
