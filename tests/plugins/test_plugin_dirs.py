"""Plugin folders are imported by file path: folders and files that share a name stay apart."""

from __future__ import annotations

import sys
from pathlib import Path

from flowcall.tools.base import RunContext
from flowcall.tools.python_plugins import load_plugin_dir, plugin_module_name
from flowcall.tools.registry import ToolRegistry

PLUGIN = '''
from flowcall.tools.python_plugins import tool

WHO = "{who}"


@tool("{who}/v1/{name}")
def {name}() -> str:
    """Says which folder it came from."""
    return WHO
'''


def plugin_folder(root: Path, who: str, name: str) -> Path:
    folder = root / who / "plugins"  # both folders are called plugins/, both files x.py
    folder.mkdir(parents=True)
    (folder / "x.py").write_text(PLUGIN.format(who=who, name=name), encoding="utf-8")
    return folder


def test_two_folders_with_the_same_name_both_load_their_own_tools(tmp_path: Path) -> None:
    a, b = plugin_folder(tmp_path, "alpha", "hello"), plugin_folder(tmp_path, "beta", "goodbye")
    registry = ToolRegistry.from_plugin_dirs([a, b])
    versions = {t.version for t in registry.all()}
    assert {"alpha/v1/hello", "beta/v1/goodbye"} <= versions
    context = RunContext(run_id="test")
    assert registry.get("hello").invoke({}, context) == "alpha"
    assert registry.get("goodbye").invoke({}, context) == "beta"
    names = {plugin_module_name(a / "x.py"), plugin_module_name(b / "x.py")}
    assert len(names) == 2 and {sys.modules[n].WHO for n in names} == {"alpha", "beta"}


def test_a_folder_loaded_twice_gives_the_same_tools(tmp_path: Path) -> None:
    """Each studio rerun builds a registry again: the module is imported once, not per load."""
    a = plugin_folder(tmp_path, "gamma", "again")
    first, second = load_plugin_dir(a), load_plugin_dir(a)
    assert [t.func for t in first] == [t.func for t in second]
    ToolRegistry.from_plugin_dirs([a, a])  # the same functions: no "two tools claim the version"
