"""The studio, the CLI and the HTTP API reach the store through the service (flowcall/service/
records.py and front.py), never through its `store` attribute: the import contracts keep them
from importing the store, and this keeps them from reaching it through the service they hold
(`app.store.get_run(...)`, `service().store` handed on). Read from the source, as
tests/test_layers.py reads the pages' imports."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UI = ("flowcall/studio", "flowcall/cli", "flowcall/api", "pages")


def store_reaches(source: str) -> list[tuple[int, str]]:
    """(line, code) of every `<something>.store` in the source: an attribute named `store`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "store":
            found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def test_the_scan_sees_each_way_of_reaching_the_store() -> None:
    source = (
        "run = app.store.get_run(x)\n"
        "tools = server_tools(server, service().store)\n"
        "rows = api.service.store.list_runs()\n"
        "from flowcall.store.experiments import RunText\n"  # an import is the contracts' to judge
        "app.get_run(x)\n"
    )
    assert [line for line, _ in store_reaches(source)] == [1, 2, 3]


def test_the_studio_cli_and_api_never_reach_the_store_but_through_the_service() -> None:
    files = sorted(path for folder in UI for path in (ROOT / folder).rglob("*.py"))
    assert any("studio/pages" in str(path) for path in files)  # the real pages are read
    reached = [
        f"{path.relative_to(ROOT)}:{line}: {code}"
        for path in files
        for line, code in store_reaches(path.read_text(encoding="utf-8"))
    ]
    assert not reached, (
        "reach the store through a service method (flowcall/service/records.py, front.py), "
        "not its `store`:\n" + "\n".join(reached)
    )
