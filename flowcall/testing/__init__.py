"""Test doubles, shipped as product code so tests, benchmarks and flows can run without a model.

- `ScriptedProvider` (flowcall/providers/scripted.py): answers from a script; `assert_complete()`
  fails a test whose script was longer than the run.
- `SchemaDrivenProvider` (flowcall/providers/scripted.py): a model that is a pure function of the
  request it receives. It calls each offered tool once, with arguments made from the tool's JSON
  Schema, then answers with the tool results it saw. A flow names it as
  `{"provider": "scripted", "model": "schema"}`.
- `example_for(schema)` (flowcall/core/schema_example.py): a deterministic value valid against a JSON Schema.

The providers never import this module: it only hands their doubles on, under one name.
"""

from __future__ import annotations

from flowcall.core.schema_example import example_for
from flowcall.providers.scripted import (
    FULL,
    SCHEMA_MODEL,
    SchemaDrivenProvider,
    ScriptedProvider,
    answer,
    summary,
    tools_to_call,
)

__all__ = [
    "FULL",
    "SCHEMA_MODEL",
    "SchemaDrivenProvider",
    "ScriptedProvider",
    "answer",
    "example_for",
    "summary",
    "tools_to_call",
]
