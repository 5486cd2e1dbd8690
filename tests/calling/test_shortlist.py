"""The shortlist the relevance gate scores when many tools are attached (scripted model)."""

from __future__ import annotations

from flowcall.calling.relevance import score_tools
from flowcall.calling.shortlist import (
    PICK_PREFIX,
    SHORTLIST,
    by_overlap,
    listing,
    read_pick,
    shortlist,
    summary,
    words,
)
from flowcall.core.messages import Message, ModelRequest, ModelTurn, ToolSpec

TOOLS = [
    ToolSpec(
        name=f"tool_{i:02d}",
        description=f"Does thing {i}. Long details follow, e.g. Paris.",
        parameters={"type": "object", "properties": {}},
    )
    for i in range(20)
]
QUADRATIC = ToolSpec(
    name="algebra_quadratic_roots",
    description="Find the roots of a quadratic equation ax^2+bx+c=0.",
    parameters={},
)
WEATHER = ToolSpec(name="get_weather", description="查询城市天气。Weather for a city.", parameters={})


class Picker:
    """A model call that names one tool and scores every relevance question; it records what
    it was asked."""

    def __init__(self, reply: str):
        self.reply, self.asked = reply, []

    def __call__(self, way, sent: ModelRequest, interpret=None, note=None) -> ModelTurn:
        self.asked.append((sent, note))
        if sent.score_options:
            return ModelTurn(scores={"yes": -0.1, "no": -2.0})
        return ModelTurn(content=PICK_PREFIX + self.reply)


def test_a_short_list_is_not_shortlisted():
    picker = Picker('"tool_00"')
    assert shortlist(TOOLS[:SHORTLIST], "q", picker, "schema") == TOOLS[:SHORTLIST] and picker.asked == []


def test_the_models_choice_comes_first_then_the_best_word_overlap():
    tools = [*TOOLS, QUADRATIC, WEATHER]
    picker = Picker('"tool_07"')
    picked = shortlist(tools, "find the roots of this quadratic: x^2 - 3x + 2", picker, "schema")
    assert [t.name for t in picked[:2]] == ["tool_07", "algebra_quadratic_roots"] and len(picked) == SHORTLIST
    ((sent, note),) = picker.asked
    assert (
        sent.response_format.json_schema == {"enum": [t.name for t in tools]}
        and note == "shortlist: the best of 22 tools"
    )
    # the listing (the same on every run) is the system prompt; the request follows it
    assert "- tool_07: Does thing 7.\n" in sent.messages[0].content
    assert sent.messages[1] == Message(role="user", content="find the roots of this quadratic: x^2 - 3x + 2")


def test_word_overlap_reads_chinese_character_by_character():
    assert words("成都天气?get_Weather") == ["成", "都", "天", "气", "get", "weather"]
    assert by_overlap([*TOOLS, WEATHER], "成都天气怎么样")[0] == WEATHER


def test_an_unreadable_pick_scores_every_tool():
    assert shortlist(TOOLS, "q", Picker("not a name"), "schema") == TOOLS
    assert read_pick(PICK_PREFIX + '"tool_01"}', ["tool_01"]) == "tool_01"
    assert read_pick(PICK_PREFIX + '"tool_99"', ["tool_01"]) is None  # a name not offered is no pick


def test_the_gate_scores_only_the_shortlist_when_many_tools_are_attached():
    picker = Picker('"tool_19"')
    request = ModelRequest(messages=[Message(role="user", content="do thing 3")], tools=TOOLS)
    scored = score_tools(request, picker, "schema")
    assert len(scored) == SHORTLIST and "tool_19" in {t.name for _, t in scored}
    assert (
        len([s for s, _ in picker.asked if s.score_options]) == SHORTLIST
        and len(picker.asked) == SHORTLIST + 1
    )


def test_a_summary_is_the_first_sentence_on_one_line():
    assert summary(TOOLS[0]) == "Does thing 0."
    long = ToolSpec(name="x", description="word " * 100, parameters={})
    assert len(summary(long)) == 160 and summary(long).endswith("…")
    assert summary(ToolSpec(name="x", description="查询天气。返回温度", parameters={})) == "查询天气。"
    assert (
        summary(ToolSpec(name="x", description="Weather, e.g. Paris. More.", parameters={}))
        == "Weather, e.g. Paris."
    )
    assert listing(TOOLS[:2]) == "- tool_00: Does thing 0.\n- tool_01: Does thing 1."
