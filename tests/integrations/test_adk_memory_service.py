"""``ThreadlineMemoryService``: ADK's memory contract over threadline search, on every backend."""

from __future__ import annotations

import pytest
from google.adk.events.event import Event
from google.adk.sessions.session import Session
from google.genai import types

from threadline.integrations.adk import ThreadlineMemoryService, ThreadlineSessionService
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
