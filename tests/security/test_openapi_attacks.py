"""Attacks through an OpenAPI document: a YAML alias bomb, and operations that change things
but would run without a person's approval."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flowcall.core.spec import DecisionConfig, Flow, HTTPToolSource
from flowcall.core.steps import MemorySink, RunStatus, StepKind
from flowcall.engine.loop import Engine
from flowcall.providers.scripted import ScriptedProvider
from flowcall.tools.registry import ToolRegistry
from tests.security.test_ssrf import Capture

ROOT = Path(__file__).resolve().parents[2]

# nine levels of nine aliases: 9**9 (387 million) strings once expanded, from 1 kB of text
LEVELS = "abcdefghi"
BOMB = "\n".join(
    [
        'openapi: "3.0.3"',
        "info: {title: lol, version: '1'}",
        'x-a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]',
        *[f"x-{b}: &{b} [{', '.join([f'*{a}'] * 9)}]" for a, b in zip(LEVELS, LEVELS[1:])],
        "paths:",
        "  /lol:",
        "    get:",
        "      operationId: lol",
        "      x-lol: *i",
        "",
    ]
)

# Loading runs in a child process with a memory cap and a time limit: on a loader that expands
# the bomb, the child is what runs out, not the test session.
LOADER = textwrap.dedent("""
    import resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    from flowcall.core.spec import HTTPToolSource
    from flowcall.tools.openapi_tools import tools_from_openapi
    started = time.monotonic()
    try:
        tools = tools_from_openapi(HTTPToolSource(name="lol", openapi=sys.argv[1], base_url="http://api.example.com",
                                                  allow_hosts=["127.0.0.1"]))
        print(f"loaded {len(tools)} tool(s)")
    except BaseException as exc:
        print(f"{type(exc).__name__}: {exc}")
    print(f"{time.monotonic() - started:.2f}")
""")


def load_isolated(openapi: str) -> tuple[str, float | None]:
    """(what loading said, how long it took), or (a note, None) if the child did not finish."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", LOADER, openapi], capture_output=True, text=True, cwd=ROOT, timeout=60
        )
    except subprocess.TimeoutExpired:
        return "still loading after 60 s (killed)", None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or len(lines) < 2:
        return f"exit {done.returncode}: {(done.stdout + done.stderr)[-300:]}", None
    return "\n".join(lines[:-1]), float(lines[-1])


def test_a_yaml_alias_bomb_file_is_refused_before_expansion(attack, tmp_path):
    attack.tried(
        "an OpenAPI YAML file of 1 kB whose nested aliases expand to 387 million strings (billion laughs)",
        expected="ConfigError naming YAML aliases, within a few seconds, nothing expanded",
    )
    path = tmp_path / "lol.yaml"
    path.write_text(BOMB, encoding="utf-8")
    said, seconds = load_isolated(str(path))
    attack.observed(f"{said} (after {seconds} s)")
    assert seconds is not None and seconds < 5
    assert said.startswith("ConfigError") and "YAML alias" in said and "billion laughs" in said


def test_a_yaml_alias_bomb_served_over_http_is_refused_before_expansion(attack):
    attack.tried(
        "the OpenAPI document URL serves the alias bomb",
        expected="ConfigError naming YAML aliases, within a few seconds, nothing expanded",
    )
    server = Capture(lambda h: (200, {"Content-Type": "application/yaml"}, BOMB.encode()))
    try:
        said, seconds = load_isolated(f"{server.url}/openapi.yaml")
    finally:
        server.close()
    attack.observed(f"{said} (after {seconds} s)")
    assert seconds is not None and seconds < 5
    assert said.startswith("ConfigError") and "YAML alias" in said


@pytest.mark.parametrize("method", ["post", "patch"])
def test_an_operation_that_changes_things_waits_for_a_person(attack, tmp_path, method):
    attack.tried(
        f"the model calls an HTTP tool for {method.upper()} (not PUT/DELETE), with nobody to approve",
        expected=f"the run waits for approval; the server gets no {method.upper()}",
    )
    server = Capture(lambda h: (200, {"Content-Type": "application/json"}, b'{"done": true}'))
    document = {
        "openapi": "3.0.3",
        "info": {"title": "shop", "version": "1"},
        "paths": {
            "/orders": {
                method: {
                    "operationId": "placeOrder",
                    "summary": "Place an order.",
                    "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}},
                }
            }
        },
    }
    path = tmp_path / "shop.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    source = HTTPToolSource(name="shop", openapi=str(path), base_url=server.url, allow_hosts=["127.0.0.1"])
    flow = Flow(
        name="shop",
        tools=["shop/http/placeOrder"],
        max_rounds=1,
        http_tools=[source],
        decision=DecisionConfig(provider="scripted"),
    )
    provider = ScriptedProvider([[("placeOrder", {"body": {"item": "gold", "qty": 1000}})], "ordered"])
    try:
        run = Engine(ToolRegistry(), lambda cfg: provider, MemorySink()).run(flow, "buy gold")
    finally:
        server.close()
    waiting = [s.name for s in run.steps if s.kind == StepKind.APPROVAL]
    attack.observed(
        f"run {run.status.value}, approval steps {waiting}, server got "
        f"{[r['method'] for r in server.requests]}"
    )
    assert run.status == RunStatus.WAITING_APPROVAL and waiting == ["placeOrder"] and server.requests == []
