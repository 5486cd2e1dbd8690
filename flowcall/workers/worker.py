"""`flowcall worker`: a Celery 5 worker over Redis that executes the runs submitted with --queue.

Each pool process opens its own FlowCall service (its own database connections) when it starts,
and does for each task what work.py says, given the task's run id. A run another live process
holds comes back later (a retry with a countdown); so does a run whose database went away under
it (PostgreSQL restarting): the next attempt finds it interrupted and resumes it.
"""

from __future__ import annotations

import logging
import os
import socket
from typing import Any

from sqlalchemy.exc import DBAPIError

from flowcall.core import config
from flowcall.service import broker
from flowcall.store import open_store
from flowcall.workers.work import Later, work_on

log = logging.getLogger("flowcall.workers.worker")
app = broker.celery_app()
_service: tuple[int, Any] | None = None
DATABASE_RETRY_S = (1, 2, 5, 10, 20, 30)  # then every 30 s, until the database is back


def service() -> Any:
    """This process's service, opened on first use after a fork (a pool process never shares
    the parent's database connections)."""
    global _service
    if _service is None or _service[0] != os.getpid():
        from flowcall.service.front import FlowCall

        _service = (os.getpid(), FlowCall.open())
        _service[1].registry  # the plugin tools load now, not inside the first run
    return _service[1]


@app.task(name=broker.TASK, bind=True, max_retries=None, acks_late=True, reject_on_worker_lost=True)
def execute_run(self: Any, run_id: str) -> None:
    """Run, resume or score the run `run_id` (work.work_on)."""
    try:
        outcome = work_on(service(), run_id)
    except DBAPIError as exc:  # the database is unreachable or restarting: try again later
        wait = DATABASE_RETRY_S[min(self.request.retries, len(DATABASE_RETRY_S) - 1)]
        log.warning(
            "run %s: database error, again in %s s: %s", run_id, wait, " ".join(str(exc).split())[:300]
        )
        raise self.retry(countdown=wait) from exc
    if isinstance(outcome, Later):
        log.info("%s; again in %.0f s", outcome.why, outcome.seconds)
        raise self.retry(countdown=outcome.seconds)
    log.info("run %s: %s", run_id, outcome.status.value)


def _pool_process_started(**_: Any) -> None:
    try:
        service()
    except Exception:  # the task says what is wrong when it runs; a pool process must start
        log.exception("could not open the FlowCall service in pool process %s", os.getpid())


def main(concurrency: int, loglevel: str = "INFO") -> None:
    """Check the set-up (a broker, PostgreSQL, the schema migrated), then run the worker until
    it is stopped (Ctrl-C or SIGTERM: it finishes its runs first; a second Ctrl-C stops at once,
    and those runs go to another worker)."""
    from celery.signals import worker_process_init

    store = open_store()  # migrates the schema once, here, before any pool process starts
    broker.require_broker(store.engine.dialect.name)
    store.close()
    worker_process_init.connect(_pool_process_started, weak=False)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per model request is noise here
    name = f"flowcall-{os.getpid()}@{socket.gethostname()}"
    app.worker_main(
        [
            "worker",
            f"--concurrency={concurrency}",
            f"--loglevel={loglevel}",
            "--pool=prefork",
            f"--queues={config.queue_name()}",
            f"--hostname={name}",
            "--without-mingle",
            "--without-gossip",
        ]
    )
