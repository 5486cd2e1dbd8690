"""Approval: calls that wait for a person, who approves, denies or edits them; a run with nobody
to ask pauses in the database and resumes later, also from a new process's objects."""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

from flowcall.cli.main import ask_on_terminal
from flowcall.core.spec import DecisionConfig, Flow
from flowcall.core.steps import MemorySink, RunStatus, StepKind
from flowcall.engine.approval import Decision, approve_all, needs_approval, why_approval
from flowcall.engine.loop import Engine
from flowcall.providers.scripted import ScriptedProvider
from flowcall.service.front import FlowCall
from flowcall.tools.base import Tool, ToolAnnotations
from flowcall.tools.python_plugins import build_tool
from flowcall.tools.registry import ToolRegistry

DELETED: list[str] = []


def delete_file(path: str) -> str:
    """Delete a file."""
    DELETED.append(path)
    return f"deleted {path}"


def read_file(path: str) -> str:
    """Read a file."""
    return "contents"


REGISTRY = ToolRegistry(
    [
        build_tool(delete_file, "fs/v1/delete_file", annotations=ToolAnnotations(destructive=True)),
        build_tool(read_file, "fs/v1/read_file", annotations=ToolAnnotations(read_only=True)),
    ]
)
FLOW = Flow(
    name="files",
    tools=["delete_file", "read_file"],
    max_rounds=1,
    decision=DecisionConfig(provider="scripted"),
)


@pytest.fixture(autouse=True)
def _clean():
    DELETED.clear()


def run(script, approver=None, sink=None):
    provider = ScriptedProvider(script)
    sink = sink or MemorySink()
    return (
        Engine(REGISTRY, lambda cfg: provider, sink).run(FLOW, "tidy up", approver=approver),
        provider,
        sink,
    )


def test_which_calls_wait_for_a_person():
    plain = Tool(name="t", version="x/v1/t", description="", parameters={}, func=lambda: None)
    destructive = Tool(
        name="d",
        version="x/v1/d",
        description="",
        parameters={},
        func=lambda: None,
        annotations=ToolAnnotations(destructive=True),
    )
    mcp = Tool(
        name="m",
        version="s/mcp/m",
        description="",
        parameters={},
        func=lambda: None,
        source="mcp",
        annotations=ToolAnnotations(destructive=True),
    )
    assert not needs_approval(plain, FLOW) and needs_approval(destructive, FLOW)
    assert needs_approval(mcp, FLOW)  # an untrusted server's destructive default holds
    assert not needs_approval(Tool(**{**vars(mcp), "trusted": True}), FLOW)
    assert needs_approval(plain, FLOW.model_copy(update={"needs_approval": ["x/v1/t"]}))


def test_a_call_that_waits_says_why_so_the_person_can_change_it():
    def tool(**kw) -> Tool:
        return Tool(name="t", version="x/v1/t", description="", parameters={}, func=lambda: None, **kw)

    read_only = ToolAnnotations(read_only=True)
    untrusted = tool(source="mcp", annotations=read_only)
    assert needs_approval(untrusted, FLOW)  # read-only says the server, which nobody trusted
    assert "MCP server is not trusted" in why_approval(untrusted, FLOW)
    assert "mark the server trusted on the Flows page" in why_approval(untrusted, FLOW)
    listed = FLOW.model_copy(update={"needs_approval": ["x/v1/t"]})
    assert "needs_approval" in why_approval(tool(), listed)
    assert "definition changed" in why_approval(tool(), FLOW, frozenset({"x/v1/t"}))
    assert "destructive" in why_approval(tool(annotations=ToolAnnotations(destructive=True)), FLOW)


def test_approved_calls_run_and_read_only_ones_are_not_asked():
    asked = []

    def approver(call, tool):
        asked.append(call.name)
        return Decision(action="approve", by="test")

    result, _, _ = run(
        [[("delete_file", {"path": "a.txt"}), ("read_file", {"path": "b.txt"})], "done"], approver
    )
    assert result.status == RunStatus.SUCCEEDED and asked == ["delete_file"] and DELETED == ["a.txt"]
    approval = next(s for s in result.steps if s.kind == StepKind.APPROVAL)
    assert approval.note == "approve by test" and approval.arguments == {"path": "a.txt"}


def test_a_denied_call_is_not_run_and_the_model_hears_why():
    deny = lambda call, tool: Decision(action="deny", reason="keep it", by="test")  # noqa: E731
    result, provider, _ = run([[("delete_file", {"path": "a.txt"})], "ok, I kept it"], deny)
    assert DELETED == [] and result.final_answer == "ok, I kept it"
    step = next(s for s in result.steps if s.kind == StepKind.TOOL_CALL)
    assert step.error_code == "APPROVAL_DENIED" and not step.response["executed"]
    told = json.loads(provider.requests[-1].messages[-1].content)["error"]
    assert told["code"] == "APPROVAL_DENIED" and "keep it" in told["message"]


