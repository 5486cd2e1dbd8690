"""FlowCall: build, run and inspect LLM tool-calling flows.

The names most programs need, importable from here (each loaded on first use, so `import
flowcall` stays light):

    from flowcall import FlowCall, load_flow, tool
    app = FlowCall.open()
    run = app.run(load_flow("flows/commute_weather.json"), "Will it rain on my way to work?")
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_PUBLIC = {
    "FlowCall": "flowcall.service.front",
    "Flow": "flowcall.core.spec",
    "load_flow": "flowcall.core.spec",
    "parse_flow": "flowcall.core.spec",
    "Run": "flowcall.core.steps",
    "RunStatus": "flowcall.core.steps",
    "Step": "flowcall.core.steps",
    "tool": "flowcall.tools.python_plugins",
    "Tool": "flowcall.tools.base",
    "ConfigError": "flowcall.core.errors",
    "FlowCallError": "flowcall.core.errors",
}
__all__ = [
    "ConfigError",
    "Flow",
    "FlowCall",
    "FlowCallError",
    "Run",
    "RunStatus",
    "Step",
    "Tool",
    "load_flow",
    "parse_flow",
    "tool",
]

if TYPE_CHECKING:
    from flowcall.core.errors import ConfigError, FlowCallError
    from flowcall.core.spec import Flow, load_flow, parse_flow
    from flowcall.core.steps import Run, RunStatus, Step
    from flowcall.service.front import FlowCall
    from flowcall.tools.base import Tool
    from flowcall.tools.python_plugins import tool


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'flowcall' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)
