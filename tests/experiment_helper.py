"""The other process of tests/test_experiment_resume.py: `flowcall experiments run` with a scripted
model that hangs at a chosen point, so the test can kill the process there (SIGKILL: no
handler runs) and resume the experiment it leaves behind.

    python tests/experiment_helper.py DATASET HANG_ON

The database is FLOWCALL_DATABASE_URL; the weather tool appends each city it is asked about to
EXPERIMENT_TEST_LOG. The model hangs (printing "hung") on a request whose last message contains
HANG_ON, after everything before it is committed.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from flowcall.core.messages import ModelRequest
from flowcall.core.spec import DecisionConfig, Flow
from flowcall.eval import experiments
from flowcall.providers.scripted import ScriptedProvider
from flowcall.service.front import FlowCall
from flowcall.store import open_store
from flowcall.tools.python_plugins import build_tool
from flowcall.tools.registry import ToolRegistry

FLOW = Flow(name="weather", tools=["weather/v1/get_weather"], decision=DecisionConfig(provider="scripted"))
CITIES = ("成都", "北京", "上海")


def get_weather(city: str) -> dict:
    """Tomorrow's weather in a city (here: log that it ran, one line per execution)."""
    with open(os.environ["EXPERIMENT_TEST_LOG"], "a", encoding="utf-8") as log:
        log.write(city + "\n")
    return {"city": city, "rain": city == "成都"}


def decide(request: ModelRequest) -> Any:
    """Calls get_weather for the city the question names, then answers from its result; an item
    with its own tools gets a call of its first tool."""
    question = next(m.content for m in request.messages if m.role == "user")
    results = [m.content for m in request.messages if m.role == "tool"]
    city = next((c for c in CITIES if c in question), None)
    if request.tools and request.tools[0].name != "get_weather":
        return [(request.tools[0].name, {"a": 1, "b": 2})] if "+" in question else "no tool fits"
    if request.tools and city and not results:
        return [(request.tools[0].name, {"city": city})]
    if results:
        return "rain tomorrow: " + ("yes" if '"rain": true' in results[0] else "no")
    return "hi there"


def service(url: str, hang_on: str | None = None) -> FlowCall:
    def model(request: ModelRequest) -> Any:
        if hang_on and hang_on in (request.messages[-1].content or ""):
            print("hung", flush=True)
            time.sleep(600)
        return decide(request)

    flowcall = FlowCall(store=open_store(url), provider_factory=lambda cfg: ScriptedProvider([model] * 5))
    flowcall.registry = ToolRegistry([build_tool(get_weather, "weather/v1/get_weather")])  # no plugin folders
    return flowcall


if __name__ == "__main__":
    dataset, hang_on = sys.argv[1:]
    experiments.run_experiment(
        service(os.environ["FLOWCALL_DATABASE_URL"], hang_on), FLOW, "weather", dataset
    )
