"""No function in flowcall/ is longer than 50 lines (issue 38, point 5): a longer one is split
into helpers whose names say what each part does. A function's length runs from its `def` line
to its last line, decorators left out; a nested function counts toward the one around it and
is held to the limit itself."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 50

ENGINE_LINES = 450  # the loop only: checks live in calling/vetting.py, the answer in final_answer.py


def long_functions() -> list[str]:
    found = []
    for path in sorted((ROOT / "flowcall").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=name)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > LIMIT:
                    found.append(f"{name}::{node.name} ({lines} lines, line {node.lineno})")
    return found


def test_no_function_in_flowcall_is_over_50_lines() -> None:
    too_long = long_functions()
    assert not too_long, f"functions over {LIMIT} lines (split them into named helpers):\n" + "\n".join(
        too_long
    )


def test_the_engine_holds_the_loop_and_no_more() -> None:
    lines = len((ROOT / "flowcall" / "engine" / "loop.py").read_text(encoding="utf-8").splitlines())
    assert lines < ENGINE_LINES, (
        f"flowcall/engine/loop.py has {lines} lines; move what is not the loop out of it"
    )
