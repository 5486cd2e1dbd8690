"""The runner beside the studio: runs handed to it go on whatever the page that asked does.

A run started, re-run or resumed in the studio is recorded first (queued, or as it paused) and
then handed here by its id; the page follows it from the database. So a click, another page, a
reload or a closed tab never stops a run: only Stop does (`FlowCall.cancel`, which the engine
sees at its next step).

The runner is a door for runs (service/door.py): the studio starts through `door.choose`, which
picks the Celery workers when FLOWCALL_BROKER_URL is set (as `--queue` does) and this runner
otherwise. Here, runs go on threads of this process: one runner per process, shared by every
session. Runs on the embedded model take turns on one thread (two at once on the same CPU are
each slower than both in a row), and each shows its place in line; runs on hosted models go in
parallel, up to HOSTED_AT_ONCE.

A worker and this runner do the same with a run, `work.work_on` (run a queued run, resume an
interrupted one), so a run behaves the same wherever it goes. A run that waits for a person is
continued with the person's decisions (`continue_with`), here even with a broker: the decisions
live in this process, not in the database.

While a model writes, the text so far is kept per run (`writing`), so any page can show it as
it is written: the record of the step comes when it ends, as always.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from flowcall.core import progress
from flowcall.core.steps import Run
from flowcall.workers.work import Later, work_on

if TYPE_CHECKING:
    from flowcall.engine.approval import Approver
    from flowcall.service.front import FlowCall

HOSTED_AT_ONCE = 4  # a cap on parallel calls to hosted models from one studio, not a tuned figure
TAKE_TURNS = ("local",)  # providers whose runs take turns: the embedded model shares this CPU
log = logging.getLogger(__name__)


@dataclass
class Writing:
    """What a run's running step is writing, for whoever shows the run."""

    label: str = ""
    text: str = ""
    since: float = field(default_factory=time.monotonic)


class _Recorder:
    """A progress.Watcher that keeps the running step's text in the runner's table."""

    def __init__(self, table: dict[str, Writing], run_id: str) -> None:
        self.table, self.run_id = table, run_id

    def started(self, kind: str, label: str) -> None:
        self.table[self.run_id] = Writing(label=f"{kind.replace('_', ' ')} · {label}")

    def text(self, piece: str) -> None:
        if (now := self.table.get(self.run_id)) is not None:
            now.text += piece

    def ended(self) -> None:
        self.table.pop(self.run_id, None)


class _Lane:
    """Jobs done in the order given, by `size` daemon threads. Not a ThreadPoolExecutor: its
    threads hold the process up at exit until every job queued has run, so stopping the studio
    would wait for each run in line. A daemon thread ends with the process; the run it held
    then reads as interrupted (its owner is gone) and resumes from its last committed step."""

    def __init__(self, size: int, name: str) -> None:
        self.jobs: queue.SimpleQueue[tuple[Callable[..., None], tuple]] = queue.SimpleQueue()
        for n in range(size):
            threading.Thread(target=self._work, name=f"{name}-{n}", daemon=True).start()

    def submit(self, job: Callable[..., None], *args: object) -> None:
        self.jobs.put((job, args))

    def _work(self) -> None:
        while True:
            job, args = self.jobs.get()
            try:
                job(*args)  # Runner._run: it says what failed
            except BaseException:  # noqa: BLE001 - a lane that dies would leave its line waiting
                log.exception("a runner's job ended with an error")


class Runner:
    """Runs handed over by id, on this process's threads (see the module's doc): a RunDoor."""

    name = "the studio's runner"
    runs_here = True

    def __init__(self, service: FlowCall, take_turns: tuple[str, ...] = TAKE_TURNS) -> None:
        self.service, self.take_turns = service, take_turns
        self._local = _Lane(1, "flowcall-local-run")
        self._hosted = _Lane(HOSTED_AT_ONCE, "flowcall-run")
        self._lock = threading.Lock()
        self._line: list[str] = []  # runs on the embedded model, the one running first
        self._held: set[str] = set()  # every run handed here and not yet done with
        self.writing: dict[str, Writing] = {}
        self.problems: dict[str, str] = {}  # why a run handed here could not go on, for its page

    def ready(self) -> None:
        """Always: a run recorded here can go on here."""

    def hand_over(self, run_ids: Sequence[str]) -> dict[str, Run]:
        """Take runs that are queued (a re-run too) or interrupted: each is run or resumed, on
        a lane (so none has ended when this returns)."""
        for run_id in run_ids:
            self.problems.pop(run_id, None)
            self._hand(run_id, partial(work_on, self.service, run_id))
        return {}

    def continue_with(self, run_id: str, approver: Approver | None) -> None:
        """Hand over a run that waits for a person, with the person's decisions."""
        self.problems.pop(run_id, None)
        self._hand(run_id, lambda: self.service.resume(run_id, approver=approver))

    def holds(self, run_id: str) -> bool:
        """Was this run handed here, and is it not done with yet (in line, or going on)?"""
        with self._lock:
            return run_id in self._held

    def place(self, run_id: str) -> int | None:
        """Where a run on the embedded model is: 0 running, 1 first in line, ...; None for a run
        not waiting for the embedded model here."""
        with self._lock:
            return self._line.index(run_id) if run_id in self._line else None

    def _hand(self, run_id: str, job: Callable[[], Run | Later]) -> None:
        local = self._on_local_model(run_id)
        with self._lock:
            self._held.add(run_id)
            if local:
                self._line.append(run_id)
        pool = self._local if local else self._hosted
        pool.submit(self._run, run_id, job, local)

    def _run(self, run_id: str, job: Callable[[], Run | Later], local: bool) -> None:
        try:
            with progress.watching(_Recorder(self.writing, run_id)):
                done = job()
            while isinstance(done, Later):  # another process holds it: wait for its lease
                time.sleep(done.seconds)
                done = job()
        except Exception as exc:  # noqa: BLE001 - the engine recorded what failed; the runner goes on
            # what the engine could not record: e.g. another tab took the run, a grant was revoked
            self.problems[run_id] = str(exc)
            log.warning("run %s could not go on: %s", run_id, exc)
        finally:
            self.writing.pop(run_id, None)
            with self._lock:
                self._held.discard(run_id)
                if local:
                    self._line.remove(run_id)

    def _on_local_model(self, run_id: str) -> bool:
        flow = self.service.flow_of(self.service.get_run(run_id))
        used = {flow.decision.provider, flow.polish.provider if flow.polish else None}
        return any(provider in used for provider in self.take_turns)


_runners: dict[str, Runner] = {}
_made = threading.Lock()


def runner_for(service: FlowCall) -> Runner:
    """The one runner of this process for this database."""
    key = str(service.store.engine.url)
    with _made:
        if key not in _runners:
            _runners[key] = Runner(service)
        return _runners[key]
