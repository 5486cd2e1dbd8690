"""Watching a run as it happens (issue 12, point 6): the engine says when each model call and
each round of tools starts and ends, before the step's record arrives; the CLI's spinner draws
the running step with its elapsed time on a terminal, and nothing on a pipe."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

from flowcall.cli.spinner import CLEAR, Spinner, terminal_watcher
from flowcall.core import progress
from flowcall.core.spec import DecisionConfig, Flow, PolishConfig
from flowcall.core.steps import MemorySink
from flowcall.engine.loop import Engine
from flowcall.testing import ScriptedProvider
from flowcall.tools.python_plugins import build_tool
from flowcall.tools.registry import ToolRegistry

ROOT = Path(__file__).resolve().parents[1]


def echo(text: str) -> str:
    """Echo the text."""
    return f"echo {text}"


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def started(self, kind: str, label: str) -> None:
        self.events.append(("started", kind, label))

    def text(self, piece: str) -> None:
        self.events.append(("text", piece))

    def ended(self) -> None:
        self.events.append(("ended",))


def test_the_engine_announces_each_step_before_its_record():
    registry = ToolRegistry([build_tool(echo, "t/v1/echo")])
    decider = ScriptedProvider([[("echo", {"text": "a"})], "done"], model="decider")
    polisher = ScriptedProvider(["The echo said a."], model="polisher")
    flow = Flow(
        name="t",
        tools=["echo"],
        decision=DecisionConfig(provider="scripted", model="decider"),
        polish=PolishConfig(provider="scripted", model="polisher"),
    )
    watcher = Recorder()

    def on_step(step) -> None:
        watcher.events.append(("record", step.kind.value))

    with progress.watching(watcher):
        run = Engine(registry, lambda cfg: decider if cfg.model == "decider" else polisher, MemorySink()).run(
            flow, "echo a", on_step=on_step
        )
    decider.assert_complete()
    polisher.assert_complete()
    assert run.status.value == "succeeded"
    assert watcher.events == [
        ("started", "model_call", "scripted/decider"),
        ("ended",),
        ("record", "model_call"),
        ("started", "tool_call", "echo"),
        ("ended",),
        ("record", "tool_call"),
        ("started", "model_call", "scripted/decider"),
        ("ended",),
        ("record", "model_call"),
        ("started", "polish", "scripted/polisher"),
        ("ended",),
        ("record", "polish"),
    ]


def test_nobody_watching_means_nothing_is_sent():
    assert not progress.watched()
    progress.text("lost on purpose")  # no watcher: a no-op, not an error
    with progress.step("model_call", "x"):
        pass
    watcher = Recorder()
    with progress.watching(watcher):
        assert progress.watched()
        progress.text("")  # empty pieces are not passed on
        progress.text("hi")
    assert watcher.events == [("text", "hi")] and not progress.watched()


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_spinner_shows_the_running_step_its_time_and_the_text_so_far():
    screen = FakeTerminal()
    with Spinner(screen, interval_s=0.02) as spinner:
        spinner.started("polish", "local/qwen")
        spinner.text("明天成都")
        spinner.text(" 有小雨")
        time.sleep(0.15)
        line = spinner.line()
        spinner.ended()
    drawn = screen.getvalue()
    assert "polish local/qwen" in line and " s  " in line and "明天成都 有小雨" in line
    assert drawn.count(CLEAR) >= 3  # redrawn while it ran, cleared at the end
    assert drawn.endswith(CLEAR)  # nothing left on the line for the step's own record


def test_no_spinner_on_a_pipe_or_when_quiet():
    with terminal_watcher(stream=io.StringIO()) as watcher:
        assert watcher is None
    with terminal_watcher(enabled=False, stream=FakeTerminal()) as watcher:
        assert watcher is None
    with terminal_watcher(stream=FakeTerminal()) as watcher:
        assert isinstance(watcher, Spinner)


def test_cli_output_on_a_pipe_has_no_spinner(tmp_path):
    """A script reading `flowcall run`'s stderr sees the step lines only, no escape codes."""
    flow = tmp_path / "flow.json"
    flow.write_text(
        '{"name": "echo-scripted", "tools": ["get_current_time"], '
        '"decision": {"provider": "scripted", "model": "schema"}}'
    )
    env = {**os.environ, "FLOWCALL_DATABASE_URL": f"sqlite:///{tmp_path / 'f.db'}"}
    done = subprocess.run(
        [sys.executable, "-m", "flowcall.cli.main", "run", str(flow), "what time is it?"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "model_call" in done.stderr and "tool_call" in done.stderr
    assert "\x1b[" not in done.stderr and "⠋" not in done.stderr
