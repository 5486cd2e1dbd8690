"""`flowcall datasets ...`: import (a JSONL or CSV file, or a BFCL category), list, show, export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from flowcall.cli.common import echo, service
from flowcall.rendering import expectations_text, short

if TYPE_CHECKING:
    from flowcall.store.datasets import Saved


@click.group("datasets")
def datasets_group() -> None:
    """Datasets: questions with what their runs must show (versioned, like flows)."""


def _report_saved(name: str, saved: Saved, count: int) -> None:
    if saved.created:
        echo(f"imported {name} as version {saved.version} ({count} items)")
    else:
        echo(f"{name} version {saved.version} already has exactly these {count} items; no new version")


@datasets_group.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--name", required=True, help="The dataset's name; importing again under it makes a new version."
)
@click.pass_context
def datasets_import(ctx: click.Context, file: Path, name: str) -> None:
    """Check every line of FILE (.jsonl or .csv) and store its items as a version of NAME.
    Any bad line refuses the whole file, listing each problem with its line and field."""
    from flowcall.core.datasets import check_name, read_dataset

    check_name(name)
    items = read_dataset(file)
    _report_saved(name, service(ctx).save_dataset(name, items, source=str(file)), len(items))


@datasets_group.command("import-bfcl")
@click.argument(
    "category", type=click.Choice(["simple", "multiple", "parallel", "parallel_multiple", "irrelevance"])
)
@click.option("--name", required=True, help="The dataset's name.")
@click.option(
    "--split",
    type=click.Choice(["all", "even", "odd"]),
    default="all",
    show_default=True,
    help="As `eval bfcl`: even-numbered cases tune the local model's thresholds, odd ones are held out.",
)
@click.option("--limit", type=click.IntRange(min=1), help="At most N cases (the first N of the split).")
@click.pass_context
def datasets_import_bfcl(ctx: click.Context, category: str, name: str, split: str, limit: int | None) -> None:
    """A BFCL category as a dataset: each case's functions as the item's own tools (the experiment
    asks the decision model only), BFCL's ground truth as expectations. What they cannot say
    (string normalisation, exact call counts, nested allowed values) is in the notes."""
    from flowcall.core.datasets import check_name
    from flowcall.eval import load_cases
    from flowcall.eval.bfcl_dataset import items_from_cases

    check_name(name)
    start, step = {"all": (0, 1), "even": (0, 2), "odd": (1, 2)}[split]
    cases = load_cases(category)[start::step][:limit]
    items, notes = items_from_cases(cases)
    source = f"BFCL {category}, split {split}" + (f", first {limit}" if limit else "")
    _report_saved(name, service(ctx).save_dataset(name, items, source=source), len(items))
    if notes:
        echo(f"note: {len(notes)} parameter(s) of BFCL's answers are not checked:", err=True)
        for note in notes[:10]:
            echo(f"  {note}", err=True)
        if len(notes) > 10:
            echo(f"  ... and {len(notes) - 10} more", err=True)


@datasets_group.command("list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def datasets_list(ctx: click.Context, as_json: bool) -> None:
    """Stored datasets with their latest version."""

    found = service(ctx).datasets()
    if as_json:
        echo(json.dumps(found, ensure_ascii=False, indent=2, default=str))
        return
    for d in found:
        echo(
            f"{d['name']:<24} v{d['version']:<3} {d['items']:>6} items  {d['updated_at']:%Y-%m-%d %H:%M}  "
            f"{short(d['source'], 50)}"
        )


@datasets_group.command("show")
@click.argument("name")
@click.option("--version", type=int, help="Default: the latest.")
@click.option("--json", "as_json", is_flag=True, help="The items as a JSON list.")
@click.pass_context
def datasets_show(ctx: click.Context, name: str, version: int | None, as_json: bool) -> None:
    """A dataset version's items, each with what it expects."""

    dataset = service(ctx).dataset(name, version)
    if as_json:
        echo(json.dumps([item.dump() for item in dataset.items], ensure_ascii=False, indent=2))
        return
    echo(
        f"dataset {dataset.name} v{dataset.version} · {len(dataset.items)} items · from {dataset.source} · "
        f"{dataset.created_at:%Y-%m-%d %H:%M}"
    )
    for position, item in enumerate(dataset.items, start=1):
        label = f"[{item.id}] " if item.id else ""
        echo(f"{position:>5}  {label}{short(item.question, 60)}")
        echo(f"       expects: {expectations_text(item)}")


@datasets_group.command("export")
@click.argument("name")
@click.option("--version", type=int, help="Default: the latest.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "csv"]),
    default="jsonl",
    show_default=True,
    help="csv: cells a spreadsheet would run as a formula start with ' (read back as they were).",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Default: stdout.")
@click.pass_context
def datasets_export(
    ctx: click.Context, name: str, version: int | None, fmt: str, output: Path | None
) -> None:
    """A dataset version as JSONL (or CSV) that imports back to the same items."""
    from flowcall.core.datasets import to_csv, to_jsonl

    dataset = service(ctx).dataset(name, version)
    text = to_csv(dataset.items) if fmt == "csv" else to_jsonl(dataset.items)
    if output:
        output.write_text(text, encoding="utf-8", newline="")
        echo(f"wrote {output} ({len(dataset.items)} items)", err=True)
    else:
        echo(text, nl=False)
