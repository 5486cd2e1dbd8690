"""FlowCall's notes to the model are told apart by origin, not by how their text begins
(issue 38, point 5): a note is never the user's request or the user's words, it never goes on
the wire, and a state saved before origins existed reads its notes as notes."""

from __future__ import annotations

from flowcall.calling.relevance import last_user_text
from flowcall.calling.said import users_words
from flowcall.core.messages import Message
from flowcall.engine.loop_state import LoopState
from flowcall.providers.openai_compat import message_to_wire


def test_the_unreadable_call_note_is_not_the_users_words():
    state = LoopState(messages=[Message(role="user", content="weather tomorrow?")], budget=1)
    state.note_unreadable('{"location": "Paris"', "Expecting ',' delimiter after \"Paris\"")
    assert state.messages[-1].is_note
    assert "Paris" not in users_words(state.messages)  # the note quotes the model, not the user
    assert last_user_text(state.messages) == "weather tomorrow?"


def test_a_note_goes_on_the_wire_as_a_plain_user_message():
    wire = message_to_wire(Message.note("CHECK YOUR CALL: these values ..."))
    assert wire == {"role": "user", "content": "CHECK YOUR CALL: these values ..."}


def test_a_state_saved_before_origins_reads_its_notes_as_notes():
    saved = LoopState(messages=[Message(role="user", content="成都天气?")], budget=1)
    saved.note_unreadable("{bad", "not JSON")
    checkpoint = saved.checkpoint()
    for message in checkpoint["messages"]:
        message.pop("origin")  # as an older FlowCall saved it
    restored = LoopState.restore(checkpoint)
    assert [m.is_note for m in restored.messages] == [False, False, True]
    assert restored.messages == saved.messages
