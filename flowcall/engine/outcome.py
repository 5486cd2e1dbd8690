"""What a run's tools did, as its outcome: none (tool results back every part of the request),
answered_without_tools (none backs it), or partly_done (a part got no result, or the answer says
an action was done that no tool did). The engine asks for the gaps before the answer is written,
so the polish model is told of them, and judges the answer after."""

from __future__ import annotations

from typing import Any

from flowcall.core.spec import Flow
from flowcall.core.steps import ANSWERED_WITHOUT_TOOLS, PARTLY_DONE, Run
from flowcall.engine.claims import actions_done, undone_claims, undone_reason
from flowcall.engine.final_answer import Gaps, with_undone_claims
from flowcall.engine.loop_state import LoopState
from flowcall.tools.base import Tool


def gaps_of(state: LoopState, flow: Flow, tools: dict[str, Tool]) -> Gaps:
    """What no tool did, before the answer: why no result backs it, the parts left undone, and
    whether tools that change something were offered and none of them did anything."""
    unbacked = state.unbacked_reasons(flow)
    undone = state.undone_parts(tools) if unbacked is None else []
    offered_actions = any(not t.annotations.read_only for t in tools.values())
    return Gaps(unbacked, undone, offered_actions and not actions_done(state.done))


def judged(run: Run, state: LoopState, gaps: Gaps, answer: Any, tools: dict[str, Tool]) -> Any:
    """The run's outcome and reasons set from the gaps and the actions the answer claims; a text
    answer that claims one no tool did ends with a line saying so (its words are kept in
    state.claims, to be marked on the answer's values)."""
    said = undone_claims(answer, state.done, tools.values())
    claimed = [undone_reason(c) for c in said]
    state.claims = [c.words for c in said]
    if isinstance(answer, str):
        answer = with_undone_claims(answer, state.claims, run.question)
    if gaps.unbacked is not None:
        run.outcome, run.outcome_reasons = ANSWERED_WITHOUT_TOOLS, gaps.unbacked + claimed
    elif gaps.undone or claimed:
        run.outcome, run.outcome_reasons = PARTLY_DONE, gaps.undone + claimed
    return answer
