"""A flow as a tool of another flow (tools/sources/flow.py, engine/subflows.py): the sub-flow runs
as a run of its own in the same store, linked to the call; its approvals pause the parent and
show in the parent's waiting list; nothing runs twice; cycles and missing versions are refused
when saved, depth is bounded when run; consent covers what sub-flows start; the studio picks a
sub-flow from the saved flows and the inspector links both runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowcall.api.running import waiting
from flowcall.core.errors import ConfigError
from flowcall.core.spec import DecisionConfig, Flow, PolishConfig, parse_flow
from flowcall.core.steps import SUB_RUN, RunStatus, StepKind, waiting_calls
from flowcall.engine.approval import Decision, approve_all
from flowcall.engine.loop import Engine
from flowcall.engine.subflows import MAX_DEPTH, SubFlows, child_run_id
from flowcall.providers.scripted import ScriptedProvider
from flowcall.service.front import FlowCall
from flowcall.tools.base import ToolAnnotations
from flowcall.tools.python_plugins import build_tool
from flowcall.tools.registry import ToolRegistry
from flowcall.trust.consent import TrustRequired

ROOT = Path(__file__).resolve().parents[1]
DELETED: list[str] = []


def delete_file(path: str) -> str:
    """Delete a file."""
    DELETED.append(path)
    return f"deleted {path}"


def count_files(folder: str) -> int:
    """Count the files in a folder."""
    return 3


REGISTRY = ToolRegistry(
    [
        build_tool(delete_file, "fs/v1/delete_file", annotations=ToolAnnotations(destructive=True)),
        build_tool(count_files, "fs/v1/count_files", annotations=ToolAnnotations(read_only=True)),
    ]
)


@pytest.fixture(autouse=True)
def _clean():
    DELETED.clear()


def scripted(model: str) -> DecisionConfig:
    return DecisionConfig(provider="scripted", model=model)


def service(tmp_path, scripts: dict[str, list]) -> tuple[FlowCall, dict[str, ScriptedProvider]]:
    """The service on a SQLite file, each flow's decision model answering from its own script
    (by the model name its flow gives)."""
    providers = {model: ScriptedProvider(script) for model, script in scripts.items()}
    app = FlowCall(
        store=FlowCall.open(f"sqlite:///{tmp_path / 'sub.db'}").store,
        provider_factory=lambda cfg: providers[cfg.model],
    )
    app.registry = REGISTRY
    return app, providers


def child_flow(tools: list[str], **kw) -> Flow:
    return Flow(
        name="tidy",
        description="Tidies a folder.",
        tools=tools,
        max_rounds=1,
        decision=scripted("child"),
        **kw,
    )


def parent_flow(name: str = "office", sub: str = "tidy", version: int = 1, model: str = "parent") -> Flow:
    return Flow(
        name=name,
        tools=["tidy/flow/tidy"],
        sources={"flow": [{"name": "tidy", "flow": sub, "version": version}]},
        max_rounds=1,
        decision=scripted(model),
    )


def tool_steps(run):
    return [s for s in run.steps if s.kind == StepKind.TOOL_CALL]


def test_a_sub_flow_that_waits_for_a_person_pauses_its_parent_and_approval_continues_both(tmp_path):
    app, providers = service(
        tmp_path,
        {
            "parent": [[("tidy", {"question": "delete a.txt"})], "done: a.txt is gone"],
            "child": [[("delete_file", {"path": "a.txt"})], "deleted a.txt"],
        },
    )
    app.save_flow(child_flow(["fs/v1/delete_file"]))
    paused = app.run(parent_flow(), "tidy up")

    # the parent waits, its pending call being the sub-flow call; nothing was deleted
    assert paused.status == RunStatus.WAITING_APPROVAL and DELETED == []
    call_id = next(s for s in paused.steps if s.kind == StepKind.APPROVAL).tool_call_id
    child = app.store.get_run(child_run_id(paused.id, call_id))
    assert child.status == RunStatus.WAITING_APPROVAL
    assert (child.parent_run_id, child.parent_call_id, child.flow_name) == (paused.id, call_id, "tidy")
    # the parent's waiting list is the child's waiting call, labelled as the sub-flow's
    stored = app.store.get_run(paused.id)
    [shown] = waiting_calls(stored)
    [childs] = waiting_calls(child)
    assert shown.name == "tidy › delete_file" and shown.tool_call_id == childs.tool_call_id
    assert shown.arguments == {"path": "a.txt"} and shown.note.startswith("waiting for a person")
    assert [w["tool"] for w in waiting(stored)] == ["tidy › delete_file"]

    # the person answers the call shown (by its id), as the studio, the API and the CLI do
    decided, asked = {childs.tool_call_id: Decision(action="approve", by="alice")}, []

    def approver(call, tool):
        asked.append(tool.version)  # what the terminal shows: whose call it is
        return decided.get(call.id)

    done = app.resume(paused.id, approver=approver)

    assert done.status == RunStatus.SUCCEEDED and done.final_answer == "done: a.txt is gone"
    assert DELETED == ["a.txt"] and asked == ["tidy › fs/v1/delete_file"]
    child = app.store.get_run(child.id)
    assert child.status == RunStatus.SUCCEEDED and child.final_answer == "deleted a.txt"
    assert [s.note for s in child.steps if s.kind == StepKind.APPROVAL][-1] == "approve by alice"
    [step] = tool_steps(app.store.get_run(done.id))
    assert step.name == "tidy" and step.result == "deleted a.txt" and step.response[SUB_RUN] == child.id
    assert [r.id for r in app.store.child_runs(done.id)] == [child.id]
    for provider in providers.values():
        provider.assert_complete()


def test_a_parent_resumed_after_its_sub_flow_ended_takes_its_answer_without_running_it_again(tmp_path):
    app, providers = service(
        tmp_path,
        {
            "parent": [[("tidy", {"question": "delete a.txt"})], "done"],
            "child": [[("delete_file", {"path": "a.txt"})], "deleted a.txt"],
        },
    )
    app.save_flow(child_flow(["fs/v1/delete_file"]))
    paused = app.run(parent_flow(), "tidy up")
    call_id = next(s for s in paused.steps if s.kind == StepKind.APPROVAL).tool_call_id
    child = app.store.get_run(child_run_id(paused.id, call_id))
    # the child goes on by itself (as if its parent's process died after it ended)
    engine = Engine(REGISTRY, app.provider_factory, app.store, app.store, subflows=SubFlows(app.store))
    ended = engine.resume(child, app.flow_of(child), app.store.get_checkpoint(child.id), approver=approve_all)
    assert ended.status == RunStatus.SUCCEEDED and DELETED == ["a.txt"]
    steps_before = len(app.store.get_run(child.id).steps)

    done = app.resume(paused.id, approver=None)  # nobody needs to answer anything now

    assert done.status == RunStatus.SUCCEEDED and DELETED == ["a.txt"]  # deleted once
    assert len(app.store.get_run(child.id).steps) == steps_before  # the child did not run again
    assert tool_steps(done)[0].result == "deleted a.txt"
    assert len(app.store.child_runs(done.id)) == 1
    providers["child"].assert_complete()


def test_resuming_a_sub_flows_run_goes_on_through_its_parent(tmp_path):
    app, _ = service(
        tmp_path,
        {
            "parent": [[("tidy", {"question": "delete a.txt"})], "done"],
            "child": [[("delete_file", {"path": "a.txt"})], "deleted a.txt"],
        },
    )
    app.save_flow(child_flow(["fs/v1/delete_file"]))
    paused = app.run(parent_flow(), "tidy up")
    [child] = app.store.child_runs(paused.id)
    resumed = app.resume(child.id, approver=approve_all)
    assert resumed.id == paused.id and resumed.status == RunStatus.SUCCEEDED and DELETED == ["a.txt"]


def test_cancelling_a_parent_cancels_its_waiting_sub_flow(tmp_path):
    app, _ = service(
        tmp_path,
        {
            "parent": [[("tidy", {"question": "delete a.txt"})]],
            "child": [[("delete_file", {"path": "a.txt"})]],
        },
    )
    app.save_flow(child_flow(["fs/v1/delete_file"]))
    paused = app.run(parent_flow(), "tidy up")
    [child] = app.store.child_runs(paused.id)
    app.cancel(paused.id, by="alice")
    assert app.store.get_run(child.id).status == RunStatus.CANCELLED
    assert app.store.get_run(paused.id).status == RunStatus.CANCELLED


def test_a_replay_of_the_parent_replays_its_sub_flow_as_a_linked_run(tmp_path):
    app, _ = service(
        tmp_path,
        {
            "parent": [[("tidy", {"question": "how many files?"})], "there are 3"],
            "child": [[("count_files", {"folder": "."})], "3 files"],
        },
    )
    app.save_flow(child_flow(["fs/v1/count_files"]))
    first = app.run(parent_flow(), "how many files?")
    assert first.status == RunStatus.SUCCEEDED
    original_child = app.store.get_run(tool_steps(first)[0].response[SUB_RUN])

    _, replayed = app.replay(first.id)  # the scripts are used up: only the records answer

    assert replayed.status == RunStatus.SUCCEEDED and replayed.final_answer == "there are 3"
    child = app.store.get_run(tool_steps(replayed)[0].response[SUB_RUN])
    assert child.id != original_child.id and child.parent_run_id == replayed.id
    assert [s.kind for s in child.steps] == [s.kind for s in original_child.steps]
    assert [s.arguments for s in tool_steps(child)] == [s.arguments for s in tool_steps(original_child)]
    assert tool_steps(child)[0].result == 3 and child.final_answer == "3 files"


def test_a_cycle_of_sub_flows_is_refused_when_saved(tmp_path):
    app, _ = service(tmp_path, {})
    app.save_flow(Flow(name="a", decision=scripted("a")))
    app.save_flow(parent_flow(name="b", sub="a", model="b"))  # b calls a (version 1)
    a_calls_b = parent_flow(name="a", sub="b", model="a")
    with pytest.raises(ConfigError, match=r"flow 'a' would call itself through its sub-flows: a -> b -> a"):
        app.save_flow(a_calls_b)
    with pytest.raises(ConfigError, match="a -> b -> a"):
        app.run(a_calls_b, "hi")  # the service's adopt path too
    with pytest.raises(ConfigError, match=r"a -> a; a flow cannot be its own sub-flow"):
        app.save_flow(parent_flow(name="a", sub="a", model="a"))
    assert [v["version"] for v in app.store.flow_versions("a")] == [1]  # nothing was saved


def test_a_sub_flow_version_not_stored_here_is_refused_naming_it(tmp_path):
    app, _ = service(tmp_path, {})
    with pytest.raises(
        ConfigError, match=r"flow 'tidy' version 7 .* not stored here; import that flow first"
    ):
        app.adopt(parent_flow(version=7))


def test_an_exported_parent_imports_byte_identical(tmp_path):
    app, _ = service(tmp_path, {})
    app.save_flow(child_flow(["fs/v1/delete_file"]))
    app.save_flow(child_flow(["fs/v1/count_files"]))  # version 2
    app.save_flow(parent_flow(version=2).model_copy(update={"description": "Runs tidy v2."}))
    exported = app.get_flow("office")[0].to_json()
    assert '"version": 2' in exported and '"flow": "tidy"' in exported
    adopted = app.adopt(parse_flow(exported, source="office.json"))
    assert app.get_flow(adopted.flow.name, adopted.version)[0].to_json() == exported

    (tmp_path / "elsewhere").mkdir()
    other, _ = service(tmp_path / "elsewhere", {})  # another database
    with pytest.raises(ConfigError, match="import that flow first"):
        other.adopt(parse_flow(exported, source="office.json"))
    other.save_flow(child_flow(["fs/v1/delete_file"]))
    other.save_flow(child_flow(["fs/v1/count_files"]))
    again = other.adopt(parse_flow(exported, source="office.json"))
    assert other.get_flow(again.flow.name, again.version)[0].to_json() == exported


def test_sub_flows_nest_only_so_deep(tmp_path):
    names = [f"f{n}" for n in range(MAX_DEPTH + 2)]  # f0 calls f1 ... calls f5
    app, _ = service(tmp_path, {name: [[("tidy", {"question": "deeper"})], f"{name} done"] for name in names})
    app.save_flow(Flow(name=names[-1], decision=scripted(names[-1])))
    for name, below in zip(reversed(names[:-1]), reversed(names[1:])):
        app.save_flow(parent_flow(name=name, sub=below, model=name))
    top = app.run(app.get_flow("f0")[0], "go")
    assert top.status == RunStatus.SUCCEEDED
    run = top
    for _ in range(MAX_DEPTH):
        run = app.store.get_run(tool_steps(run)[0].response[SUB_RUN])
    [refused] = tool_steps(run)
    assert run.flow_name == f"f{MAX_DEPTH}" and refused.error_code == "TOOL_ERROR"
    assert (
        f"sub-flows nest deeper than {MAX_DEPTH}: f0 -> f1 -> f2 -> f3 -> f4 -> f5" in refused.error_message
    )
    assert SUB_RUN not in refused.response  # no run was started for it


def test_consent_for_a_parent_covers_what_its_sub_flows_reach(tmp_path):
    app, _ = service(tmp_path, {})
    remote = PolishConfig(provider="openai-compatible", model="m", base_url="http://models.example.test/v1")
    app.save_flow(child_flow(["fs/v1/count_files"], polish=remote))
    parent = parent_flow()
    assert any(
        "models.example.test" in item.summary and "(sub-flow tidy)" in item.summary and not ok
        for item, ok in app.trust_status(parent)
    )
    with pytest.raises(TrustRequired, match="models.example.test"):
        app.require_trust(parent)
    app.grant(parent, by="alice")
    app.require_trust(parent)  # granted with the parent: nothing left to ask


def test_the_studio_and_the_cli_show_the_sub_flow_and_link_both_runs(tmp_path):
    from flowcall.rendering import describe_step, parent_line
    from flowcall.studio import flowgraph as fg
    from flowcall.studio.waiting import waiting_runs

    app, _ = service(
        tmp_path,
        {
            "parent": [[("tidy", {"question": "delete a.txt"})], "done"],
            "child": [[("delete_file", {"path": "a.txt"})], "deleted a.txt"],
        },
    )
    app.save_flow(child_flow(["fs/v1/delete_file"]))
    parent = parent_flow()
    paused = app.run(parent, "tidy up")
    [child] = app.store.child_runs(paused.id)
    # the waiting list: one entry, the parent's, showing the child's call as the sub-flow's
    [entry] = waiting_runs(app)
    assert entry["run_id"] == paused.id and entry["tool"] == "tidy › delete_file"
    done = app.resume(paused.id, approver=approve_all)
    # `flowcall runs show` names the child run on the sub-flow step, and the parent on the child
    line = describe_step(tool_steps(done)[0])
    assert f"sub-flow run {child.id[:8]}: `flowcall runs show {child.id[:8]}`" in line
    assert (
        parent_line(app.store.get_run(child.id))
        == f"sub-flow run of run {paused.id} (its call {child.parent_call_id})"
    )
    # the canvas draws the sub-flow as a tool node that opens its flow
    state = fg.to_canvas(parent)
    [node] = [v for v in fg.node_view(state) if v["kind"] == "tool"]
    assert node["group"] == "flow" and node["subtitle"] == "sub-flow · tidy v1"
    assert node["opens"] == {"flow": "tidy", "version": 1}
    assert fg.sub_flow_of("tidy/flow/tidy", state.settings) == ("tidy", 1)
    assert fg.sub_flow_of("fs/v1/delete_file", state.settings) is None
    assert fg.to_flow(state).content_hash() == parent.content_hash()  # canvas -> flow keeps the sub-flow


def test_the_flows_page_picks_a_saved_flow_as_a_sub_flow_and_saves_it_pinned():
    from flowcall.store import open_store
    from tests.test_studio import page as studio_page
    from tests.test_studio import texts, widget

    app = studio_page("pages/flows.py")
    widget(app.text_input, "Name").input("uses-clock")
    widget(app.radio, "Start from").set_value("blank")
    widget(app.button, "Create").click().run()
    widget(app.button, "+ Decision model").click().run()
    widget(app.button, "+ Sub-flow").click().run()
    # the saved flows are a list to pick from, with their versions; the tool's name follows the flow
    [flow] = [w for w in app.selectbox if (w.key or "").endswith("form:f:flow")]
    assert "current-time" in flow.options and "uses-clock" not in flow.options  # not saved yet
    flow.select("current-time").run()
    [version] = [w for w in app.selectbox if (w.key or "").endswith("form:f:version")]
    assert version.options == ["1"] and version.value == 1
    [name] = [w for w in app.text_input if (w.key or "").endswith("form:f:name")]
    assert name.value == "current-time"
    widget(app.button, "Keep in the flow").click().run()
    assert not app.exception, app.exception
    # its tool is on the palette under its own group, described as the model will read it
    shown = texts(app)
    assert "Sub-flows" in shown and "Tells you the current date" in shown
    [add] = [b for b in app.button if (b.key or "").endswith("add:current-time/flow/current-time")]
    add.click().run()
    widget(app.button, "Save").click().run()
    assert not app.exception, app.exception
    saved = open_store().get_flow("uses-clock")[0]
    assert saved.sources == {"flow": [{"name": "current-time", "flow": "current-time", "version": 1}]}
    assert saved.tools == ["current-time/flow/current-time"]


def test_the_inspector_opens_the_sub_flows_run_from_the_parents_step_and_back(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    app, _ = service(
        tmp_path,
        {
            "parent": [[("tidy", {"question": "delete a.txt"})], "done"],
            "child": [[("delete_file", {"path": "a.txt"})], "deleted a.txt"],
        },
    )
    app.save_flow(child_flow(["fs/v1/delete_file"]))
    done = app.resume(app.run(parent_flow(), "tidy up").id, approver=approve_all)
    [child] = app.store.child_runs(done.id)
    monkeypatch.setenv("FLOWCALL_DATABASE_URL", f"sqlite:///{tmp_path / 'sub.db'}")

    def inspector(run_id: str) -> AppTest:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.run()
        at.switch_page("pages/runs.py")
        at.query_params["run"] = run_id
        at.run()
        assert not at.exception, at.exception
        return at

    def links(at: AppTest) -> dict[str, str]:
        # the labels as shown: md() escapes what Markdown would read
        return {link.proto.query_string: link.proto.label.replace("\\", "") for link in at.get("page_link")}

    at = inspector(done.id)
    tool_step = next(s.seq for s in done.steps if s.kind == StepKind.TOOL_CALL)
    at.slider[0].set_value(tool_step).run()  # the timeline on the sub-flow's call
    assert links(at)[f"run={child.id}"] == f"Open the sub-flow's run {child.id[:8]}"
    back = links(inspector(child.id))[f"run={done.id}"]
    assert back == f"A sub-flow's run, started by a call of run {done.id[:8]}: open that run"


def test_a_call_approved_in_the_round_a_sub_flow_paused_is_not_asked_about_again(tmp_path):
    app, _ = service(
        tmp_path,
        {
            "parent": [[("delete_file", {"path": "p.txt"}), ("tidy", {"question": "delete a.txt"})], "done"],
            "child": [[("delete_file", {"path": "a.txt"})], "deleted a.txt"],
        },
    )
    app.save_flow(child_flow(["fs/v1/delete_file"]))
    parent = parent_flow().model_copy(
        update={"tools": ["tidy/flow/tidy", "fs/v1/delete_file"], "parallel_tool_calls": True}
    )
    asked: list[str] = []

    def only_the_parents_own(call, tool):  # the person answers the parent's call, not the sub-flow's yet
        asked.append(f"{tool.version} {call.arguments['path']}")
        return Decision(action="approve", by="alice") if tool.version == "fs/v1/delete_file" else None

    paused = app.run(parent, "tidy up", approver=only_the_parents_own)
    assert paused.status == RunStatus.WAITING_APPROVAL and DELETED == []  # nothing ran in the round
    assert asked == ["fs/v1/delete_file p.txt", "tidy › fs/v1/delete_file a.txt"]

    asked.clear()

    def approve(call, tool):
        asked.append(f"{tool.version} {call.arguments['path']}")
        return Decision(action="approve", by="bob")

    done = app.resume(paused.id, approver=approve)
    assert done.status == RunStatus.SUCCEEDED
    assert asked == ["tidy › fs/v1/delete_file a.txt"]  # alice's decision stands
    assert sorted(DELETED) == ["a.txt", "p.txt"]  # each ran once
    notes = [s.note for s in app.store.get_run(done.id).steps if s.kind == StepKind.APPROVAL]
    assert notes.count("approve by alice") == 1
