"""`flowcall studio`: the Streamlit studio (flowcall/studio/app.py) on this machine's database."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from flowcall.cli.common import echo

APP = Path(__file__).resolve().parents[1] / "studio" / "app.py"


@click.command("studio")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", type=int, default=8501, show_default=True)
@click.pass_context
def studio_command(ctx: click.Context, host: str, port: int) -> None:
    """Start the studio: build flows on a canvas, run them, inspect every step. Opens on the
    example flows; stop it with Ctrl+C."""
    from flowcall.providers import local_model

    env = dict(os.environ)
    if ctx.find_root().obj.get("db"):
        env["FLOWCALL_DATABASE_URL"] = ctx.find_root().obj["db"]
    if not os.environ.get("FLOWCALL_MODEL_PATH") and not local_model.status()["present"]:
        echo(
            "note: the embedded model is not here yet; fetch "
            "it on the Models page or with: flowcall model fetch",
            err=True,
        )
    shown = f"[{host}]" if ":" in host else host
    echo(f"the studio is at http://{shown}:{port}", err=True)
    argv = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(APP),
        "--server.address",
        host,
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
    ]
    os.execve(sys.executable, argv, env)
