"""What the studio's Experiments page shows, apart from its widgets: a dataset made in the page
(an uploaded file, or items written as JSON Lines, both read by the importer's own parser in
datasets.py), an experiment's live progress item by item, and its results as table rows, summary
figures and the two charts' data. Text from datasets, models and answers only ever goes into
table cells or chart data here (inert), or through md() (the progress text, the error)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import altair as alt
import pandas as pd

from flowcall.core.datasets import MAX_PROBLEMS_SHOWN, DatasetError, DatasetItem, format_of, parse_dataset
from flowcall.core.experiment_record import Experiment, ItemResult, Summary
from flowcall.core.steps import RunStatus
from flowcall.eval.scoring import SUCCEEDED, answer_text
from flowcall.rendering import short
from flowcall.service.front import FlowCall
from flowcall.studio.shared import md

if TYPE_CHECKING:
    from flowcall.store.experiments import RunText

WRITTEN = "The items written here"
# each expectation of scoring.py in words: the results table and the pass-rate chart's axis
EXPECTATION_WORDS = {
    SUCCEEDED: "run succeeds",
    "expect_calls": "expected tool calls",
    "expect_no_call": "no tool call",
    "answer_schema": "answer fits the schema",
    "answer_contains": "answer contains the text",
    "answer_regex": "answer matches the pattern",
    "answer_equals": "answer equals the value",
    "grounded": "answer backed by tools",
    "max_latency_s": "within the time limit",
}
VERDICT_COLOURS = {"passed": "#2e9e4f", "failed": "#e8590c", "error": "#868e96"}


def in_words(expectation: str) -> str:
    return EXPECTATION_WORDS.get(expectation, expectation)


# ------------------------------------------------------------------ a dataset made in the page


def read_upload(name: str, data: bytes) -> list[DatasetItem]:
    """The items of an uploaded .jsonl or .csv file, as `flowcall datasets import` reads them."""
    return parse_dataset(data, format_of(Path(name)), name)


def read_written(text: str) -> list[DatasetItem]:
    """Items written in the page, one JSON object per line (the .jsonl format)."""
    return parse_dataset(text.encode("utf-8", "replace"), "jsonl", WRITTEN)


def refusal(error: DatasetError) -> str:
    """A refused dataset as Markdown for st.error: each problem with its line (escaped, since it
    quotes the file), then what to do."""
    count = len(error.problems)
    lines = [
        f"**{md(error.source)} could not be saved** ({count} problem{'s' if count != 1 else ''}); "
        "nothing was saved:",
        "",
    ]
    lines += [f"- {md(problem)}" for problem in error.problems[:MAX_PROBLEMS_SHOWN]]
    if count > MAX_PROBLEMS_SHOWN:
        lines.append(f"- … and {count - MAX_PROBLEMS_SHOWN} more")
    lines += [
        "",
        "Fix the lines named above, then save again. Each line holds one item: a JSON object with a "
        "`question` and what its run must show (see *What an item holds*); in a CSV file, the first "
        "line names the columns.",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------ live progress


@dataclass
class Progress:
    """An experiment's progress bar (an st.progress element): which item runs now, from the
    moment it begins, and how many runs ended and failed."""

    bar: Any
    experiment: Experiment | None = None
    questions: dict[str, str] = field(default_factory=dict)  # run id -> question
    total: int = 1
    ended: list[bool] = field(default_factory=list)  # passed, per run ended
    said: tuple[float, str] | None = None  # what the bar shows now

    def started(self, experiment: Experiment, app: FlowCall, runs: int | None = None) -> None:
        """The experiment is recorded; `runs`: how many of its runs go now (default: all)."""
        self.experiment = experiment
        self.questions = {
            run_id: text.question for run_id, text in app.experiment_runs(experiment.id).items()
        }
        self.total = max(1, runs if runs is not None else len(experiment.items))
        self.show(f"{self.total} run{'s' if self.total != 1 else ''} to go · starting the first")

    def item_label(self, position: int, attempt: int, question: str) -> str:
        experiment = self.experiment
        items = len({i.position for i in experiment.items}) if experiment else position + 1
        repeat = f", run {attempt + 1} of {experiment.repeat}" if experiment and experiment.repeat > 1 else ""
        return f"item {position + 1} of {items}{repeat}: {md(short(question, 80))}"

    def begins(self, run_id: str) -> None:
        """A run is about to execute: say which item it is, before it ends."""
        item = (
            next((i for i in self.experiment.items if i.run_id == run_id), None) if self.experiment else None
        )
        label = (
            self.item_label(item.position, item.attempt, self.questions.get(run_id, item.item_key))
            if item
            else f"run {len(self.ended) + 1} of {self.total}"
        )
        self.show(label + self._so_far())

    def running(self, position: int, attempt: int, question: str) -> None:
        """A worker executes this item now (seen in the database)."""
        self.show(self.item_label(position, attempt, question) + self._so_far())

    def waiting(self) -> None:
        self.show(
            f"waiting for a worker to take the runs{self._so_far() or f' · 0 of {self.total} runs done'}"
        )

    def scored(self, result: ItemResult) -> None:
        self.ended.append(bool(result.passed))
        self.show(f"{len(self.ended)} of {self.total} runs · {self.ended.count(False)} failed")

    def _so_far(self) -> str:
        if not self.ended:
            return ""
        return f" · {len(self.ended)} of {self.total} runs done, {self.ended.count(False)} failed"

    def show(self, text: str) -> None:
        shown = (min(1.0, len(self.ended) / self.total), text)
        if shown != self.said:  # a worker's progress is polled: only a change is sent to the browser
            self.bar.progress(shown[0], text=text)
            self.said = shown


# ------------------------------------------------------------------ results


def verdict(item: ItemResult) -> str:
    """passed, failed (an expectation was not met), error (the run did not succeed) or not run yet."""
    if item.passed is None:
        return "not run yet"
    if item.passed:
        return "passed"
    return "error" if item.status != str(RunStatus.SUCCEEDED) else "failed"


def failed_expectations(item: ItemResult) -> str:
    return "; ".join(f"{in_words(v.expectation)}: {v.reason}" for v in item.verdicts or [] if not v.passed)


def item_label(item: ItemResult) -> str:
    return f"#{item.position + 1}" + (f" (run {item.attempt + 1})" if item.attempt else "")


RESULT_COLUMNS = ["item", "id", "question", "verdict", "failed expectations", "answer", "seconds", "run"]


def results_table(experiment: Experiment, texts: dict[str, RunText]) -> pd.DataFrame:
    """A row per item run: what it asked, what came back, its verdict and why."""
    rows = []
    for item in experiment.items:
        text = texts.get(item.run_id or "")
        question = text.question if text else item.item_key
        answer = "" if text is None or text.answer is None else short(answer_text(text.answer), 300)
        rows.append(
            {
                "item": item_label(item),
                "id": item.item_key if item.item_key != question else "",
                "question": question,
                "answer": answer,
                "verdict": verdict(item),
                "failed expectations": failed_expectations(item),
                "seconds": round(item.latency_ms / 1000, 2) if item.latency_ms is not None else None,
                "run": (item.run_id or "")[:8],
            }
        )
    table = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    return table if table["id"].astype(bool).any() else table.drop(columns="id")


@dataclass(frozen=True)
class Figure:
    label: str
    value: str
    help: str | None = None


def figures(summary: Summary) -> list[Figure]:
    """The experiment's totals as figures for st.metric."""
    errors = summary.runs - summary.statuses.get(str(RunStatus.SUCCEEDED), 0)
    rate = f"{summary.pass_rate:.0%}" if summary.pass_rate is not None else "–"
    shown = [
        Figure("Pass rate", rate, "Runs that met every expectation, of the runs scored"),
        Figure("Passed", f"{summary.passed} of {summary.runs}"),
        Figure("Failed", str(summary.failed - errors), "The run succeeded, but an expectation was not met"),
        Figure(
            "Errors", str(errors), "The run itself did not succeed (failed, cancelled, waits for approval)"
        ),
        Figure("Median time", _seconds(summary.latency_p50_s), "Half the runs took at most this long"),
        Figure("Slowest 5 %", _seconds(summary.latency_p95_s), "95 % of the runs took at most this long"),
        Figure("Tokens", f"{summary.tokens_in:,} → {summary.tokens_out:,}", "Read → written, over every run"),
    ]
    if summary.not_run:
        shown.insert(2, Figure("Not run yet", str(summary.not_run)))
    return shown


