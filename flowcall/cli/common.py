"""What the `flowcall` command groups share: the service behind them, flows given as a file
or a saved name, and `echo`, which every line they print goes through. Its own module so
that command groups in other modules (cli_datasets.py, cli_experiments.py) reach them without
importing cli.py, which imports them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from flowcall.core.inert import inert
from flowcall.core.spec import load_flow


def reach_options(command: Any) -> Any:
    """--allow-host and --allow-origin, for a command that serves over HTTP (exposure.py)."""
    command = click.option(
        "--allow-origin",
        "allow_origins",
        multiple=True,
        help="One more browser Origin allowed, e.g. https://app.example.com; repeatable.",
    )(command)
    return click.option(
        "--allow-host",
        "allow_hosts",
        multiple=True,
        help="One more Host name callers may use (a DNS name, a NAT address); repeatable.",
    )(command)


def echo(message: Any = None, **kwargs: Any) -> None:
    """click.echo for text that may hold outside text (a question, a tool result, a model's
    answer, a server's name): what would act on a terminal is shown escaped (inert.py)."""
    click.echo(None if message is None else inert(message), **kwargs)


def service(ctx: click.Context) -> Any:
    """The FlowCall service on the --db database, opened once per command."""
    from flowcall.service.front import FlowCall

    obj = ctx.find_root().obj
    if "service" not in obj:
        obj["service"] = FlowCall.open(obj.get("db"))
    return obj["service"]


def flow_from_ref(service: Any, flow_ref: str) -> Any:
    """A flow JSON file, or the name of a saved flow."""
    if Path(flow_ref).suffix == ".json" or Path(flow_ref).is_file():
        return load_flow(flow_ref)
    # a new installation knows the example flows by name (flowcall run commute-weather ...)
    service.seed_examples()
    return service.get_flow(flow_ref)[0]
