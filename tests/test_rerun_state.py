"""A re-run starts from the same loop state the original run had at the cut: the model reads
the same (cut) tool results, and the state is the engine's own versioned form."""

from __future__ import annotations

from flowcall.core.spec import DecisionConfig, Flow
from flowcall.core.steps import StepKind, is_reused
from flowcall.engine.loop_state import FORMAT
from flowcall.service.front import FlowCall
from flowcall.tools.base import Tool
from flowcall.tools.execute import MODEL_RESULT_CHARS
from tests.test_inspector import scripted

BIG = Tool(
    name="big_report",
    version="test/v1/big_report",
    description="The whole quarterly report.",
    parameters={"type": "object", "properties": {}},
    func=lambda: "x" * 100_000,
)


def tool_texts(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_a_rerun_feeds_the_model_the_same_cut_result_as_the_original_run() -> None:
    service = FlowCall.open()
    service.registry.register(BIG)
    flow = Flow(
        name="long-report", tools=[BIG.version], decision=DecisionConfig(provider="scripted"), max_rounds=2
    )
    scripted(service, [[("big_report", {})], "It is long."], [])
    run = service.run(flow, "How long is the report?")
    decided = [s for s in run.steps if s.kind == StepKind.MODEL_CALL]
    original = tool_texts(decided[1].request)
    assert len(original) == 1 and len(original[0]) < MODEL_RESULT_CHARS + 200  # the engine cut it

    scripted(service, ["Still long."], [])
    again = service.rerun_from(run.id, decided[1].seq)  # decide the second round again
    redone = next(s for s in again.steps if s.kind == StepKind.MODEL_CALL and not is_reused(s))
    assert tool_texts(redone.request) == original


def test_the_rebuilt_state_is_the_engines_versioned_form() -> None:
    service = FlowCall.open()
    service.registry.register(BIG)
    flow = Flow(
        name="long-report", tools=[BIG.version], decision=DecisionConfig(provider="scripted"), max_rounds=2
    )
    scripted(service, [[("big_report", {})], "It is long."], [])
    run = service.run(flow, "How long is the report?")
    from flowcall.engine.rerun import checkpoint_before

    state, _ = checkpoint_before(run, flow, [s for s in run.steps if s.kind == StepKind.MODEL_CALL][1].seq)
    saved = state.checkpoint()
    assert saved["v"] == FORMAT
