"""`flowcall experiments ...`: run a dataset through a flow and score it; list, show, compare."""

from __future__ import annotations

import json
import os
import sys

import click

from flowcall.cli.common import echo, flow_from_ref, service
from flowcall.rendering import experiment_line, short, summary_lines


@click.group("experiments")
def experiments_group() -> None:
    """Experiments: a dataset version run through a flow version, each item scored."""


@experiments_group.command("run")
@click.argument("flow_ref")
@click.argument("dataset")
@click.option("--version", type=int, help="The dataset's version (default: the latest).")
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Run every item K times (models are not always deterministic).",
)
@click.option(
    "--queue",
    is_flag=True,
    help="Hand the runs to the workers (FLOWCALL_BROKER_URL, `flowcall worker`); "
    "the bar follows them from the database.",
)
@click.pass_context
def experiments_run(
    ctx: click.Context, flow_ref: str, dataset: str, version: int | None, repeat: int, queue: bool
) -> None:
    """Run every item of DATASET through FLOW_REF (a flow file or a saved flow's name) as a recorded
    run, score each expectation, and store the experiment. A progress bar shows on stderr."""
    from tqdm import tqdm

    from flowcall.eval.experiments import run_experiment, submit

    app = service(ctx)
    flow = flow_from_ref(app, flow_ref)
    app.require_trust(flow, flow_ref)  # before anything is stored, started or sent
    bar: list[tqdm] = []

    def started(experiment) -> None:
        echo(
            f"experiment {experiment.id}: {experiment.flow_name} v{experiment.flow_version} × "
            f"{experiment.dataset_name} v{experiment.dataset_version} ({len(experiment.items)} runs"
            + (", on the workers)" if queue else ")"),
            err=True,
        )
        bar.append(
            tqdm(total=len(experiment.items), unit="run", file=sys.stderr, desc=f"experiment {experiment.id}")
        )

    failed = 0

    def scored(result) -> None:
        nonlocal failed
        failed += not result.passed
        bar[0].update(1)
        bar[0].set_postfix_str(f"{failed} failed")

    try:
        if queue:
            experiment = submit(app, flow, flow_ref, dataset, version, repeat)
            started(experiment)
            experiment = _follow(app, experiment.id, scored)
        else:
            experiment = run_experiment(
                app, flow, flow_ref, dataset, version, repeat=repeat, on_start=started, on_item=scored
            )
    finally:
        if bar:
            bar[0].close()
    _show_ended(experiment)


@experiments_group.command("resume")
@click.argument("experiment_id")
@click.pass_context
def experiments_resume(ctx: click.Context, experiment_id: str) -> None:
    """Go on with an experiment whose process stopped (killed, a restart) and that still says
    running: its unscored items are run here (an interrupted run goes on from its last step), the
    scored ones are kept, and the experiment ends as if it had never stopped."""
    from tqdm import tqdm

    from flowcall.eval.experiments import resume_experiment

    app = service(ctx)
    bar: list[tqdm] = []

    def started(experiment) -> None:
        done = sum(item.passed is not None for item in experiment.items)
        echo(
            f"experiment {experiment.id}: {len(experiment.items) - done} of {len(experiment.items)} runs "
            "left to run",
            err=True,
        )
        bar.append(
            tqdm(
                total=len(experiment.items),
                initial=done,
                unit="run",
                file=sys.stderr,
                desc=f"experiment {experiment.id}",
            )
        )

    try:
        experiment = resume_experiment(
            app, experiment_id, on_start=started, on_item=lambda _: bar[0].update(1)
        )
    finally:
        if bar:
            bar[0].close()
    _show_ended(experiment)


@experiments_group.command("cancel")
@click.argument("experiment_id")
@click.pass_context
def experiments_cancel(ctx: click.Context, experiment_id: str) -> None:
    """Give up an experiment that still says running: the runs of its unscored items are
    cancelled (a running one stops at its next step); the scored items are kept."""
    from flowcall.eval.experiments import cancel_experiment

    experiment = cancel_experiment(
        service(ctx), experiment_id, by=f"{os.environ.get('USER') or 'someone'} (flowcall experiments cancel)"
    )
    _show_header(experiment)
    for line in summary_lines(experiment.summary):
        echo(line)


def _follow(app, experiment_id: int, on_item, poll_s: float = 0.5):
    """Watch an experiment the workers run until it is no longer running; each newly scored item
    to `on_item`. Ctrl-C stops watching only: the workers go on."""
    import time

    done: set[tuple[int, int]] = set()
    try:
        while True:
            experiment = app.experiment(experiment_id)
            for item in experiment.items:
                if item.passed is not None and (item.position, item.attempt) not in done:
                    done.add((item.position, item.attempt))
                    on_item(item)
            if experiment.status.value != "running":
                return experiment
            time.sleep(poll_s)
    except KeyboardInterrupt:
        echo(
            f"\nstopped watching; the workers go on with experiment {experiment_id}: "
            f"flowcall experiments show {experiment_id}",
            err=True,
        )
        raise


