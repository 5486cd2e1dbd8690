"""Every part of a request either done by a tool or said not done (issue 46, points 1-4), driven
through the engine by the scripted provider: the outcome when no tool was wanted, the parts a
multi-part request left open, actions an answer claims that no tool did, and the labels of the
polish brief that must never reach the answer."""

from __future__ import annotations

import json

import pytest

from flowcall.core.embedded_models import DecisionTuning
from flowcall.core.messages import ModelTurn, ToolCall
from flowcall.core.spec import DecisionConfig, Flow, PolishConfig
from flowcall.core.steps import ANSWERED_WITHOUT_TOOLS, PARTLY_DONE, MemorySink, RunStatus, StepKind
from flowcall.engine.claims import claims, undone_claims
from flowcall.engine.final_answer import NO_ACTION_NOTE, UNDONE_NOTE
from flowcall.engine.loop import Engine
from flowcall.providers.base import Capabilities
from flowcall.providers.scripted import ScriptedProvider
from flowcall.tools.base import ToolAnnotations
from flowcall.tools.execute import CallOutcome
from flowcall.tools.python_plugins import build_tool
from flowcall.tools.registry import ToolRegistry

READ = ToolAnnotations(read_only=True)


def get_weather(location: str) -> dict:
    """Weather for a city."""
    return {"city": location, "weather": "晴", "temperature": 21}


def get_time() -> str:
    """The current time."""
    return "2026-11-29T23:30:00+08:00"


def create_loan(book_id: int, member: str) -> dict:
    """Lend a book to a member."""
    return {"loan_id": 7, "book_id": book_id, "member": member}


def list_books(author: str) -> list:
    """Books by an author."""
    return [{"id": 5, "title": "Kindred"}]


TOOLS = [
    build_tool(get_weather, "w/v1/get_weather", annotations=READ),
    build_tool(get_time, "t/v1/get_time", annotations=READ),
    build_tool(create_loan, "lib/v1/create_loan"),
    build_tool(list_books, "lib/v1/list_books", annotations=READ),
]
REGISTRY = ToolRegistry(TOOLS)
SCORING = Capabilities(json_schema_output=True, grammar=True, scoring=True)
GATE = DecisionTuning(call_margin=0.5, more_calls_margin=-8.0)


def scores(margin: float) -> ModelTurn:
    return ModelTurn(scores={"yes": 0.0, "no": -margin} if margin >= 0 else {"yes": margin, "no": 0.0})


def writes(name, arguments):
    return lambda request: (
        request.assistant_prefix + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    )


def more(margin: float) -> ModelTurn:
    return ModelTurn(scores={",": margin, "]": 0.0})


def run(flow, decisions, polish=(), question="北京天气怎么样,现在几点?"):
    decider = ScriptedProvider(list(decisions), capabilities=SCORING, tuning=GATE)
    polisher = ScriptedProvider(list(polish))
    engine = Engine(
        REGISTRY, lambda cfg: decider if isinstance(cfg, DecisionConfig) else polisher, MemorySink()
    )
    result = engine.run(flow, question)
    return result, (polisher if polish else decider)


def flow(tools=("w/v1/get_weather", "t/v1/get_time"), polish=False, **kw) -> Flow:
    return Flow(
        name="t",
        tools=list(tools),
        decision=DecisionConfig(provider="scripted", calling_way="schema"),
        polish=PolishConfig(provider="scripted") if polish else None,
        **kw,
    )


# --- point 1: a run with tools and no tool result is never a plain success -----------------


def test_no_tool_fits_is_answered_without_tools_with_the_gates_reason():
    result, _ = run(flow(), [scores(-3.0), scores(-2.0), '{"answer": "你好!"}'], question="hello")
    assert result.status == RunStatus.SUCCEEDED and result.outcome == ANSWERED_WITHOUT_TOOLS
    assert result.outcome_reasons == ["no tool fits 'hello'"]
    gate = [s.note for s in result.steps if s.note and s.note.startswith("checked whether")]
    assert gate == [
        "checked whether get_weather fits: no, margin -3.00, bar 0.50",
        "checked whether get_time fits: no, margin -2.00, bar 0.50",
    ]  # the margins are on the record


def test_a_flow_may_allow_answers_without_tools():
    result, _ = run(
        flow(answers_without_tools=True),
        [scores(-3.0), scores(-2.0), '{"answer": "你好!"}'],
        question="hello",
    )
    assert result.status == RunStatus.SUCCEEDED and result.outcome is None
    assert "answers_without_tools" not in Flow(name="x").model_dump()  # off: a saved flow keeps its hash
    assert flow(answers_without_tools=True).model_dump()["answers_without_tools"] is True


