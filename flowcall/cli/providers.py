"""`flowcall providers`, and the --provider option's type: a provider's name, built in or
installed by a package, checked against the providers here when the command starts (their list
is the providers' own, read through the service, not a copy of it)."""

from __future__ import annotations

import os
from typing import Any

import click

from flowcall.cli.common import echo
from flowcall.core.errors import ConfigError


class ProviderName(click.ParamType):
    name = "provider"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from flowcall.service.models import check_provider

        try:
            check_provider(str(value))
        except ConfigError as exc:
            self.fail(str(exc), param, ctx)
        return str(value)


PROVIDER = ProviderName()


@click.command("providers")
def providers_command() -> None:
    """The model providers a flow can name, built in and installed, with the environment
    variables each reads (whether each is set; never its value) and its suggested models."""
    from flowcall.service.models import providers, shown_base_url

    for info in providers():
        where = "installed package" if info.package is not None else "built in"
        echo(f"{info.name}  {info.label} ({'hosted' if info.hosted else 'runs here'}, {where})")
        for variable in info.variables():
            state = "set" if os.environ.get(variable, "").strip() else "not set"
            shown = shown_base_url(info) if variable == info.base_url_variable and state == "set" else None
            echo(f"    {variable}: {state}" + (f" ({shown})" if shown else ""))
        if info.suggested_models:
            echo(f"    models: {', '.join(info.suggested_models)}")
