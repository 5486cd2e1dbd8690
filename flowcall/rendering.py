"""Steps and runs as plain text: one place for the CLI (`run`, `runs show`, `runs diff`...) and
the studio's pages (live progress, the Compare tab), so both say the same thing the same way.
Plain text only: the pages escape it for Markdown (studio.md) or show it as text."""

from __future__ import annotations

import json
import re
from typing import Any

from flowcall.core.datasets import DatasetItem
from flowcall.core.experiment_record import Experiment, Summary
from flowcall.core.steps import (
    ANSWERED_WITHOUT_TOOLS,
    PARTLY_DONE,
    REUSED_NOTE,
    SUB_RUN,
    Run,
    RunStatus,
    Step,
    StepKind,
    is_reused,
)
from flowcall.engine.provenance import flat_values, traced_share, unbacked_value


def short(value: Any, limit: int = 90) -> str:
    """One line of at most `limit` characters: whitespace folded, JSON for non-strings."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")
# a run of text in one script: CJK characters (with their punctuation), or anything else
_SCRIPT_RUNS = re.compile(
    r"[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]+[^A-Za-z]*|[^\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]+"
)


def in_language(text: str, language: str = "en") -> str:
    """A description written in two languages (the example plugins': Chinese, then English),
    cut to the part in `language` ("en" or "zh"); text in one language only, as it is."""
    runs = [run.strip() for run in _SCRIPT_RUNS.findall(text) if run.strip()]
    chinese = [run for run in runs if _CJK.search(run)]
    other = [run for run in runs if not _CJK.search(run) and re.search(r"[A-Za-z]{2}", run)]
    if not chinese or not other:
        return text.strip()
    return " ".join(chinese if language == "zh" else other)


def reused_from(step: Step) -> str | None:
    """The run a re-run took this step over from (its id's first 8 characters), else None."""
    if not is_reused(step):
        return None
    return (step.note or "").split(REUSED_NOTE, 1)[1].split()[0].strip(" ·;,") or "?"


def step_time(step: Step) -> str:
    """The time a step took, or "reused" for one a re-run took over: no time was spent again."""
    return "reused" if is_reused(step) else f"{step.latency_ms / 1000:.2f}s"


def held_notes(step: Step) -> list[str]:
    """What a calling way's grammar held the reply to (calling/schema.held): the parts of the
    step's note that say what was enforced outside the request."""
    return [part for part in re.split(r"; | · ", step.note or "") if " held to " in f" {part}"]


def describe_step(step: Step) -> str:
    """One line per step, for live progress and `runs show`."""
    head = f"[{step.seq}] {step.kind.value:<10} {step_time(step):>7}"
    if step.kind in (StepKind.MODEL_CALL, StepKind.POLISH):
        tokens = f"{step.tokens_in}→{step.tokens_out} tok"
        if step.response and step.response.get("scores"):
            what = "scores " + json.dumps(step.response["scores"])
        elif step.tool_calls:
            what = ", ".join(
                f"{c['name']}({short(c.get('arguments') or c.get('raw_arguments'), 60)})"
                for c in step.tool_calls
            )
        else:
            what = short(step.result or "")
        body = f"{step.name} [{step.calling_way or '-'}] {tokens}: {what}"
        loop = (step.response or {}).get("loop")
        if isinstance(loop, dict):  # the local provider stopped the model repeating itself (repetition.py)
            body += (
                f"  (stopped in a loop: a {short(loop.get('block_tokens'))}-token block written "
                f"{short(loop.get('copies'))} times; kept the first copy)"
            )
    elif step.kind == StepKind.TOOL_CALL:
        result = short(step.result) if step.result is not None else ""
        body = f"{step.name}({short(step.arguments or {}, 60)}) -> {result}"
        dropped = (step.response or {}).get("dropped_ungrounded")
        if dropped:
            body += f"  (dropped, not in the conversation: {short(dropped, 60)})"
        if child := sub_run_of(step):
            body += f"  (sub-flow run {child[:8]}: `flowcall runs show {child[:8]}`)"
    elif step.kind == StepKind.APPROVAL:
        body = f"{step.name}({short(step.arguments or {}, 60)})"
    else:
        body = step.name or ""
    if step.note:
        body += f"  ({short(step.note, 100)})"
    if step.error_code:
        body += f"  !! {step.error_code}: {short(step.error_message or '', 120)}"
    return f"{head}  {body}"


def sub_run_of(step: Step) -> str | None:
    """The run a sub-flow call started (its tool step, or its step waiting for a person), if any."""
    for held in (step.response, step.result):
        if isinstance(held, dict) and isinstance(held.get(SUB_RUN), str):
            return held[SUB_RUN]
    return None


def parent_line(run: Run) -> str | None:
    """For a sub-flow's run: which run's call started it."""
    if not run.parent_run_id:
        return None
    return f"sub-flow run of run {run.parent_run_id} (its call {run.parent_call_id})"


def step_ref(step: Step) -> str:
    """A step in a side-by-side comparison: "seq kind name" (`runs diff`, the Compare tab)."""
    return f"{step.seq} {step.kind.value} {step.name or ''}"


def answer_text(answer: Any) -> str:
    """A run's final answer as text: a string as it is, structured answers as indented JSON."""
    return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False, indent=2)


def run_line(run: Run) -> str:
    """One line per run, for `runs list`."""
    return (
        f"{run.id}  {run.started_at:%Y-%m-%d %H:%M:%S}  {status_text(run):<9}  {run.flow_name:<20}  "
        f"{short(run.question, 50)}"
    )


def run_totals(run: Run) -> str:
    """The end of a run on the terminal: its id, steps and tokens."""
    return f"run {run.id} · {len(run.steps)} steps · {run.tokens_in}→{run.tokens_out} tokens"


def run_seconds(run: Run) -> float:
    """The run's time: its steps' latencies added up, without the steps a re-run reused (the
    run it re-ran spent that time)."""
    return sum(s.latency_ms for s in run.steps if not is_reused(s)) / 1000


def status_text(run: Run) -> str:
    """The run's status in words; a run that answered without the tool its decision wanted
    says so rather than "succeeded"."""
    if run.status == RunStatus.SUCCEEDED and run.outcome == ANSWERED_WITHOUT_TOOLS:
        return "answered without tools"
    if run.status == RunStatus.SUCCEEDED and run.outcome == PARTLY_DONE:
        return "partly done"
    return run.status.value


def provenance_rows(provenance: list[dict[str, Any]] | None) -> list[dict[str, str]]:
    """Where each value of an answer came from, one row per value (run.provenance): "field"
    (where in the answer), "value", "source" (tool, question, model, "wrong source": a tool gave
    it in place of the tool that gives it, "mixed": from the question while the tool was asked
    about another, or text: the model's own sentence, its numbers and names on the rows after
    it) and "where" (for a wrong source or a mix, why)."""
    rows = []
    for entry in provenance or []:
        rows.append(_row(entry))
        if entry.get("kind") == "text":
            rows += [_row(part) for part in entry.get("parts", [])]
    return rows


def _row(entry: dict[str, Any]) -> dict[str, str]:
    span, value = entry.get("span"), entry.get("value")
    field = entry.get("path") or "the answer"
    if span:
        field = f"{entry.get('path') or 'text'}, characters {span[0]}–{span[1]}"
    return {"field": field, "value": short(value, 80), "source": _source(entry), "where": _where(entry)}


def _source(entry: dict[str, Any]) -> str:
    if entry.get("kind") == "text":
        return "text"
    if entry.get("source") == "wrong_source":
        return "wrong source"
    return "mixed" if entry.get("mixed") else str(entry.get("source") or "model")


def _where(entry: dict[str, Any]) -> str:
    if entry.get("kind") == "text":
        return "written by the model from the results"
    if entry.get("source") == "wrong_source":
        return str(entry.get("why") or f"{entry.get('tool') or 'a tool'} gave it, not the tool that gives it")
    if entry.get("mixed"):
        return str(entry["mixed"])
    if entry.get("source") == "tool":
        where = f"{entry.get('tool') or 'a tool'} → {entry.get('result_path') or '/'}"
        return where + (f" ({entry['match']})" if entry.get("match") in ("normalised", "translated") else "")
    return "the question" if entry.get("source") == "question" else "no tool gave this"


def source_line(entry: dict[str, Any]) -> str:
    """Where one answer value came from, as a short sentence (a tooltip on the answer card)."""
    if entry.get("claim"):
        return f"⚠ says '{entry['claim']}', and no tool did that in this run"
    if entry.get("kind") == "text":
        parts = entry.get("parts", [])
        traced = sum(not unbacked_value(p) for p in parts)
        return "the model's own words" + (
            f"; {traced} of {len(parts)} numbers and names in it traced" if parts else ""
        )
    if entry.get("source") == "wrong_source" or entry.get("mixed"):
        return f"⚠ {_where(entry)}"
    if entry.get("source") in ("tool", "question"):
        return f"from {_where(entry)}"
    return "⚠ from the model — no tool gave this"


def provenance_summary(provenance: list[dict[str, Any]] | None) -> str | None:
    """One line: how many of the answer's values tool results or the question back, how many
    the model gave, took from the wrong tool (stand-ins) or mixed from two sources; None when
    nothing was traced."""
    if not provenance:
        return None
    traced, values = traced_share(provenance)
    every = flat_values(provenance)
    wrong = sum(v.get("source") == "wrong_source" for v in every)
    mixed = sum(bool(v.get("mixed")) for v in every)
    texts = sum(entry.get("kind") == "text" for entry in provenance)
    line = f"{traced} of {values} values traced to tool results or the question"
    line += f"; {values - traced - wrong - mixed} from the model" if values > traced + wrong + mixed else ""
    line += f"; {wrong} stand-in{'s' if wrong != 1 else ''} from the wrong tool" if wrong else ""
    line += f"; {mixed} mixing two sources" if mixed else ""
    return line + (f"; {texts} sentence{'s' if texts != 1 else ''} in the model's own words" if texts else "")


def expectations_text(item: DatasetItem) -> str:
    """What a dataset item expects, in one line: `datasets show`, and later its page."""
    parts = []
    if item.expect_calls:
        calls = [f"{c.name}({short(c.arguments, 50) if c.arguments else ''})" for c in item.expect_calls]
        parts.append(("in order: " if item.ordered else "calls ") + ", ".join(calls))
    if item.expect_no_call:
        parts.append("no call")
    if item.answer_schema is not None:
        parts.append("answer valid against a schema")
    if item.answer_contains is not None:
        parts.append(f"answer contains {short(item.answer_contains, 40)!r}")
    if item.answer_regex is not None:
        parts.append(f"answer matches /{short(item.answer_regex, 40)}/")
    if item.answer_equals is not None:
        parts.append(f"answer = {short(item.answer_equals, 40)}")
    if item.max_latency_s is not None:
        parts.append(f"≤ {item.max_latency_s:g} s")
    if item.tools:
        parts.append(f"its own {len(item.tools)} tool(s), decision only")
    return "; ".join(parts) or "only that the run succeeds"


def _seconds(value: float | None) -> str:
    return f"{value:.2f} s" if value is not None else "-"


def experiment_line(experiment: Experiment) -> str:
    """One line per experiment, for `experiments list`."""
    result = "-"
    if experiment.summary is not None and experiment.summary.runs:
        s = experiment.summary
        result = (
            f"{s.passed}/{s.runs} passed ({s.pass_rate:.0%}) · p50 {_seconds(s.latency_p50_s)} "
            f"p95 {_seconds(s.latency_p95_s)}"
        )
    return (
        f"{experiment.id:>4}  {experiment.started_at:%Y-%m-%d %H:%M}  {experiment.status.value:<9}  "
        f"{experiment.flow_name} v{experiment.flow_version} × {experiment.dataset_name} "
        f"v{experiment.dataset_version}  {experiment.model} [{experiment.calling_way}]  {result}"
    )


def summary_lines(summary: Summary) -> list[str]:
    """An experiment's totals: pass rate, per expectation, tokens, latency percentiles."""
    rate = f" ({summary.pass_rate:.1%})" if summary.pass_rate is not None else ""
    lines = [
        f"passed {summary.passed} of {summary.runs} runs{rate}"
        + (f"; {summary.not_run} not run" if summary.not_run else "")
    ]
    for name, counts in summary.by_expectation.items():
        lines.append(
            f"  {name:<16} {counts['passed']:>5}/{counts['total']:<5} "
            f"{counts['passed'] / counts['total']:.0%}"
        )
    if summary.answered_without_tools:
        lines.append(
            f"answered without tools: {summary.answered_without_tools} of {summary.runs} runs "
            "(the decision wanted a tool, and no tool result came back)"
        )
    if summary.answer_values:
        lines.append(
            f"answer values traced to tool results or the question: {summary.traced} of "
            f"{summary.answer_values} ({summary.traced / summary.answer_values:.0%})"
        )
    lines.append(
        f"tokens {summary.tokens_in}→{summary.tokens_out}; latency p50 {_seconds(summary.latency_p50_s)}, "
        f"p95 {_seconds(summary.latency_p95_s)}, mean {_seconds(summary.latency_mean_s)}"
    )
    return lines
