"""`flowcall keys ...`: the keys that programs send to the HTTP API (`flowcall serve`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from flowcall.cli.common import echo, service

if TYPE_CHECKING:
    from flowcall.trust.api_keys import ApiKey


@click.group("keys")
def keys_group() -> None:
    """Keys to the HTTP API: every request sends one as `Authorization: Bearer <key>`."""


def _flows_text(key: ApiKey) -> str:
    return "every flow" if key.flows is None else ", ".join(key.flows)


@keys_group.command("create")
@click.argument("name")
@click.option(
    "--flows", metavar="A,B", help="The saved flows the key may call, comma-separated. Default: every flow."
)
@click.pass_context
def keys_create(ctx: click.Context, name: str, flows: str | None) -> None:
    """Make a key named NAME and print it, once: only its hash is stored."""
    key, secret = service(ctx).create_key(name, None if flows is None else flows.split(","))
    echo(f"created key {key.name} (fc_{key.prefix}) for {_flows_text(key)}:", err=True)
    echo(secret)  # alone on stdout, so that KEY=$(flowcall keys create NAME) keeps it
    echo(
        "This key will not be shown again: keep it somewhere safe now. Programs send it with every request "
        "to `flowcall serve` as the header",
        err=True,
    )
    echo("  Authorization: Bearer <key>", err=True)


@keys_group.command("list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def keys_list(ctx: click.Context, as_json: bool) -> None:
    """Every key, revoked ones too: name, prefix, flows, when made and revoked (never the key)."""
    found = service(ctx).list_keys()
    if as_json:
        echo(json.dumps([key.model_dump(mode="json") for key in found], ensure_ascii=False, indent=2))
        return
    if not found:
        echo("no keys yet; make one with: flowcall keys create NAME", err=True)
        return
    echo(f"{'NAME':<24} {'PREFIX':<12} {'CREATED':<17} {'REVOKED':<17} FLOWS")
    for key in found:
        revoked = f"{key.revoked_at:%Y-%m-%d %H:%M}" if key.revoked_at else "-"
        echo(
            f"{key.name:<24} fc_{key.prefix:<9} "
            f"{key.created_at:%Y-%m-%d %H:%M} {revoked:<17} {_flows_text(key)}"
        )


@keys_group.command("revoke")
@click.argument("name_or_prefix")
@click.pass_context
def keys_revoke(ctx: click.Context, name_or_prefix: str) -> None:
    """Revoke the key with this name or prefix (as `keys list` shows it): it stops working at once."""
    for key in service(ctx).revoke_key(name_or_prefix):
        echo(f"revoked key {key.name} (fc_{key.prefix})")
