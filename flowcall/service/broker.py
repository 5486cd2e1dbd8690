"""The broker: runs submitted with --queue wait in Redis as Celery tasks that carry only a run id,
until a `flowcall worker` process (worker.py) takes one and runs it from the database.

Set by FLOWCALL_BROKER_URL (and FLOWCALL_QUEUE, FLOWCALL_REDELIVERY_S). Without it nothing here
is used and every run goes on in the process that asked for it. Celery is imported only when a
queue is used, so the CLI and the studio start as fast as before.

Delivery is at least once: a task is acknowledged after its run (acks_late), a worker takes one
task at a time (prefetch 1), and a task whose worker died goes to another worker, at once when
only the pool process died (reject_on_worker_lost) and after FLOWCALL_REDELIVERY_S when the
whole worker did (Redis's visibility timeout). The run's claim in the database (a compare-and-set)
makes a task delivered twice run once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from flowcall.core import config
from flowcall.core.errors import ConfigError
from flowcall.providers.base import redact_url

if TYPE_CHECKING:
    from flowcall.service.front import FlowCall

TASK = "flowcall.execute_run"

_apps: dict[tuple[str, str, float], Any] = {}
_lock = threading.Lock()


def require_broker(database_dialect: str) -> str:
    """The broker URL, or ConfigError when queueing cannot work here: no broker set, or a
    SQLite store, which workers in other processes and on other machines cannot share."""
    url = config.broker_url()
    if not url:
        raise ConfigError(
            "runs on workers (--queue, `flowcall worker`) need a broker: set FLOWCALL_BROKER_URL (e.g. "
            "redis://127.0.0.1:6379/0), use PostgreSQL (FLOWCALL_DATABASE_URL) and start workers with "
            "`flowcall worker`; without --queue the run goes on in this process"
        )
    if database_dialect != "postgresql":
        raise ConfigError(
            f"FLOWCALL_BROKER_URL is set but the store is {database_dialect} "
            f"(FLOWCALL_DATABASE_URL={config.database_url()}): workers share runs through the "
            "database, so it must be PostgreSQL. Set FLOWCALL_DATABASE_URL to e.g. "
            "postgresql+psycopg://user@host:5432/flowcall, or unset FLOWCALL_BROKER_URL to run "
            "everything in this process"
        )
    if not url.startswith(("redis://", "rediss://")):
        raise ConfigError(
            f"FLOWCALL_BROKER_URL must be a Redis URL (redis://host:6379/0 or rediss://...), "
            f"not {url.split('://', 1)[0]}://..."
        )
    return url


def celery_app() -> Any:
    """The Celery app for the configured broker and queue, made once per process."""
    url, queue, redelivery = config.broker_url() or "", config.queue_name(), config.redelivery_s()
    key = (url, queue, redelivery)
    with _lock:
        if key not in _apps:
            _apps[key] = _make_app(url, queue, redelivery)
        return _apps[key]


def _make_app(url: str, queue: str, redelivery: float) -> Any:
    from celery import Celery

    app = Celery("flowcall", broker=url, set_as_current=False)
    app.conf.update(
        task_default_queue=queue,
        task_acks_late=True,  # acknowledged after the run: a worker that dies leaves its task to another
        task_reject_on_worker_lost=True,  # a pool process that died gives its task back at once
        worker_prefetch_multiplier=1,  # a worker holds no task it is not running
        task_ignore_result=True,  # the run's record in the database is the result
        task_serializer="json",
        accept_content=["json"],
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,  # a worker waits for Redis to come back, however long
        worker_cancel_long_running_tasks_on_connection_loss=False,
        broker_transport_options={
            "visibility_timeout": redelivery,
            # how often a worker looks for tasks of dead workers to hand out again
            "unacked_restore_interval": max(1, min(10, int(redelivery / 5))),
            "unacked_restore_throttle": 1,
            "socket_connect_timeout": 5,
        },
        task_publish_retry_policy={
            "max_retries": 3,
            "interval_start": 0.2,
            "interval_step": 0.5,
            "interval_max": 1.0,
        },
    )
    return app


def enqueue(run_ids: Iterable[str]) -> None:
    """One task per run id, on the configured queue. ConfigError when Redis cannot be reached."""
    app = celery_app()
    queue = config.queue_name()
    try:
        with app.producer_or_acquire() as producer:
            for run_id in run_ids:
                app.send_task(TASK, args=[run_id], queue=queue, producer=producer)
    except Exception as exc:  # kombu's OperationalError, redis' ConnectionError: the broker is unreachable
        raise ConfigError(
            f"cannot hand runs to the workers: the broker at {redact_url(config.broker_url())} did not take "
            f"them ({type(exc).__name__}: {exc}); check FLOWCALL_BROKER_URL and that Redis runs"
        ) from exc


class WorkersDoor:
    """The door (service/door.py) to the Celery workers: each run handed over becomes a task that
    carries only its id, and a `flowcall worker` runs it from the database."""

    name = "the broker"
    runs_here = False  # the workers' settings (keys, base URLs) are the ones its runs use

    def __init__(self, service: FlowCall) -> None:
        self.service = service

    def ready(self) -> None:
        """ConfigError unless runs can be queued here: a broker is set and the store is PostgreSQL."""
        require_broker(self.service.store.engine.dialect.name)

    def hand_over(self, run_ids: Iterable[str]) -> dict[str, Any]:
        self.ready()
        enqueue(run_ids)
        return {}  # they run later, on the workers

    def continue_with(self, run_id: str, approver: Any) -> None:
        raise ConfigError(
            f"run {run_id[:8]} waits for a person: the decisions are made here, so it goes on here, "
            f"not on the workers (`flowcall runs resume {run_id[:8]} --approve`)"
        )
