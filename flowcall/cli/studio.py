"""`flowcall studio`: the Streamlit studio (flowcall/studio/app.py) on this machine's database,
served behind its server guard (flowcall/studio/server_guard.py) with the studio's settings."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from flowcall.cli.common import echo

SERVED = Path(__file__).resolve().parents[1] / "studio" / "served_app.py"


@click.command("studio")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", type=int, default=8501, show_default=True)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Another host name the studio answers to (besides 127.0.0.1, localhost, ::1 and "
    "--host); repeatable.",
)
@click.pass_context
def studio_command(ctx: click.Context, host: str, port: int, allow_hosts: tuple[str, ...]) -> None:
    """Start the studio: build flows on a canvas, run them, inspect every step. Opens on the
    example flows; stop it with Ctrl+C."""
    from flowcall.service.models import embedded_model_status
    from flowcall.studio import server_guard

    server_guard.guard()  # a Streamlit that cannot guard the studio stops here, with the reason
    env = dict(os.environ)
    if ctx.find_root().obj.get("db"):
        env["FLOWCALL_DATABASE_URL"] = ctx.find_root().obj["db"]
    if allow_hosts:
        env[server_guard.HOSTS_ENV] = ",".join(filter(None, [env.get(server_guard.HOSTS_ENV), *allow_hosts]))
    if not os.environ.get("FLOWCALL_MODEL_PATH") and not embedded_model_status()["present"]:
        echo(
            "note: the embedded model is not here yet; fetch "
            "it on the Models page or with: flowcall model fetch",
            err=True,
        )
    shown = f"[{host}]" if ":" in host else host
    echo(f"the studio is at http://{shown}:{port}", err=True)
    if host in ("0.0.0.0", "::") and not allow_hosts:
        echo(
            "note: it answers only 127.0.0.1, localhost and ::1; "
            "add the names you open it by with --allow-host",
            err=True,
        )
    settings = {"server.address": host, "server.port": str(port), **server_guard.SERVER_SETTINGS}
    flags = [part for name, value in settings.items() for part in (f"--{name}", value)]
    argv = [sys.executable, "-m", "streamlit", "run", str(SERVED), *flags]
    os.execve(sys.executable, argv, env)
