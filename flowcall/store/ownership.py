"""Who runs a run: the owner ("host/pid/start") and its lease.

A `running` run whose owner is gone is interrupted and can be resumed. On the owner's own
host that is decided by the process table (the pid is dead, or now belongs to a process that
started later: pids are reused); from another host only the lease can tell, so a live owner
renews it while the run lasts (Store's lease keeper).
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta

from flowcall.core.steps import utcnow

# /proc/PID/stat field 22 is the start time in clock ticks; after the command it is item 19
_STARTTIME_AFTER_COMMAND = 19


def lease_seconds() -> float:
    """How long a run stays its owner's without a renewal (FLOWCALL_LEASE_S, default 30 s)."""
    try:
        return max(1.0, float(os.environ.get("FLOWCALL_LEASE_S", "30")))
    except ValueError:
        return 30.0


def lease_until(now: datetime | None = None) -> datetime:
    return (now or utcnow()) + timedelta(seconds=lease_seconds())


def _start_ticks(pid: int) -> str:
    """When process `pid` started (Linux), or "" where that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return ""
    after_command = stat.rsplit(")", 1)[-1].split()  # the command may hold spaces and parentheses
    return after_command[_STARTTIME_AFTER_COMMAND] if len(after_command) > _STARTTIME_AFTER_COMMAND else ""


def this_process() -> str:
    pid = os.getpid()
    return f"{socket.gethostname()}/{pid}/{_start_ticks(pid)}"


def _alive_here(pid: int, start: str) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, owned by another user
    if start and _start_ticks(pid) not in ("", start):
        return False  # the pid was reused by a later process
    return True


def owner_gone(owner: str | None, lease: datetime | None, now: datetime | None = None) -> bool:
    """Is the process that ran this `running` run gone? A run with no owner (imported, or
    recorded before owners existed) has nobody to finish it."""
    if not owner:
        return True
    host, _, rest = owner.partition("/")
    pid_text, _, start = rest.partition("/")
    if host == socket.gethostname() and pid_text.isdigit():
        return not _alive_here(int(pid_text), start)
    return lease is None or lease < (now or utcnow())
