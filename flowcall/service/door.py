"""One door for runs: whoever starts a run (the studio, the HTTP API, the CLI, an experiment)
records it first and hands it over by its id through a RunDoor, which decides where it runs:

    in this process, now      workers/here.py HereDoor (the CLI, the API's request threads)
    on this process's threads workers/runner.py Runner (the studio's lanes)
    on the Celery workers     service/broker.py WorkersDoor (FLOWCALL_BROKER_URL, `flowcall worker`)

`enter` is the one sequence every start goes through: the door is ready, the flow's settings
are there (when it runs here), the runs are recorded, then handed over; a door that refuses
them leaves them cancelled, saying why, so nothing stays queued that nobody will run.
`choose` is the one place that says which door a start uses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from flowcall.core import config
from flowcall.core.errors import ConfigError
from flowcall.core.spec import Flow
from flowcall.core.steps import ChatTurn, Run

if TYPE_CHECKING:
    from flowcall.engine.approval import Approver
    from flowcall.service.front import FlowCall


class RunDoor(Protocol):
    """Where recorded runs go on, given their ids."""

    name: str  # who takes the runs, in words: "the broker", "the studio's runner"
    runs_here: bool  # do the runs go on in this process (so its settings are the ones they use)?

    def ready(self) -> None:
        """ConfigError, naming the settings, when runs cannot be handed over here at all:
        asked before anything is recorded."""

    def hand_over(self, run_ids: Sequence[str]) -> dict[str, Run]:
        """Take these recorded runs (queued, or interrupted) to run or resume them; ConfigError
        when the door does not take them. Returns the runs it ran before returning (a door
        that runs them now), as they ended or paused, by id; none for a door that runs later."""

    def continue_with(self, run_id: str, approver: Approver | None) -> None:
        """Go on with a run that waits for a person, with the person's decisions."""


class Refused(ConfigError):
    """The door did not take the runs; they are cancelled, saying why (`run_ids`)."""

    def __init__(self, message: str, run_ids: list[str]) -> None:
        super().__init__(message)
        self.run_ids = run_ids


@dataclass(frozen=True)
class Entered:
    """Runs recorded and handed over: their ids, and those the door ran already (hand_over)."""

    run_ids: list[str]
    ended: dict[str, Run]


def enter(
    service: FlowCall, door: RunDoor, record: Callable[[], Sequence[str]], *, flow: Flow | None = None
) -> Entered:
    """Check the door is ready and, for a door that runs here, that `flow`'s hosted models have
    their settings (NotConfigured, naming the variable); then `record` the runs (it returns
    their ids) and hand them over. Nothing is recorded when a check fails. When the door
    refuses the runs, each is cancelled, saying why, and Refused (a ConfigError) is raised."""
    door.ready()
    if flow is not None and door.runs_here:
        service.check_settings(flow)
    run_ids = list(record())
    try:
        ended = door.hand_over(run_ids)
    except Refused:
        raise
    except ConfigError as exc:
        for run_id in run_ids:
            try:
                service.cancel(run_id, by=f"nobody: {door.name} did not take it ({exc})")
            except ConfigError:
                pass  # it ended meanwhile (a door that ran part of them): it stays as it ended
        raise Refused(str(exc), run_ids) from exc
    return Entered(run_ids, ended)


def start_run(
    service: FlowCall,
    door: RunDoor,
    flow: Flow,
    question: str,
    *,
    api_key: str | None = None,
    run_id: str | None = None,
    context: list[ChatTurn] | None = None,
) -> Run:
    """Record a run of `flow` on `question` and hand it over (`enter`); the run as it is then:
    queued on the workers, or ended (or waiting for a person) when it ran here. `api_key`,
    `run_id` and `context` as `FlowCall.run` takes them."""

    def record() -> list[str]:
        adopted = service.prepare(flow)
        return [service.submit(adopted, question, api_key=api_key, run_id=run_id, context=context).id]

    entered = enter(service, door, record, flow=flow)
    (run_id,) = entered.run_ids
    return entered.ended.get(run_id) or service.get_run(run_id)


def choose(service: FlowCall, here: RunDoor | None, *, queue: bool | None = None) -> RunDoor:
    """The door a start goes through: the workers' when `queue` asks for them (or, with `queue`
    None, whenever FLOWCALL_BROKER_URL is set); else `here` (the caller's own way to run)."""
    from flowcall.service.broker import WorkersDoor

    if queue or (queue is None and config.broker_url()):
        return WorkersDoor(service)
    if here is None:
        raise ConfigError(
            "runs go on the workers only, here: set FLOWCALL_BROKER_URL and start `flowcall worker`"
        )
    return here