def test_edited_arguments_run_and_are_checked_like_the_models():
    edit = lambda call, tool: Decision(action="edit", arguments={"path": "safe.txt"})  # noqa: E731
    result, _, _ = run([[("delete_file", {"path": "/etc/passwd"})], "done"], edit)
    assert DELETED == ["safe.txt"]
    assert next(s for s in result.steps if s.kind == StepKind.TOOL_CALL).arguments == {"path": "safe.txt"}
    DELETED.clear()
    broken = lambda call, tool: Decision(action="edit", arguments={"file": 1})  # noqa: E731
    result, _, _ = run([[("delete_file", {"path": "x"})], "done"], broken)
    assert (
        DELETED == []
        and next(s for s in result.steps if s.kind == StepKind.TOOL_CALL).error_code
        == "MISSING_REQUIRED_FIELD"
    )


def test_with_nobody_to_ask_the_run_pauses_and_resumes_where_it_stopped():
    sink = MemorySink()
    paused, _, _ = run([[("delete_file", {"path": "a.txt"}), ("read_file", {"path": "b.txt"})]], sink=sink)
    assert paused.status == RunStatus.WAITING_APPROVAL and DELETED == []
    waiting = [s for s in paused.steps if s.kind == StepKind.APPROVAL]
    assert [s.name for s in waiting] == ["delete_file"] and waiting[0].note.startswith("waiting for a person")
    assert not [s for s in paused.steps if s.kind == StepKind.TOOL_CALL]  # nothing ran, not even the read
    checkpoint = json.loads(json.dumps(sink.checkpoints[paused.id]))  # it is plain JSON
    before = len(paused.steps)
    provider = ScriptedProvider(["all tidy"])
    resumed = Engine(REGISTRY, lambda cfg: provider, sink).resume(
        paused, FLOW, checkpoint, approver=approve_all
    )
    assert (
        resumed.status == RunStatus.SUCCEEDED and resumed.final_answer == "all tidy" and DELETED == ["a.txt"]
    )
    assert [s.seq for s in resumed.steps] == list(range(1, len(resumed.steps) + 1))  # numbering goes on
    after = [s.kind for s in resumed.steps][before:]
    assert (
        after[:3] == [StepKind.APPROVAL, StepKind.TOOL_CALL, StepKind.TOOL_CALL]
        and after[-1] == StepKind.MODEL_CALL
    )


def test_a_paused_run_resumes_from_the_database_with_new_objects(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'approval.db'}"
    monkeypatch.setenv("FLOWCALL_DATABASE_URL", url)
    flow = Flow(
        name="tasks",
        tools=["task/v1/create_task"],
        needs_approval=["create_task"],
        max_rounds=1,
        decision=DecisionConfig(provider="scripted"),
    )
    first = FlowCall(
        store=FlowCall.open(url).store,
        provider_factory=lambda cfg: ScriptedProvider([[("create_task", {"title": "写周报"})]]),
    )
    paused = first.run(flow, "记一下:写周报")
    assert paused.status == RunStatus.WAITING_APPROVAL
    assert first.store.get_run(paused.id).status == RunStatus.WAITING_APPROVAL
    first.store.close()

    later = FlowCall(
        store=FlowCall.open(url).store, provider_factory=lambda cfg: ScriptedProvider(["记好了"])
    )
    resumed = later.resume(paused.id[:8], approver=approve_all)
    assert resumed.status == RunStatus.SUCCEEDED and resumed.final_answer == "记好了"
    assert [t["title"] for t in later.store.list_tasks()] == ["写周报"]
    stored = later.store.get_run(paused.id)
    assert (
        stored.status == RunStatus.SUCCEEDED and [s.kind for s in stored.steps].count(StepKind.APPROVAL) == 2
    )
    with pytest.raises(
        Exception, match="it is succeeded: only a run that waits for approval or was interrupted"
    ):
        later.resume(paused.id, approver=approve_all)


def test_the_terminal_approver_asks_and_accepts_only_a_json_object():
    tool = REGISTRY.get("delete_file")
    call = type("Call", (), {"arguments": {"path": "a.txt"}})()

    @click.command()
    def ask():
        decision = ask_on_terminal(call, tool)
        click.echo(decision.model_dump_json())

    out = CliRunner().invoke(ask, input='e\n{bad\n[1]\n{"path": "b.txt"}\n').output
    assert json.loads(out.strip().splitlines()[-1]) == {
        "action": "edit",
        "arguments": {"path": "b.txt"},
        "reason": "",
        "by": "terminal",
    }
    out = CliRunner().invoke(ask, input="d\ntoo risky\n").output
    assert json.loads(out.strip().splitlines()[-1])["reason"] == "too risky"


def test_cli_resume_needs_to_be_told_how_to_answer(tmp_path):
    """A run waiting for approval needs --approve, --approve-all or --deny-all (an interrupted
    one does not: tests/test_durable_runs.py)."""
    import subprocess
    import sys
    from pathlib import Path

    url = f"sqlite:///{tmp_path / 'flowcall.db'}"
    paused = FlowCall(
        store=FlowCall.open(url).store,
        provider_factory=lambda cfg: ScriptedProvider([[("delete_file", {"path": "a.txt"})]]),
    )
    paused.registry = REGISTRY
    run = paused.run(FLOW, "delete a.txt")
    assert run.status == RunStatus.WAITING_APPROVAL
    done = subprocess.run(
        [sys.executable, "-m", "flowcall.cli.main", "--db", url, "runs", "resume", run.id[:8]],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
        timeout=60,
    )
    assert done.returncode == 2 and "--approve, --approve-all or --deny-all" in done.stderr
