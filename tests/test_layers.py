"""The layers hold (.importlinter): pages and CLI → service → engine → calling, providers,
tools → store → base types. An import that runs back up fails here; no contract ignores one."""

from __future__ import annotations

import ast
import configparser
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_import_contracts_are_kept() -> None:
    linted = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert linted.returncode == 0, linted.stdout[-3000:] + linted.stderr[-1000:]
    assert "0 broken" in linted.stdout


# The root pages/ and app.py are Streamlit's scripts outside the flowcall package, so lint-imports
# does not see them: what they import is read here, and what the pages' code in flowcall/studio/
# imports besides (lint-imports checks it too, by the contract ui-through-the-service). A name
# imported only for a type hint (under TYPE_CHECKING) is no arrow at run time, as in the contracts.
PAGES_NEVER_IMPORT = (
    "flowcall.store",
    "flowcall.service.probe",
    "flowcall.tools",
    "flowcall.engine.loop",
    "flowcall.calling",
    "flowcall.providers",
    "sqlalchemy",
)


def _run_time_imports(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, module) of each import outside `if TYPE_CHECKING:`; `from a import b` gives a and a.b."""

    def type_checking(node: ast.AST) -> bool:
        return isinstance(node, ast.If) and "TYPE_CHECKING" in (
            getattr(node.test, "id", None),
            getattr(node.test, "attr", None),
        )

    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module
            yield from ((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
        pending.extend(child for child in ast.iter_child_nodes(node) if not type_checking(child))


def test_the_pages_reach_the_store_the_probe_the_providers_and_the_tools_through_the_service() -> None:
    stubs = sorted((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]
    real = sorted((ROOT / "flowcall" / "studio").rglob("*.py"))
    assert len(stubs) > 1 and ROOT / "flowcall" / "studio" / "pages" / "models.py" in real
    scripts = stubs + real + sorted((ROOT / "flowcall" / "cli").glob("*.py"))
    scripts += sorted((ROOT / "flowcall" / "api").glob("*.py"))
    found = {
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in scripts
        for line, name in _run_time_imports(ast.parse(path.read_text(encoding="utf-8")))
        if any(name == layer or name.startswith(layer + ".") for layer in PAGES_NEVER_IMPORT)
    }
    assert not found, "\n".join(sorted(found))


def test_the_contract_that_keeps_the_ui_on_the_service_forbids_what_the_pages_never_import() -> None:
    """The contract itself names the providers (and the rest): the real pages, the CLI and the
    HTTP API are modules of the flowcall package, so lint-imports holds them to it."""
    parser = configparser.ConfigParser()
    parser.read(ROOT / ".importlinter", encoding="utf-8")
    contract = parser["importlinter:contract:ui-through-the-service"]
    assert set(contract["source_modules"].split()) >= {"flowcall.cli", "flowcall.studio", "flowcall.api"}
    assert set(contract["forbidden_modules"].split()) >= set(PAGES_NEVER_IMPORT)
