"""Every piece of outside text the studio shows goes through md(): a scan of the pages' code.

Streamlit renders Markdown in labels, captions and messages, so a run id, flow name, tool
description or model name from a shared file (`:red[XX]`, a link, an image) would render as
its author wrote it. This test reads every module of flowcall/studio/ (the pages, the entry,
what they share) and fails on any Streamlit call given an f-string whose run, flow, tool, step
or model data is not escaped."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "flowcall" / "studio").rglob("*.py"))
# names that hold what a file, server or model wrote
OUTSIDE = {
    "run",
    "flow",
    "tool",
    "step",
    "profile",
    "server",
    "new",
    "item",
    "result",
    "checked",
    "source",
    "call",
    "config",
    "provider",
    "model",
    "dataset",
    "experiment",
    "spec",
    "saved",
    "version_row",
}
# Streamlit's calls that render Markdown (st.text and st.code show plain text)
MARKDOWN = {
    "markdown",
    "caption",
    "info",
    "warning",
    "error",
    "success",
    "write",
    "expander",
    "status",
    "update",
    "subheader",
    "header",
    "title",
    "metric",
    "toast",
    "page_link",
    "button",
    "link_button",
    "checkbox",
    "radio",
    "selectbox",
    "multiselect",
    "text_input",
    "text_area",
    "number_input",
    "tabs",
    "popover",
    "form_submit_button",
    "download_button",
    "toggle",
}
# calls that escape, or give numbers and FlowCall's own words
SAFE_CALLS = {
    "md",
    "len",
    "round",
    "int",
    "float",
    "sum",
    "status_text",
    "step_label",
    "run_seconds",
    "step_time",
}
# attributes that are numbers or FlowCall's own enums
SAFE_ATTRS = {"tokens_in", "tokens_out", "seq", "latency_ms", "same", "status", "kind", "version", "passed"}


def _reads_outside(node: ast.AST) -> bool:
    """Does the expression read outside data without escaping it?"""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name in SAFE_CALLS:
            return False
        return any(_reads_outside(a) for a in [*node.args, *(k.value for k in node.keywords)])
    if isinstance(node, ast.Attribute):
        chain = []
        while isinstance(node, ast.Attribute):
            chain.append(node.attr)
            node = node.value
        return isinstance(node, ast.Name) and node.id in OUTSIDE and not SAFE_ATTRS & set(chain)
    if isinstance(node, ast.Subscript):
        return _reads_outside(node.value)
    if isinstance(node, ast.IfExp):
        return _reads_outside(node.body) or _reads_outside(node.orelse)
    return isinstance(node, ast.Name) and node.id in OUTSIDE


def unescaped() -> list[str]:
    found = []
    for path in FILES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in MARKDOWN
            ):
                continue
            texts = [*node.args[:1], *(k.value for k in node.keywords if k.arg in ("label", "body", "help"))]
            for text in texts:
                if not isinstance(text, ast.JoinedStr):
                    continue
                for part in text.values:
                    if isinstance(part, ast.FormattedValue) and _reads_outside(part.value):
                        found.append(
                            f"{path.relative_to(ROOT)}:{node.lineno}: .{node.func.attr}(… "
                            f"{{{ast.unparse(part.value)}}} …)"
                        )
    return found


def test_no_streamlit_call_shows_outside_text_unescaped(attack):
    attack.tried(
        "an imported run whose id is ':red[XX]…' (and any run, flow, tool, step or model text) on the "
        "studio's pages",
        expected="every such value reaches Streamlit through md()",
    )
    found = unescaped()
    attack.observed(f"{len(found)} unescaped: {found[:5]}")
    assert not found, "\n".join(found)


def test_the_scan_finds_what_it_looks_for(tmp_path, monkeypatch):
    """The scan itself works: the Run page's old warning is caught, the escaped one is not."""
    page = tmp_path / "page.py"
    page.write_text(
        'st.warning(f"Run {run.id[:8]} was cancelled: {md(run.error)}")\n'
        'st.warning(f"Run {md(run.id[:8])} has {len(run.steps)} steps")\n'
    )
    monkeypatch.setitem(globals(), "FILES", [page])
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    assert unescaped() == ["page.py:1: .warning(… {run.id[:8]} …)"]
