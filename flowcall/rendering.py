"""Steps and runs as plain text: one place for the CLI (`run`, `runs show`, `runs diff`...) and
the studio's pages (live progress, the Compare tab), so both say the same thing the same way.
Plain text only: the pages escape it for Markdown (studio.md) or show it as text."""

from __future__ import annotations

import json
from typing import Any

from flowcall.steps import Run, Step, StepKind


def short(value: Any, limit: int = 90) -> str:
    """One line of at most `limit` characters: whitespace folded, JSON for non-strings."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_step(step: Step) -> str:
    """One line per step, for live progress and `runs show`."""
    head = f"[{step.seq}] {step.kind.value:<10} {step.latency_ms / 1000:6.2f}s"
    if step.kind in (StepKind.MODEL_CALL, StepKind.POLISH):
        tokens = f"{step.tokens_in}→{step.tokens_out} tok"
        if step.response and step.response.get("scores"):
            what = "scores " + json.dumps(step.response["scores"])
        elif step.tool_calls:
            what = ", ".join(f"{c['name']}({short(c.get('arguments') or c.get('raw_arguments'), 60)})" for c in step.tool_calls)
        else:
            what = short(step.result or "")
        body = f"{step.name} [{step.calling_way or '-'}] {tokens}: {what}"
    elif step.kind == StepKind.TOOL_CALL:
        body = f"{step.name}({short(step.arguments or {}, 60)}) -> {short(step.result) if step.result is not None else ''}"
        dropped = (step.response or {}).get("dropped_ungrounded")
        if dropped:
            body += f"  (dropped, not in the conversation: {short(dropped, 60)})"
    elif step.kind == StepKind.APPROVAL:
        body = f"{step.name}({short(step.arguments or {}, 60)})"
    else:
        body = step.name or ""
    if step.note:
        body += f"  ({short(step.note, 100)})"
    if step.error_code:
        body += f"  !! {step.error_code}: {short(step.error_message or '', 120)}"
    return f"{head}  {body}"


def step_ref(step: Step) -> str:
    """A step in a side-by-side comparison: "seq kind name" (`runs diff`, the Compare tab)."""
    return f"{step.seq} {step.kind.value} {step.name or ''}"


def answer_text(answer: Any) -> str:
    """A run's final answer as text: a string as it is, structured answers as indented JSON."""
    return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False, indent=2)


def run_line(run: Run) -> str:
    """One line per run, for `runs list`."""
    return f"{run.id}  {run.started_at:%Y-%m-%d %H:%M:%S}  {run.status.value:<9}  {run.flow_name:<20}  {short(run.question, 50)}"


def run_totals(run: Run) -> str:
    """The end of a run on the terminal: its id, steps and tokens."""
    return f"run {run.id} · {len(run.steps)} steps · {run.tokens_in}→{run.tokens_out} tokens"


def run_seconds(run: Run) -> float:
    """The run's time: its steps' latencies added up."""
    return sum(s.latency_ms for s in run.steps) / 1000