def _show_ended(experiment) -> None:
    _show_header(experiment)
    for line in summary_lines(experiment.summary):
        echo(line)
    echo(f"details: flowcall experiments show {experiment.id}", err=True)


def _show_header(experiment) -> None:
    polish = f", polish {experiment.polish_model}" if experiment.polish_model else ""
    echo(
        f"experiment {experiment.id}  {experiment.status.value}  flow {experiment.flow_name} "
        f"v{experiment.flow_version} ({experiment.flow_ref})  dataset {experiment.dataset_name} "
        f"v{experiment.dataset_version}  {experiment.model} [{experiment.calling_way}]{polish}"
        + (f"  ×{experiment.repeat}" if experiment.repeat > 1 else "")
    )
    if experiment.error:
        echo(f"stopped: {experiment.error}")


@experiments_group.command("list")
@click.option("--limit", default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def experiments_list(ctx: click.Context, limit: int, as_json: bool) -> None:
    """Experiments, newest first."""

    found = service(ctx).experiments(limit)
    if as_json:
        echo(
            json.dumps(
                [e.model_dump(mode="json", exclude={"items"}) for e in found], ensure_ascii=False, indent=2
            )
        )
        return
    for experiment in found:
        echo(experiment_line(experiment))


def _item_label(item) -> str:
    attempt = f" (run {item.attempt + 1})" if item.attempt else ""
    return f"#{item.position + 1}{attempt} {short(item.item_key, 60)}"


@experiments_group.command("show")
@click.argument("experiment_id")
@click.option(
    "--json", "as_json", is_flag=True, help="The experiment, its summary and every item's verdicts."
)
@click.pass_context
def experiments_show(ctx: click.Context, experiment_id: str, as_json: bool) -> None:
    """An experiment: what ran, the totals, and each item's verdicts and run."""

    experiment = service(ctx).experiment(experiment_id)
    if as_json:
        echo(json.dumps(experiment.model_dump(mode="json"), ensure_ascii=False, indent=2))
        return
    _show_header(experiment)
    if experiment.status.value == "running":
        echo(
            f"if the process running it stopped (killed, a restart): flowcall experiments resume "
            f"{experiment.id} (or give it up: flowcall experiments cancel {experiment.id})"
        )
    if experiment.summary is not None:
        for line in summary_lines(experiment.summary):
            echo(line)
    for item in experiment.items:
        mark = {True: "pass", False: "FAIL", None: "-"}[item.passed]
        echo(f"{mark:<4}  {_item_label(item)}  run {(item.run_id or '-')[:8]}  {item.status or 'not run'}")
        for verdict in item.verdicts or []:
            if not verdict.passed:
                echo(f"        {verdict.expectation}: {short(verdict.reason, 240)}")


def _failing(item) -> str:
    reasons = [f"{v.expectation}: {v.reason}" for v in item.verdicts or [] if not v.passed]
    return "passed" if item.passed else short("; ".join(reasons), 240)


@experiments_group.command("compare")
@click.argument("before")
@click.argument("after")
@click.pass_context
def experiments_compare(ctx: click.Context, before: str, after: str) -> None:
    """The items whose verdict changed from experiment BEFORE to AFTER, pass→fail first, each with
    the command that shows its two runs side by side, step by step."""
    from flowcall.core.experiment_record import compare

    app = service(ctx)
    a, b = app.experiment(before), app.experiment(after)
    result = compare(a, b)
    broke = sum(c.broke for c in result.changes)
    echo(
        f"experiment {a.id} → {b.id}: {broke} pass→fail, {len(result.changes) - broke} fail→pass, "
        f"{result.same} unchanged"
    )
    for what, x, y in (
        ("flow", f"{a.flow_name} v{a.flow_version}", f"{b.flow_name} v{b.flow_version}"),
        ("dataset", f"{a.dataset_name} v{a.dataset_version}", f"{b.dataset_name} v{b.dataset_version}"),
        ("model", f"{a.model} [{a.calling_way}]", f"{b.model} [{b.calling_way}]"),
    ):
        if x != y:
            echo(f"  {what}: {x} → {y}")
    for change in result.changes:
        echo(f"{'pass→fail' if change.broke else 'fail→pass'}  {_item_label(change.after)}")
        echo(f"    before: {_failing(change.before)}")
        echo(f"    after:  {_failing(change.after)}")
        if change.before.run_id and change.after.run_id:
            echo(f"    flowcall runs diff {change.before.run_id} {change.after.run_id}")
    for label, keys in ((f"only in {a.id}", result.only_before), (f"only in {b.id}", result.only_after)):
        if keys:
            echo(
                f"{len(keys)} item(s) {label}: "
                + ", ".join(short(k, 40) for k in keys[:5])
                + (" ..." if len(keys) > 5 else "")
            )