def test_a_flow_without_tools_is_a_plain_success():
    result, _ = run(flow(tools=()), ['{"answer": "hi"}'], question="hello")
    assert result.outcome is None


# --- point 2: every fitting tool gets its call -------------------------------------------


def test_the_first_call_is_held_to_fitting_tools_and_the_list_goes_on_over_every_tool():
    """Asked about the whole request, the gate finds only the weather tool fitting "weather in
    Beijing, and the time there?"; the time tool still gets its call: the decision lists every
    tool, the first call is held to the fitting one, the next ones to any."""
    script = [
        scores(2.0),
        scores(-1.0),  # get_time is not found fitting: the request is mostly about weather
        writes("get_weather", {"location": "北京"}),
        more(-1.0),
        writes("get_time", {}),
        more(-11.0),  # the usual check ends the list
        '{"answer": "晴,23:30"}',
    ]
    result, decider = run(flow(), script)
    calls = [s.name for s in result.steps if s.kind == StepKind.TOOL_CALL]
    assert calls == ["get_weather", "get_time"] and result.outcome is None
    first, second = decider.requests[2], decider.requests[4]
    assert "get_time" in first.messages[0].content  # every tool is listed in the prompt
    assert first.response_format.json_schema["properties"]["name"] == {"const": "get_weather"}
    names = [i["properties"]["name"]["const"] for i in second.response_format.json_schema["anyOf"]]
    assert names == ["get_weather", "get_time"]
    notes = [s.note for s in result.steps if s.kind == StepKind.MODEL_CALL]
    assert sum(n.startswith("another call") for n in notes) == 2  # one check per call, as before


# --- point 3: a part left undone is said ------------------------------------------------


def test_a_part_without_a_result_is_partly_done_and_the_answer_says_so():
    script = [
        scores(2.0),
        scores(1.5),
        calls_json(("get_weather", {"location": "北京"})),
        '{"answer": "北京晴。"}',
    ]
    result, _ = run(flow(parallel_tool_calls=False), script)
    assert result.outcome == PARTLY_DONE
    assert result.outcome_reasons == ["get_time fits the request, and no call of it was made"]
    assert result.final_answer == "北京晴。\n\n未能完成的部分:get_time 没有调用。"


def test_the_polish_model_is_told_which_parts_are_open():
    script = [
        scores(2.0),
        scores(1.5),
        calls_json(("get_weather", {"location": "Beijing"})),
        '{"answer": "Sunny"}',
    ]
    result, polisher = run(
        flow(parallel_tool_calls=False, polish=True),
        script,
        ["It is sunny in Beijing."],
        question="What's the weather in Beijing, and what time is it there?",
    )
    system, brief = polisher.requests[0].messages
    assert UNDONE_NOTE in system.content and "get_time fits the request" in brief.content
    assert result.final_answer == "It is sunny in Beijing.\n\nNot done: get_time (no call was made)."


# --- point 1: actions an answer claims that no tool did -------------------------------


def test_a_claimed_loan_that_no_tool_made_is_flagged_and_the_polish_model_is_warned():
    lib = flow(tools=("lib/v1/list_books", "lib/v1/create_loan"), polish=True)
    script = [
        scores(-1.0),
        scores(-0.5),
        '{"answer": "Book with id 5 has been successfully lent to member Bob."}',
    ]
    result, polisher = run(
        lib,
        script,
        ["Book with id 5 has been successfully lent to member Bob."],
        question="Lend the book with id 5 to member bob.",
    )
    assert result.outcome == ANSWERED_WITHOUT_TOOLS
    assert "the answer says 'lent', and no tool call in this run did that" in result.outcome_reasons
    assert result.final_answer.endswith("Note: no tool did what this answer calls 'lent' in this run.")
    system, brief = polisher.requests[0].messages
    assert NO_ACTION_NOTE in system.content and "Actions done by tools: none." in brief.content
    assert "successfully lent" not in brief.content  # the unbacked draft is not handed on


def test_a_loan_a_tool_made_backs_the_claim():
    lib = flow(tools=("lib/v1/list_books", "lib/v1/create_loan"), polish=True, parallel_tool_calls=False)
    script = [
        scores(-1.0),
        scores(2.0),
        calls_json(("create_loan", {"book_id": 5, "member": "bob"})),
        '{"answer": "ok"}',
    ]
    result, polisher = run(
        lib,
        script,
        ["Book 5 has been lent to bob (loan 7)."],
        question="Lend the book with id 5 to member bob.",
    )
    assert result.outcome is None and result.final_answer == "Book 5 has been lent to bob (loan 7)."
    assert NO_ACTION_NOTE not in polisher.requests[0].messages[0].content