def notes(summary: Summary) -> list[str]:
    """What the figures do not say, in sentences (FlowCall's own words and numbers only)."""
    said = []
    if summary.answered_without_tools:
        said.append(
            f"{summary.answered_without_tools} of {summary.runs} runs answered without tools: the model "
            "wanted a tool, and no tool result came back."
        )
    if summary.answer_values:
        said.append(
            f"{summary.traced} of {summary.answer_values} values in the answers "
            f"({summary.traced / summary.answer_values:.0%}) came from a tool result or the question."
        )
    return said


def _seconds(value: float | None) -> str:
    return f"{value:.2f} s" if value is not None else "–"


def pass_rate_chart(summary: Summary) -> alt.LayerChart | None:
    """A bar per expectation: the share of runs that met it, 0 to 100 %."""
    data = pd.DataFrame(
        [
            {
                "expectation": in_words(name),
                "pass rate": c["passed"] / c["total"],
                "passed": c["passed"],
                "runs": c["total"],
            }
            for name, c in summary.by_expectation.items()
            if c["total"]
        ]
    )
    if data.empty:
        return None
    # Bars across, one row per expectation: every label has its own line (labels under upright
    # bars overlap, and Vega-Lite then hides some), and each bar says its rate in words, so a
    # 0 % bar, which has no length, still shows.
    base = alt.Chart(data).encode(
        y=alt.Y("expectation:N", sort=None, title=None, axis=alt.Axis(labelLimit=400, labelOverlap=False)),
        x=alt.X("pass rate:Q", title="pass rate", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")),
        tooltip=["expectation", alt.Tooltip("pass rate:Q", format=".0%"), "passed", "runs"],
    )
    bars = base.mark_bar()
    rates = base.mark_text(align="left", dx=4).encode(text=alt.Text("pass rate:Q", format=".0%"))
    return (bars + rates).properties(title="Pass rate per expectation", height=alt.Step(28))


def latency_chart(items: Sequence[ItemResult], texts: dict[str, RunText]) -> alt.Chart | None:
    """A bar per run: how many seconds it took, coloured by its verdict."""
    data = pd.DataFrame(
        [
            {
                "item": item_label(i),
                "seconds": i.latency_ms / 1000,
                "verdict": verdict(i),
                "question": short(texts[i.run_id].question if i.run_id in texts else i.item_key, 80),
            }
            for i in items
            if i.latency_ms is not None
        ]
    )
    if data.empty:
        return None
    colours = alt.Scale(domain=list(VERDICT_COLOURS), range=list(VERDICT_COLOURS.values()))
    return (
        alt.Chart(data, title="Time per item")
        .mark_bar()
        .encode(
            x=alt.X("item:N", sort=None, title="item", axis=alt.Axis(labelAngle=0)),
            y=alt.Y("seconds:Q", title="seconds"),
            color=alt.Color("verdict:N", scale=colours, title="verdict"),
            tooltip=["item", "question", alt.Tooltip("seconds:Q", format=".2f"), "verdict"],
        )
    )


def experiment_label(experiment: Experiment) -> str:
    """An experiment in the Results picker (plain text: a picker's options are not Markdown)."""
    s = experiment.summary
    result = f" · {s.passed} of {s.runs} passed" if s is not None and s.runs else ""
    return (
        f"#{experiment.id} · {experiment.started_at:%Y-%m-%d %H:%M} · {experiment.flow_name} "
        f"v{experiment.flow_version} × {experiment.dataset_name} v{experiment.dataset_version} · "
        f"{experiment.status.value}{result}"
    )


def outcome_line(experiment: Experiment) -> str:
    """How an experiment ended, in a sentence."""
    s = experiment.summary
    result = (
        f": {s.passed} of {s.runs} runs passed ({s.pass_rate:.0%})"
        if s is not None and s.runs
        else ": no run ended"
    )
    return f"Experiment {experiment.id} {experiment.status.value}{result}."
