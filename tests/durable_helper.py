"""A run in its own process, for tests/test_durable_runs.py: the test kills it (kill -9), sends it
Ctrl-C or cancels it from outside, then resumes the run in the test's process.

    python tests/durable_helper.py run PLAN HANG_AT
        run FLOW with a model that calls PLAN's tools in order (PLAN: "read:a,write:b,read:c"),
        the tool whose label is HANG_AT touching DURABLE_TEST_DIR/started and then sleeping
        for DURABLE_HANG_S seconds (default 600)

Every tool execution appends "PID KIND:LABEL" to DURABLE_TEST_DIR/executions.log. The model is a
pure function of the request it gets, so a resumed run decides as the uninterrupted one would.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from flowcall.core.messages import ModelRequest
from flowcall.core.spec import DecisionConfig, Flow
from flowcall.providers.scripted import ScriptedProvider
from flowcall.service.front import FlowCall
from flowcall.store import open_store
from flowcall.tools.base import ToolAnnotations
from flowcall.tools.python_plugins import build_tool
from flowcall.tools.registry import ToolRegistry

FLOW = Flow(
    name="durable",
    tools=["read_item", "write_item"],
    max_rounds=6,
    decision=DecisionConfig(provider="scripted"),
)


def _work(kind: str, label: str) -> str:
    folder = Path(os.environ["DURABLE_TEST_DIR"])
    with open(folder / "executions.log", "a", encoding="utf-8") as log:
        log.write(f"{os.getpid()} {kind}:{label}\n")
    if label == os.environ.get("DURABLE_HANG_AT"):
        (folder / "started").touch()
        time.sleep(float(os.environ.get("DURABLE_HANG_S", "600")))
    return f"{kind} {label} ok"


def read_item(label: str) -> str:
    """Read an item (safe to repeat)."""
    return _work("read", label)


def write_item(label: str) -> str:
    """Write an item (changes the world: not repeated unasked)."""
    return _work("write", label)


REGISTRY = ToolRegistry(
    [
        build_tool(read_item, "items/v1/read_item", annotations=ToolAnnotations(read_only=True)),
        build_tool(write_item, "items/v1/write_item"),
    ]
)


def planned_model(plan: list[tuple[str, str]]):
    """The next planned call after the tool results the request holds, then an answer that
    lists them: the same request gives the same turn in any process."""

    def decide(request: ModelRequest) -> Any:
        results = [m.content for m in request.messages if m.role == "tool"]
        if request.tools and len(results) < len(plan):
            kind, label = plan[len(results)]
            return [(f"{kind}_item", {"label": label})]
        return "done: " + "; ".join(r or "" for r in results)

    return decide


def parse_plan(text: str) -> list[tuple[str, str]]:
    return [tuple(item.split(":", 1)) for item in text.split(",") if item]  # type: ignore[misc]


def service(url: str, plan: list[tuple[str, str]]) -> FlowCall:
    decide = planned_model(plan)
    flowcall = FlowCall(store=open_store(url), provider_factory=lambda cfg: ScriptedProvider([decide] * 50))
    flowcall.registry = REGISTRY  # a cached_property: this instance never loads the plugin folders
    return flowcall


def main(mode: str, plan: str, hang_at: str = "") -> None:
    os.environ["DURABLE_HANG_AT"] = hang_at
    flowcall = service(os.environ["FLOWCALL_DATABASE_URL"], parse_plan(plan))
    if mode == "run":
        try:
            run = flowcall.run(FLOW, "do the plan")
        except KeyboardInterrupt:
            print(json.dumps({"interrupted": True}), flush=True)
            sys.exit(130)
        print(json.dumps({"id": run.id, "status": str(run.status), "answer": run.final_answer}), flush=True)


if __name__ == "__main__":
    # A suite started as a background job (`cmd &` in a shell without job control) hands its
    # children SIGINT ignored, and Python then installs no KeyboardInterrupt: the Ctrl-C test
    # would see the run finish instead. Take Ctrl-C as a terminal would deliver it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main(*sys.argv[1:])
