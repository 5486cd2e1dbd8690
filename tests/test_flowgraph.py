"""The canvas and the flow hold the same thing: flow → canvas → flow and canvas → flow → canvas
give back what they started from; layout never makes a new version; a run is drawn on its graph."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowcall.core.errors import ConfigError
from flowcall.core.spec import Flow, FlowLayout, load_flow, parse_flow
from flowcall.core.steps import Run, RunStatus, Step, StepKind
from flowcall.store.repository import Store
from flowcall.studio import flowgraph as fg
from flowcall.studio.templates import BY_KEY

FLOWS = sorted(Path(__file__).resolve().parents[1].joinpath("flows").glob("*.json"))


@pytest.mark.parametrize("path", FLOWS, ids=lambda p: p.stem)
def test_every_example_flow_survives_the_round_trip(path: Path) -> None:
    flow = load_flow(path)
    state = fg.to_canvas(flow)
    back = fg.to_flow(state)
    assert back.model_dump(mode="json") == flow.model_dump(mode="json")
    assert fg.canonical(fg.to_canvas(back)) == fg.canonical(state)


names = st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True)
refs = st.lists(
    st.sampled_from(
        [
            "weather/v1/get_weather",
            "weather/v1/get_day_weather",
            "data/v1/read_csv",
            "git/mcp/git_status",
            "git/mcp/git_log",
            "pets/http/listPets",
            "hr/v1/lookup",
        ]
    ),
    unique=True,
    max_size=5,
)
coordinate = st.floats(min_value=-5000, max_value=5000, allow_nan=False).map(lambda v: round(v, 1))
text = st.text(max_size=30)


@st.composite
def flows(draw: st.DrawFn) -> Flow:
    tools = draw(refs)
    bare = [fg.bare_name(r) for r in tools]
    data = {
        "name": draw(names),
        "description": draw(text),
        "decision": {
            "provider": draw(st.sampled_from(["local", "openai", "dashscope"])),
            "model": draw(names),
            "calling_way": draw(st.sampled_from(["auto", "native", "schema", "prompt"])),
            "system_prompt": draw(text),
            "temperature": draw(st.sampled_from([0.0, 0.3, 1.0])),
            "max_tokens": draw(st.integers(1, 4096)),
        },
        "tools": tools,
        "tool_choice": draw(st.sampled_from(["auto", "required", "none", *bare])),
        "parallel_tool_calls": draw(st.booleans()),
        "max_rounds": draw(st.integers(1, 50)),
        "retry_budget": draw(st.integers(0, 10)),
        "tool_timeout_s": draw(st.sampled_from([5.0, 30.0])),
        "needs_approval": draw(
            st.lists(st.sampled_from(tools + bare) if tools else st.nothing(), unique=True)
        ),
        "mcp_servers": [{"name": "git", "command": ["uvx", "mcp-server-git"]}] if draw(st.booleans()) else [],
        "http_tools": [{"name": "pets", "openapi": "https://pets.example.com/openapi.json"}]
        if draw(st.booleans())
        else [],
    }
    if draw(st.booleans()):
        data["polish"] = {
            "provider": "local",
            "model": "embedded",
            "system_prompt": draw(text),
            "output_schema": draw(
                st.sampled_from(
                    [
                        None,
                        {
                            "type": "object",
                            "properties": {"answer": {"type": "string"}},
                            "required": ["answer"],
                        },
                    ]
                )
            ),
        }
    flow = parse_flow(data, source="generated")
    if draw(st.booleans()):
        ids = ["question", "decision", "answer", *(fg.tool_id(r) for r in tools)]
        flow.layout = FlowLayout(positions={i: (draw(coordinate), draw(coordinate)) for i in ids})
    return flow


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flows())
def test_generated_flows_survive_the_round_trip(flow: Flow) -> None:
    state = fg.to_canvas(flow)
    back = fg.to_flow(state)
    assert back.content_hash() == flow.content_hash()
    assert fg.canonical(fg.to_canvas(back)) == fg.canonical(state)


@settings(max_examples=80, deadline=None)
@given(
    flows(),
    st.dictionaries(
        st.sampled_from(["question", "decision", "answer", "polish"]),
        st.fixed_dictionaries({"x": coordinate, "y": coordinate}),
    ),
)
def test_moving_nodes_changes_the_layout_and_never_the_flow(flow: Flow, moves: dict) -> None:
    state = fg.move_nodes(fg.to_canvas(flow), moves)
    back = fg.to_flow(state)
    assert back.content_hash() == flow.content_hash()
    for node_id, where in moves.items():
        if state.node(node_id):
            assert back.layout.positions[node_id] == (where["x"], where["y"])
    assert fg.canonical(fg.to_canvas(back)) == fg.canonical(state)


def test_saving_a_moved_canvas_keeps_the_layout_and_makes_no_new_version(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'db.sqlite'}")
    flow = load_flow(FLOWS[0])
    _, first = store.save_flow(flow)
    moved = fg.move_nodes(fg.to_canvas(store.get_flow(flow.name)[0]), {"decision": {"x": 400, "y": -20}})
    _, again = store.save_flow(fg.to_flow(moved))
    assert again == first
    assert store.get_flow(flow.name)[0].layout.positions["decision"] == (400.0, -20.0)
    assert len(store.flow_versions(flow.name)) == 1
    # a real change is a new version, and the layout stays
    changed = fg.to_canvas(store.get_flow(flow.name)[0])
    decision = changed.node("decision")
    changed = fg._replace(
        changed, decision.model_copy(update={"config": {**decision.config, "max_rounds": 3}})
    )
    _, second = store.save_flow(fg.to_flow(changed))
    assert second == first + 1
    assert store.get_flow(flow.name)[0].layout.positions["decision"] == (400.0, -20.0)


def test_the_layout_travels_in_the_flow_file_and_stays_out_of_its_hash() -> None:
    flow = load_flow(FLOWS[0])
    flow.layout = FlowLayout(positions={"decision": (1.0, 2.0)}, parked=["weather/v1/get_weather"])
    shared = parse_flow(flow.to_json(), source="a shared file")
    assert shared.layout == flow.layout
    assert shared.content_hash() == load_flow(FLOWS[0]).content_hash()
    assert "layout" not in shared.model_dump(mode="json")


@pytest.mark.parametrize(
    "bad",
    [
        {"positions": {"decision": [float("inf"), 0]}},
        {"positions": {"decision": [1e12, 0]}},
        {"positions": {f"n{i}": [0, 0] for i in range(1001)}},
        {"positions": {"x" * 301: [0, 0]}},
        {"positions": {}, "script": "alert(1)"},
    ],
)
def test_a_hostile_layout_is_refused_with_a_sentence(bad: dict) -> None:
    data = {**load_flow(FLOWS[0]).model_dump(mode="json"), "layout": bad}
    with pytest.raises(ConfigError) as caught:
        parse_flow(data, source="shared.json")
    assert "layout" in str(caught.value).lower()


def test_a_blank_canvas_is_built_from_the_palette() -> None:
    state = fg.blank_canvas("commute", BY_KEY["blank"].decision())
    assert [n.kind for n in state.nodes] == ["question", "answer"]
    with pytest.raises(ConfigError, match="no decision model"):
        fg.to_flow(state)
    state = fg.add_node(state, "decision", {})
    state = fg.add_node(state, "tool", {"ref": "weather/v1/get_day_weather"})
    state = fg.add_node(state, "polish", {"provider": "local", "model": "embedded"})
    flow = fg.to_flow(state)
    assert flow.tools == ["weather/v1/get_day_weather"]
    # the new-flow defaults that suit the built-in model
    assert (flow.decision.calling_way, flow.parallel_tool_calls, flow.max_rounds) == ("schema", True, 2)
    assert fg.edges(state) == [
        ("question", "decision"),
        ("decision", "tool:weather/v1/get_day_weather"),
        ("decision", "polish"),
        ("polish", "answer"),
    ]


def test_canvas_events_delete_disconnect_and_connect() -> None:
    state = fg.to_canvas(load_flow(next(p for p in FLOWS if p.stem == "commute_weather")))
    tool = "tool:weather/v1/get_day_weather"
    parked = fg.apply_event(state, {"kind": "disconnect", "ids": [f"decision->{tool}"]})
    flow = fg.to_flow(parked)
    assert (flow.tools, flow.tool_choice) == ([], "auto")  # the choice named the tool that left
    assert flow.layout.parked == ["weather/v1/get_day_weather"]
    assert fg.canonical(fg.to_canvas(flow)) == fg.canonical(fg.to_canvas(fg.to_flow(parked)))
    again = fg.apply_event(parked, {"kind": "connect", "source": "decision", "target": tool})
    assert fg.to_flow(again).tools == ["weather/v1/get_day_weather"]
    gone = fg.apply_event(again, {"kind": "delete", "ids": [tool, "question", "answer"]})
    assert [n.id for n in gone.nodes] == ["question", "decision", "polish", "answer"]
    assert fg.to_flow(gone).tool_choice == "auto"  # it named the tool that went
    # what the canvas sends is untrusted: odd events change nothing
    for odd in (
        {"kind": "move", "positions": {"decision": {"x": "1e999", "y": 0}}},
        {"kind": "move", "positions": 3},
        {"kind": "delete", "ids": "decision"},
        {"kind": "connect", "source": "question", "target": tool},
        {"kind": "explode"},
    ):
        assert fg.canonical(fg.apply_event(state, odd)) == fg.canonical(state)


def _step(seq: int, kind: StepKind, **kw) -> Step:
    return Step(run_id="r1", seq=seq, kind=kind, **kw)


def test_a_run_is_drawn_on_its_graph() -> None:
    flow = load_flow(next(p for p in FLOWS if p.stem == "commute_weather"))
    run = Run(
        id="r1",
        flow_name=flow.name,
        question="q",
        trace_id="t",
        status=RunStatus.SUCCEEDED,
        steps=[
            _step(1, StepKind.MODEL_CALL, tokens_in=100, tokens_out=20, latency_ms=1500),
            _step(
                2,
                StepKind.TOOL_CALL,
                name="get_day_weather",
                arguments={"location": "成都"},
                result={"rain_day": True},
            ),
            _step(
                3,
                StepKind.TOOL_CALL,
                name="get_day_weather",
                arguments={"location": "x"},
                error_code="TOOL_ERROR",
                error_message="no such city",
            ),
            _step(4, StepKind.POLISH, tokens_in=300, tokens_out=80, latency_ms=4000),
        ],
    )
    marks = fg.run_marks(run, flow)
    tool = marks["tool:weather/v1/get_day_weather"]
    assert (tool.calls, tool.status, tool.steps, tool.last_error) == (2, "error", [2, 3], "no such city")
    assert (marks["decision"].tokens, marks["polish"].latency_ms) == (120, 4000)
    views = {v["id"]: v for v in fg.node_view(fg.to_canvas(flow), marks=marks)}
    assert views["tool:weather/v1/get_day_weather"]["badge"] == "2 calls"
    assert views["tool:weather/v1/get_day_weather"]["status"] == "error"
    assert views["decision"]["badge"] == "120 tok · 1.5 s"
    svg = fg.to_svg(fg.to_canvas(flow), marks)
    assert "2 calls" in svg and svg.startswith("<svg")


def test_a_call_waiting_for_a_person_is_amber_until_decided() -> None:
    flow = load_flow(next(p for p in FLOWS if p.stem == "create_task"))
    ref = flow.tools[0]
    waiting = Run(
        id="r1",
        flow_name=flow.name,
        question="q",
        trace_id="t",
        status=RunStatus.WAITING_APPROVAL,
        steps=[
            _step(1, StepKind.MODEL_CALL),
            _step(
                2,
                StepKind.APPROVAL,
                name=fg.bare_name(ref),
                arguments={"title": "x"},
                note="waiting for a person to approve, deny or edit",
            ),
        ],
    )
    view = {v["id"]: v for v in fg.node_view(fg.to_canvas(flow), marks=fg.run_marks(waiting, flow))}
    assert view[fg.tool_id(ref)]["status"] == "waiting"
    assert view[fg.tool_id(ref)]["badge"] == "waiting for you"


def test_text_from_outside_is_cut_and_drawn_as_text() -> None:
    flow = load_flow(FLOWS[0])
    flow.description = "<script>alert(1)</script>" + "x" * 500
    svg = fg.to_svg(fg.to_canvas(flow))
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    view = fg.node_view(fg.to_canvas(flow))[0]
    assert len(view["subtitle"]) <= 80
