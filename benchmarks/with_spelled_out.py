"""Run a `flowcall` command with the schema way's grammar asking for every optional parameter
by name (a value or null), to measure it before it ships. Measured on the calibration half and
rejected (README, "Asking for every optional parameter by name"); kept so it can be measured
again on another model.

    FLOWCALL_HOME=... .venv/bin/python benchmarks/with_spelled_out.py spelled -- \
        experiments run FLOW DATASET

Variants:
  shipped  optional parameters may be left out: the grammar lets the model close the arguments
           after the required ones, which the 1.5B does even when the request names a value
           ("just the next 8 forecast slots" -> no cnt; "in French" -> no lang)
  spelled  every optional top-level parameter required, as its own schema or null (the shape
           OpenAI's strict mode asks of schemas), so the model passes each one by name; the
           nulls are dropped on reading, and grounding still drops values the conversation
           never mentions
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flowcall.calling import schema  # noqa: E402
from flowcall.cli import main as flowcall_main  # noqa: E402
from flowcall.messages import ModelRequest, ModelTurn  # noqa: E402


def spelled_out(parameters: dict[str, Any]) -> dict[str, Any]:
    """Every optional top-level property required, as its own schema or null."""
    properties = parameters.get("properties")
    if parameters.get("type") != "object" or not isinstance(properties, dict) or not properties:
        return parameters
    required = parameters.get("required") if isinstance(parameters.get("required"), list) else []
    spelled = {name: sub if name in required or not isinstance(sub, dict) else {"anyOf": [sub, {"type": "null"}]}
               for name, sub in properties.items()}
    return {**parameters, "properties": spelled, "required": list(properties)}


def spell_out() -> None:
    closed, interpret = schema._closed, schema.SchemaWay.interpret
    schema._closed = lambda parameters: closed(spelled_out(parameters))  # decision_schema's one use

    def without_nulls(self: schema.SchemaWay, turn: ModelTurn, request: ModelRequest) -> ModelTurn:
        turn = interpret(self, turn, request)
        required = {t.name: set(t.parameters.get("required") or []) for t in request.tools}
        calls = [c.model_copy(update={"arguments": {k: v for k, v in c.arguments.items()
                                                    if v is not None or k in required.get(c.name, set())}})
                 if isinstance(c.arguments, dict) else c for c in turn.tool_calls]
        return turn.model_copy(update={"tool_calls": calls})

    schema.SchemaWay.interpret = without_nulls


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in ("shipped", "spelled"):
        sys.exit("usage: with_spelled_out.py {shipped,spelled} -- COMMAND...")
    if sys.argv[1] == "spelled":
        spell_out()
    print(f"optional parameters: {sys.argv[1]}", file=sys.stderr)
    command = sys.argv[2:]
    sys.argv = ["flowcall", *(command[1:] if command[:1] == ["--"] else command)]
    flowcall_main()


if __name__ == "__main__":
    main()
