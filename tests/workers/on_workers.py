"""An experiment on real `flowcall worker` processes, for the tests that hurt them (a kill, cut
database connections): the stand-in model, the dataset, the workers started, the experiment
submitted; and the readings those tests compare before and after."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import select

from flowcall.core.datasets import DatasetItem
from flowcall.core.experiment_record import Experiment
from flowcall.core.spec import parse_flow
from flowcall.eval.experiments import submit
from flowcall.service.front import FlowCall
from flowcall.store.datasets import save_dataset
from flowcall.store.experiments import get_experiment
from flowcall.store.models import StepRow
from flowcall.testing.fake_server import FakeModelServer
from flowcall.workers.local_workers import LocalWorkers

FLOW = {
    "format": "flowcall.flow/v1",
    "name": "on-workers",
    "tools": ["workertest/v1/record_item"],
    "max_rounds": 1,
    "decision": {"provider": "openai-compatible", "model": "fake", "calling_way": "native"},
    "polish": {"provider": "openai-compatible", "model": "fake"},
}


@dataclass
class OnWorkers:
    app: FlowCall
    workers: LocalWorkers
    experiment: Experiment
    run_ids: list[str]
    log: Path

    def explain(self) -> str:
        current = get_experiment(self.app.store, self.experiment.id)
        statuses = {r: self.app.store.get_run(r).status.value for r in self.run_ids}
        return (
            f"experiment {current.status.value}, {sum(i.passed is not None for i in current.items)} of "
            f"{len(self.run_ids)} items scored; runs: {statuses}\n"
            + "\n".join(self.workers.tail(n) for n in range(2))
        )

    def wait(self, what: str, ready, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if ready():
                return
            time.sleep(0.1)
        pytest.fail(f"{what} did not happen within {timeout_s:g} s\n{self.explain()}", pytrace=False)

    def wait_for_the_end(self, timeout_s: float) -> None:
        self.wait(
            "the experiment's end",
            lambda: get_experiment(self.app.store, self.experiment.id).status.value != "running",
            timeout_s,
        )

    def executions(self) -> list[tuple[int, str]]:
        """(pid, run id) of each execution of the tool, in order."""
        if not self.log.exists():
            return []
        return [
            (int(pid), run_id)
            for pid, run_id in (line.split() for line in self.log.read_text().splitlines() if line)
        ]

    def steps(self) -> dict[str, list[tuple]]:
        """Each run's committed steps, as rows to compare."""
        with self.app.store._session() as s:
            rows = s.execute(
                select(
                    StepRow.run_id,
                    StepRow.seq,
                    StepRow.kind,
                    StepRow.name,
                    StepRow.tool_call_id,
                    StepRow.tokens_in,
                    StepRow.error_code,
                )
                .where(StepRow.run_id.in_(self.run_ids))
                .order_by(StepRow.run_id, StepRow.seq)
            ).all()
        found: dict[str, list[tuple]] = {run_id: [] for run_id in self.run_ids}
        for row in rows:
            found[row[0]].append(tuple(row[1:]))
        return found


def lost_steps(before: dict[str, list[tuple]], after: dict[str, list[tuple]]) -> int:
    """Steps committed `before` that are missing or different `after`."""
    return sum(
        len(steps) - len(after[r][: len(steps)]) + sum(a != b for a, b in zip(steps, after[r]))
        for r, steps in before.items()
    )


@contextmanager
def experiment_on_workers(
    worker_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    logs: Path,
    items: int,
    settings: dict[str, str],
) -> Iterator[OnWorkers]:
    """2 workers running an experiment of `items` items on the stand-in model (200 ms a request),
    with `settings` added to the environment of the workers and of this process."""
    with FakeModelServer(delay_s=0.2) as model:
        for key, value in {"OPENAI_COMPATIBLE_BASE_URL": model.base_url, **settings}.items():
            worker_env[key] = value
            monkeypatch.setenv(key, value)
        app = FlowCall.open(worker_env["FLOWCALL_DATABASE_URL"])
        save_dataset(
            app.store,
            "items",
            [
                DatasetItem(id=f"item-{n}", question=f"item {n}", expect_calls=[{"name": "record_item"}])
                for n in range(items)
            ],
            source="test",
        )
        workers = LocalWorkers(2, worker_env, logs)
        try:
            workers.start().wait_ready(timeout_s=90)
            experiment = submit(app, parse_flow(FLOW), "on-workers", "items")
            yield OnWorkers(
                app,
                workers,
                experiment,
                [item.run_id for item in experiment.items],
                Path(worker_env["WORKER_TEST_LOG"]),
            )
        finally:
            workers.stop()
            app.store.close()
