"""One rule for what a paused run waits on (steps.waiting_calls), shared by the API, the
studio's waiting list and the Run page."""

from __future__ import annotations

from flowcall.api.running import run_summary
from flowcall.core.steps import Run, RunStatus, Step, StepKind, waiting_calls
from flowcall.engine.approval import MAYBE_RAN_NOTE, WAITING_NOTE


def approval(seq, call_id, note, result=None):
    return Step(
        run_id="r",
        seq=seq,
        kind=StepKind.APPROVAL,
        name=f"tool_{call_id}",
        tool_call_id=call_id,
        arguments={"n": seq},
        note=note,
        result=result,
    )


def test_a_call_answered_on_an_earlier_resume_no_longer_waits():
    run = Run(
        id="r",
        flow_name="f",
        question="q",
        trace_id="t",
        status=RunStatus.WAITING_APPROVAL,
        steps=[
            approval(1, "a", WAITING_NOTE),
            approval(2, "b", WAITING_NOTE),
            approval(3, "a", "approved by alice", result="approved"),  # a was answered
            Step(run_id="r", seq=4, kind=StepKind.TOOL_CALL, name="tool_a", tool_call_id="a"),
            approval(5, "c", MAYBE_RAN_NOTE),  # c: started before an interruption, asked again
        ],
    )
    assert [s.tool_call_id for s in waiting_calls(run)] == ["b", "c"]
    # the API says the same, and no longer stops at the first step that is not an approval
    assert [w["call_id"] for w in run_summary(run)["waiting"]] == ["b", "c"]
