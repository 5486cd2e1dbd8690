"""The other processes of tests/test_resume_once.py: `flowcall runs resume` as the CLI runs it,
but with a scripted model (a flow file cannot name the scripted provider, so the installed CLI
cannot resume these runs) and a destructive tool that logs each execution.

    python tests/resume_helper.py resume RUN_ID GO_FILE
        print "ready", wait for GO_FILE, then `flowcall runs resume RUN_ID --approve-all --quiet`
        (exit 0, or 2 with the CLI's one-line error)
    python tests/resume_helper.py hang RUN_ID
        resume the run, print "claimed" when asked to approve (the run is claimed by then), and
        never answer: the test kills this process there

The database is FLOWCALL_DATABASE_URL; the tool appends "PID PATH" to RESUME_TEST_LOG.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from flowcall.cli import main as cli
from flowcall.core.spec import DecisionConfig, Flow
from flowcall.providers.scripted import ScriptedProvider
from flowcall.service.front import FlowCall
from flowcall.store import open_store
from flowcall.tools.base import ToolAnnotations
from flowcall.tools.python_plugins import build_tool
from flowcall.tools.registry import ToolRegistry

FLOW = Flow(
    name="reports", tools=["delete_report"], max_rounds=3, decision=DecisionConfig(provider="scripted")
)


def delete_report(path: str) -> str:
    """Delete a report (here: log that it ran, one line per execution)."""
    with open(os.environ["RESUME_TEST_LOG"], "a", encoding="utf-8") as log:
        log.write(f"{os.getpid()} {path}\n")
    return f"deleted {path}"


REGISTRY = ToolRegistry(
    [build_tool(delete_report, "reports/v1/delete_report", annotations=ToolAnnotations(destructive=True))]
)


def service(url: str, script: list[Any]) -> FlowCall:
    """The service on `url` with REGISTRY's tool and a model that answers from `script`."""
    flowcall = FlowCall(store=open_store(url), provider_factory=lambda cfg: ScriptedProvider(list(script)))
    flowcall.registry = REGISTRY  # a cached_property: this instance never loads the plugin folders
    return flowcall


def main(mode: str, run_id: str, go_file: str | None = None) -> None:
    flowcall = service(os.environ["FLOWCALL_DATABASE_URL"], ["done"])
    if mode == "hang":

        def never_answer(call: Any, tool: Any) -> None:
            print("claimed", flush=True)
            time.sleep(600)

        flowcall.resume(run_id, approver=never_answer)
        return
    FlowCall.open = classmethod(lambda cls, database_url=None: flowcall)  # type: ignore[method-assign,assignment]
    print("ready", flush=True)  # everything is imported and connected: the two resumers start together
    go = Path(go_file or "")
    while not go.exists():
        time.sleep(0.002)
    sys.argv = ["flowcall", "runs", "resume", run_id, "--approve-all", "--quiet"]
    cli.main()


if __name__ == "__main__":
    main(*sys.argv[1:])
