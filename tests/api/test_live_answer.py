"""Which text goes out as a streamed answer, and when (issue 49, point 3), without a server: the
part of a polish model's text that is sure to begin the answer, for every point the text may
have reached; the relay of a run's text, with a call that starts over."""

from __future__ import annotations

import pytest

from flowcall.api.chat import LiveAnswer
from flowcall.api.running import Relay, Written
from flowcall.core import progress
from flowcall.engine.final_answer import DRAFT_LABEL, Gaps, settled_text, with_gaps, with_undone_claims

TEXTS = [
    "Light rain in Hangzhou today; take an umbrella.",
    "Tool results: it rains.  \n\nTake an umbrella. ",
    "It rains.\n" + DRAFT_LABEL + "\n  It may rain.",
    "成都明天阴,降水概率70%,通勤请带伞。",
    "  leading space, then a label: tool RESULTS: gone",
    "Ends with the start of a label. Tool res",
    "",
]


@pytest.mark.parametrize("text", TEXTS)
def test_what_is_sent_while_written_always_begins_the_answer(text: str) -> None:
    answers = [
        with_gaps(text, Gaps(), "q"),
        with_gaps(text, Gaps(undone=["get_traffic: no call of it was made"]), "q"),
        with_undone_claims(with_gaps(text, Gaps(), "q"), ["booked"], "q"),
    ]
    for answer in answers:
        live = LiveAnswer(True)
        sent = ""
        for end in range(1, len(text) + 1):  # a piece a character: every point the text may reach
            sent += live.piece(Written(3, "polish", text[end - 1]))
            assert answer.startswith(sent), (text, sent)
            assert sent.startswith(settled_text(text[:end]))
        assert sent + live.rest(answer) == answer


@pytest.mark.parametrize(
    "written, answer",
    [
        # the embedded model stopped in a loop keeps one copy of the block (providers/repetition.py)
        ("It rains. " + "Take an umbrella. " * 5, "It rains. Take an umbrella."),
        ("成都明天有雨。" + "记得带伞。" * 8, "成都明天有雨。记得带伞。"),
        # a call it writes as text ends its answer (providers/local.py)
        ('It rains.\n<tool_call>{"name": "get_weather"}</tool_call>', "It rains."),
    ],
)
def test_what_the_embedded_model_may_still_take_back_is_held(written: str, answer: str) -> None:
    live = LiveAnswer(True)
    sent = ""
    for character in written:
        sent += live.piece(Written(3, "polish", character))
        assert answer.startswith(sent), sent
    assert len(sent) > 5 and sent + live.rest(answer) == answer


def test_only_a_text_answer_of_the_polish_model_is_sent_while_written() -> None:
    assert LiveAnswer(True).piece(Written(1, "model_call", "I will call a tool. ")) == ""
    assert LiveAnswer(False).piece(Written(3, "polish", '{"city": "成都"} ')) == ""
    assert LiveAnswer(True).piece(Written(3, "polish", "Sunny and warm. ")) == "Sunny and warm."


def test_a_call_that_starts_over_is_not_sent_twice() -> None:
    answer = "It rains in Chengdu."
    live = LiveAnswer(True)
    first = live.piece(Written(3, "polish", "It rains in "))
    assert first and answer.startswith(first)
    assert live.piece(Written(3, "polish", "", again=True)) == ""
    second = live.piece(Written(3, "polish", "It rains in Chengdu. "))
    assert first + second + live.rest(answer) == answer
    assert live.piece(Written(3, "polish", "", again=True)) == ""
    assert live.piece(Written(3, "polish", "Sunny.")) == ""  # written otherwise: nothing more goes out
    assert live.rest("Sunny.") is None  # and the stream says so instead of a wrong answer


def test_the_relay_numbers_the_text_by_the_step_it_belongs_to() -> None:
    posted: list = []
    relay = Relay(posted.append)

    class Recorded:
        seq = 1

    relay.recorded(Recorded())  # type: ignore[arg-type]
    with progress.watching(relay):
        with progress.step("polish", "openai/gpt"):
            progress.text("It ")
            progress.restart()
            progress.text("It rains.")
    assert posted[1:] == [
        Written(2, "polish", "It "),
        Written(2, "polish", "", again=True),
        Written(2, "polish", "It rains."),
    ]
