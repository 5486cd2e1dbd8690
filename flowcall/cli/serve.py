"""`flowcall serve`: the HTTP API (flowcall/api/) on uvicorn."""

from __future__ import annotations

import socket

import click

from flowcall.cli.common import echo, reach_options
from flowcall.cli.common import service as _service
from flowcall.trust.exposure import is_loopback


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", type=int, default=8000, show_default=True)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Server processes; each keeps its own rate and concurrency limits.",
)
@click.option("--no-auth", is_flag=True, help="Answer requests without a key: on a loopback --host only.")
@reach_options
@click.option(
    "--max-body",
    type=click.IntRange(min=1_000),
    default=1_000_000,
    show_default=True,
    help="The largest request body, in bytes.",
)
@click.option(
    "--rate",
    type=click.FloatRange(min=1),
    default=120.0,
    show_default=True,
    help="Requests a minute per key (bursts of up to --burst).",
)
@click.option("--burst", type=click.IntRange(min=1), default=30, show_default=True)
@click.option(
    "--concurrent",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Runs a key may have going at once.",
)
@click.option(
    "--concurrent-all",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    help="Runs going at once on the server, all keys together (per process with --workers).",
)
@click.option(
    "--quota-runs",
    type=click.IntRange(min=1),
    default=100_000,
    show_default=True,
    help="Runs a key may have stored; past it, its new runs are refused.",
)
@click.option(
    "--quota-flows",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="Flows a key may have imported; past it, its imports are refused.",
)
@click.option(
    "--wait",
    "wait_s",
    type=click.FloatRange(min=1),
    default=300.0,
    show_default=True,
    help="Seconds a request waits for its run; after that it answers 202 with the run's id.",
)
@click.pass_context
def serve_command(
    ctx: click.Context,
    host: str,
    port: int,
    workers: int,
    no_auth: bool,
    allow_hosts: tuple[str, ...],
    allow_origins: tuple[str, ...],
    max_body: int,
    rate: float,
    burst: int,
    concurrent: int,
    wait_s: float,
    **limits: int,  # --concurrent-all, --quota-runs, --quota-flows: Settings' fields of those names
) -> None:
    """Serve the saved flows over HTTP: a REST API for flows and runs, and an OpenAI-compatible
    /v1/chat/completions where `model` is a flow's name. Requests need a key (`flowcall keys create`)."""
    import uvicorn

    from flowcall.api.app import create_app, settings_to_env
    from flowcall.api.context import Settings
    from flowcall.api.guard import given_origin

    if no_auth and not is_loopback(host):
        raise click.UsageError(
            f"--no-auth answers anyone who reaches the port; --host {host or '(all)'} is "
            "reachable from other machines. Create a key instead: flowcall keys create NAME"
        )
    for origin in allow_origins:  # a wrong one stops here, not in each worker
        given_origin(origin)
    settings = Settings(
        host=host,
        auth=not no_auth,
        max_body=max_body,
        rate=rate,
        burst=burst,
        concurrent=concurrent,
        wait_s=wait_s,
        allow_hosts=allow_hosts,
        allow_origins=allow_origins,
        **limits,
    )
    service = _service(ctx)
    _announce(host, port, no_auth, has_keys=bool(service.list_keys()))
    if workers == 1:
        uvicorn.run(create_app(service, settings), host=host, port=port, log_level="warning")
    else:
        settings_to_env(settings, ctx.find_root().obj.get("db"))
        _serve_workers(host, port, workers)


def _announce(host: str, port: int, no_auth: bool, *, has_keys: bool) -> None:
    """Where the API listens and whether it wants a key, on stderr: stdout stays the server's."""
    if not no_auth and not has_keys:
        echo(
            "note: no API key exists yet, so every request will be refused; create one with: "
            "flowcall keys create NAME",
            err=True,
        )
    shown = f"[{host}]" if ":" in host else host
    echo(
        f"serving the flows at http://{shown}:{port}/v1 (API docs: /docs; "
        f"{'no key needed: loopback only' if no_auth else 'a key is required'})",
        err=True,
    )


def _serve_workers(host: str, port: int, workers: int) -> None:
    """As uvicorn.run(..., workers=N), with the listening socket made a TCP one (tcp_socket)."""
    from uvicorn import Config
    from uvicorn.supervisors import Multiprocess

    config = Config(
        "flowcall.api.app:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="warning",
    )
    try:
        Multiprocess(config, sockets=[tcp_socket(config.bind_socket())]).run()
    except KeyboardInterrupt:
        pass


def tcp_socket(bound: socket.socket) -> socket.socket:
    """The same socket, marked as TCP. uvicorn binds its workers' socket with protocol 0, and
    asyncio sets TCP_NODELAY only on connections whose protocol is TCP: without it each
    response waits about 40 ms for the client's delayed ACK (uvicorn issue #3149)."""
    sock = socket.socket(bound.family, bound.type, socket.IPPROTO_TCP, fileno=bound.detach())
    sock.set_inheritable(True)
    return sock
