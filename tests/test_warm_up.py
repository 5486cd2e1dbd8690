"""`flowcall model warm`: the embedded model reads each flow's fixed prompts once, nothing is
run or recorded (scripted model; the prompt cache itself: tests/providers/test_prefix_cache.py)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from flowcall.cli.main import cli
from flowcall.core.spec import load_flow
from flowcall.providers.base import Capabilities
from flowcall.providers.scripted import ScriptedProvider
from flowcall.service.front import FlowCall
from flowcall.store import open_store

FLOWS = Path(__file__).resolve().parents[1] / "flows"


def scripted_service(provider: ScriptedProvider) -> FlowCall:
    return FlowCall(store=open_store(), provider_factory=lambda config: provider)


def test_warm_up_reads_each_flows_prompt_and_records_nothing():
    provider = ScriptedProvider(
        ['{"answer": "?"}'] * 4, capabilities=Capabilities(json_schema_output=True, grammar=True)
    )
    service = scripted_service(provider)
    task, remote = load_flow(FLOWS / "create_task.json"), load_flow(FLOWS / "current_time.json")
    remote = remote.model_copy(
        update={"decision": remote.decision.model_copy(update={"provider": "openai", "model": "gpt-4o-mini"})}
    )
    assert service.warm_up([task, remote]) == 1  # a remote model has no prompt cache to fill
    asked = provider.requests[0]
    assert (
        asked.messages[-1].content == "?" and "add_task" in asked.model_dump_json()
    )  # the prompt way lists it in text
    assert "{{today}}" not in asked.messages[0].content  # the prompt as a run fills it, so its prefix matches
    assert service.store.list_runs() == []


def test_model_warm_reads_the_example_flows_by_default():
    provider = ScriptedProvider(
        ['{"answer": "?"}'] * 20, capabilities=Capabilities(json_schema_output=True, grammar=True)
    )
    result = CliRunner().invoke(cli, ["model", "warm"], obj={"service": scripted_service(provider)})
    assert result.exit_code == 0, result.output
    assert f"read the fixed prompts of {len(list(FLOWS.glob('*.json')))} flow(s)" in result.output


def test_while_the_cache_is_warmed_the_studio_says_runs_are_slower(tmp_path, monkeypatch):
    """`warm_up` says it is at work for as long as it works (start.sh runs it in the background
    while the studio starts); the Models page and the Run page then say runs are slower; a
    marker left by a process that died says nothing."""
    import os

    from flowcall.providers import warming
    from tests.test_studio import page, shown

    monkeypatch.setenv("FLOWCALL_HOME", str(tmp_path))
    seen = []
    service = scripted_service(ScriptedProvider(['{"answer": "?"}'] * 4))
    service.warm_up(
        [load_flow(FLOWS / "create_task.json")], on_flow=lambda f: seen.append(warming.in_progress())
    )
    assert seen == [True] and not warming.in_progress() and not warming.marker().exists()

    warming.marker().parent.mkdir(parents=True, exist_ok=True)
    warming.marker().write_text(str(os.getpid()))  # this process warms, as start.sh's does
    models = page("pages/models.py")
    assert any("prompt cache is being warmed" in shown(i.value) for i in models.info)
    run = page("pages/run.py")
    assert any("prompt cache is being warmed" in shown(c.value) for c in run.caption)

    warming.marker().write_text("999999999")  # left by a process that is gone
    assert not warming.in_progress()
    assert not any("prompt cache is being warmed" in shown(i.value) for i in page("pages/models.py").info)
