"""How a run ended, as its status: the one mapping (`settle`), for runs and single decisions.

A run ends Finished (succeeded), Paused (waits for a person), or with an exception: cancelled
by a person elsewhere (RunCancelled), failed (a FlowCallError or a bug), or stopped here
(Ctrl-C, the studio ending its script), which is re-raised once the run is marked."""

from __future__ import annotations

from flowcall.core import steps
from flowcall.core.errors import ErrorCode, FlowCallError
from flowcall.core.steps import Run, RunCancelled, RunStatus, StepKind, StepSink
from flowcall.engine.model_calls import RunFailed
from flowcall.engine.phases import Finished, Paused
from flowcall.engine.recorder import Recorder


def settle(sink: StepSink, run: Run, rec: Recorder, ended: Finished | Paused | BaseException) -> Run:
    """`ended` as the run's status, told to the sink (a person's stop is marked, then raised again)."""
    if isinstance(ended, Paused):
        run.status = RunStatus.WAITING_APPROVAL
        sink.run_paused(run, ended.state.checkpoint())
        return run
    if isinstance(ended, RunCancelled):  # cancelled by a person elsewhere, or taken over: the store says so
        run.status, run.error, run.ended_at = RunStatus.CANCELLED, str(ended), steps.utcnow()
        return run
    if isinstance(ended, Finished):
        run.final_answer, run.status = ended.answer, RunStatus.SUCCEEDED
    elif isinstance(ended, FlowCallError):
        run.status, run.error = RunStatus.FAILED, f"{ended.code}: {ended.message}"
        if not isinstance(ended, RunFailed):  # a RunFailed's step is recorded already
            rec.record_last(StepKind.ERROR, error_code=str(ended.code), error_message=ended.message)
    elif isinstance(ended, Exception):  # a bug or an unexpected library error: keep the run, say what broke
        run.status, run.error = RunStatus.FAILED, f"{type(ended).__name__}: {ended}"
        rec.record_last(StepKind.ERROR, error_code=str(ErrorCode.INTERNAL), error_message=run.error)
    else:  # Ctrl-C, the studio stopping its script: a person stopped it
        _stopped(sink, run, ended)
        raise ended
    run.ended_at = steps.utcnow()
    if not sink.run_finished(run):
        run.status = RunStatus.CANCELLED  # cancelled between its last step and now: it stays so
    return run


def _stopped(sink: StepSink, run: Run, exc: BaseException) -> None:
    if isinstance(exc, KeyboardInterrupt):
        reason = "stopped with Ctrl-C"
    elif type(exc).__name__ in ("StopException", "RerunException"):  # Streamlit ends the page's script
        reason = "stopped in the studio"
    else:
        reason = f"stopped ({type(exc).__name__})"
    run.status, run.error, run.ended_at = RunStatus.CANCELLED, reason, steps.utcnow()
    try:
        sink.run_cancelled(run, reason)
    except Exception:  # the database may be what failed; the run then reads as interrupted
        pass
