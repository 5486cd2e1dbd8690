"""Workers on this machine, for the worker benchmark and the kill test: N `flowcall worker`
processes, each in its own process group (so a kill takes the worker and its pool processes, as
a lost machine would), awaited until they answer a ping, killed or stopped; and a scratch
PostgreSQL database and Redis database number for them, dropped and flushed afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from flowcall.core.config import REPO_ROOT
from flowcall.service import broker


class LocalWorkers:
    def __init__(
        self, count: int, env: dict[str, str], log_dir: Path, *, concurrency: int = 1, loglevel: str = "INFO"
    ):
        self.env = {
            **env,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])),
        }
        self.count, self.log_dir, self.concurrency, self.loglevel = count, log_dir, concurrency, loglevel
        self.procs: list[subprocess.Popen] = []

    def start(self) -> LocalWorkers:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for n in range(self.count):
            log = (self.log_dir / f"worker-{n + 1}.log").open("w")
            self.procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "flowcall.cli.main",
                        "worker",
                        f"--concurrency={self.concurrency}",
                        f"--loglevel={self.loglevel}",
                    ],
                    cwd=REPO_ROOT,
                    env=self.env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
            log.close()
        return self

    def wait_ready(self, timeout_s: float = 60) -> None:
        """Until every worker answers a ping (a broadcast over the broker); RuntimeError, with
        the logs' tails, when one exited or did not answer in time."""
        app = broker.celery_app()
        wanted = {f"flowcall-{p.pid}@" for p in self.procs}
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            dead = [n for n, p in enumerate(self.procs) if p.poll() is not None]
            if dead:
                raise RuntimeError(
                    f"worker {dead[0] + 1} exited ({self.procs[dead[0]].returncode}):\n" + self.tail(dead[0])
                )
            answered = {name for reply in app.control.ping(timeout=0.5) or [] for name in reply}
            if all(any(name.startswith(w) for name in answered) for w in wanted):
                return
        raise RuntimeError(
            f"the workers did not answer a ping within {timeout_s:g} s:\n"
            + "\n".join(self.tail(n) for n in range(len(self.procs)))
        )

    def index_of(self, pid: int) -> int | None:
        """Which worker a process (the worker itself or one of its pool processes) belongs to."""
        try:
            group = os.getpgid(pid)
        except ProcessLookupError:
            return None
        return next((n for n, p in enumerate(self.procs) if p.pid == group), None)

    def kill(self, n: int) -> None:
        """kill -9 worker n and its pool processes at once."""
        try:
            os.killpg(self.procs[n].pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.procs[n].wait(timeout=30)

    def stop(self) -> None:
        """End every worker still running (SIGKILL: nothing is left to finish)."""
        for n in range(len(self.procs)):
            if self.procs[n].poll() is None:
                self.kill(n)

    def tail(self, n: int, chars: int = 3000) -> str:
        text = (self.log_dir / f"worker-{n + 1}.log").read_text(errors="replace")
        return f"--- worker {n + 1} (pid {self.procs[n].pid}) ---\n{text[-chars:]}"

    def __enter__(self) -> LocalWorkers:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=test connect_timeout=3"
REDIS = "127.0.0.1:6379"
_CLAIM = "flowcall:scratch-claim"


@contextmanager
def scratch_database(admin_dsn: str = PG_ADMIN, prefix: str = "flowcall_scratch") -> Iterator[str]:
    """A new, empty PostgreSQL database (its SQLAlchemy URL), dropped at the end with any
    connection left to it. psycopg's OperationalError when the server cannot be reached."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    params = conninfo_to_dict(admin_dsn)
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield (
            f"postgresql+psycopg://{params.get('user', 'postgres')}@{params.get('host', '127.0.0.1')}:"
            f"{params.get('port', 5432)}/{name}"
        )
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def scratch_redis(address: str = REDIS) -> Iterator[str]:
    """redis://ADDRESS/N for a database number nobody else holds (an empty one, claimed with SET
    NX, from 15 down), flushed at the end. redis' RedisError when the server cannot be reached."""
    import redis

    for db in range(15, 0, -1):
        client = redis.Redis.from_url(f"redis://{address}/{db}", socket_connect_timeout=3)
        if client.dbsize() == 0 and client.set(_CLAIM, "1", nx=True) and client.dbsize() == 1:
            break
        client.close()
    else:
        raise RuntimeError(f"no empty database on the Redis at {address} (1 to 15 are all in use)")
    try:
        yield f"redis://{address}/{db}"
    finally:
        client.flushdb()
        client.close()