def test_no_internal_label_reaches_the_answer():
    script = [
        scores(2.0),
        scores(-1.0),
        calls_json(("get_weather", {"location": "北京"})),
        '{"answer": "北京晴"}',
    ]
    result, polisher = run(
        flow(polish=True, parallel_tool_calls=False),
        script,
        ["The decision model's draft answer: 北京晴,21度。"],
        question="北京天气",
    )
    assert result.final_answer == "北京晴,21度。"


def calls_json(*calls):
    return json.dumps({"tool_calls": [{"name": n, "arguments": a} for n, a in calls]}, ensure_ascii=False)


# --- claims, read out of answers --------------------------------------------------------


@pytest.mark.parametrize(
    "text, kind",
    [
        ("Book with id 5 has been successfully lent to member Bob.", "lend"),
        ("I've added 'buy milk' to your tasks.", "create"),
        ("Your table was booked for 7 pm.", "book"),
        ("The email has been sent to Alice.", "send"),
        ("已为您添加待办:买牛奶。", "create"),
        ("酒店已预订成功。", "book"),
        ("任务已经删除了", "delete"),
    ],
)
def test_claims_of_done_actions_are_read(text, kind):
    assert [c.kind for c in claims(text)] == [kind]


@pytest.mark.parametrize(
    "text",
    [
        "I could not lend the book: no loan was made.",
        "The book was not lent.",
        "Would you like me to book a table?",
        "I will add it once you confirm.",
        "未能添加待办:没有调用工具。",
        "需要我帮你预订吗?",
        "北京今天晴,最高21度。",
        "The weather in Beijing is sunny.",
    ],
)
def test_no_claim_in_a_refusal_an_offer_or_a_plain_answer(text):
    assert claims(text) == []


def test_a_claim_in_a_json_answer_is_marked_on_its_value():
    lib = flow(tools=("lib/v1/list_books", "lib/v1/create_loan"), polish=True)
    lib.polish.output_schema = {"type": "object", "properties": {"message": {"type": "string"}}}
    result, _ = run(
        lib,
        [scores(-1.0), scores(-0.5), '{"answer": "ok"}'],
        ['{"message": "已为您借出《Kindred》。"}'],
        question="把5号书借给bob",
    )
    assert result.outcome == ANSWERED_WITHOUT_TOOLS
    [entry] = [e for e in result.provenance if e["path"] == "/message"]
    assert entry["claim"] == "借出"


def test_only_a_tool_that_changes_something_backs_a_claim():
    loan = build_tool(create_loan, "lib/v1/create_loan")
    books = build_tool(list_books, "lib/v1/list_books", annotations=READ)
    made = CallOutcome(ToolCall(id="1", name="create_loan", arguments={}), loan, result={"loan_id": 7})
    looked = CallOutcome(ToolCall(id="2", name="list_books", arguments={}), books, result=[])
    text = {"message": "Kindred has been lent to alice."}
    assert undone_claims(text, [made], [loan, books]) == []
    assert [c.words for c in undone_claims(text, [looked], [loan, books])] == ["lent"]


def drop_missing(table: str) -> dict:
    """Drop the rows with missing values."""
    return {"rows": 11, "rows_dropped": 1}


def read_csv(path: str) -> dict:
    """Load a CSV file."""
    return {"rows": 12}


def test_only_the_kinds_of_action_the_flow_offers_a_tool_for_are_checked():
    dropper = build_tool(drop_missing, "data/v1/drop_missing")
    reader = build_tool(read_csv, "data/v1/read_csv", annotations=READ)
    read = CallOutcome(ToolCall(id="1", name="read_csv", arguments={}), reader, result={"rows": 12})
    said = "The file had 12 rows; 1 row with missing values was dropped and 11 rows are left."
    assert [c.words for c in undone_claims(said, [read], [reader, dropper])] == ["dropped"]
    # a flow that only looks things up: its answer's verbs claim nothing
    assert undone_claims("The sky has cleared over Beijing.", [read], [reader]) == []
    # nor does a kind of action no offered tool does ("cleared" is deleting; a loan tool lends)
    loan = build_tool(create_loan, "lib/v1/create_loan")
    assert (
        undone_claims("The sky has cleared; Kindred was lent to bob.", [read], [reader, loan])[0].words
        == "lent"
    )
    assert len(undone_claims("The sky has cleared; Kindred was lent to bob.", [read], [reader, loan])) == 1


def test_a_weather_answer_saying_the_sky_has_cleared_is_a_plain_success():
    script = [
        scores(2.0),
        scores(-1.0),
        calls_json(("get_weather", {"location": "北京"})),
        '{"answer": "北京晴"}',
    ]
    answer = "The sky has cleared over Beijing: sunny, 21°C."
    result, _ = run(flow(polish=True, parallel_tool_calls=False), script, [answer], question="北京天气")
    assert result.outcome is None and result.final_answer == answer
