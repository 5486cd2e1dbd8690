"""One front door for the CLI and the UI: the store, the tool registry and the engine, wired.

Neither the CLI nor a Streamlit page talks to a provider or the database except through this.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pydantic import ValidationError

from flowcall import config
from flowcall.approval import Approver
from flowcall.engine import Engine, ProviderFactory, StepCallback
from flowcall.errors import ConfigError
from flowcall.providers import provider_for
from flowcall.providers.profiled import with_profiles
from flowcall.replay import replay_factory
from flowcall.rerun import checkpoint_before
from flowcall.spec import Flow, parse_flow
from flowcall.steps import Run
from flowcall.store import Store, open_store
from flowcall.tools.registry import ToolRegistry

RUN_FORMAT = "flowcall.run/v1"


@dataclass
class FlowCall:
    store: Store
    provider_factory: ProviderFactory = provider_for

    @classmethod
    def open(cls, database_url: str | None = None) -> FlowCall:
        """The service on a database; models get the capabilities their probe measured
        (Models page, `flowcall models probe`), which is what `auto` chooses from."""
        store = open_store(database_url)
        return cls(store=store, provider_factory=with_profiles(provider_for, store))

    @cached_property
    def registry(self) -> ToolRegistry:
        return ToolRegistry.from_plugin_dirs(config.plugin_dirs())

    def run(self, flow: Flow, question: str, *, on_step: StepCallback | None = None,
            approver: Approver | None = None) -> Run:
        """Save the flow (a new version only if it changed), then run it against that version.
        Without an approver, a call that needs a person pauses the run (WAITING_APPROVAL)."""
        self.registry.resolve(flow.plugin_refs())  # fail before anything is recorded if a tool is missing
        version_id, _ = self.store.save_flow(flow)
        engine = Engine(self.registry, self.provider_factory, self.store)
        return engine.run(flow, question, flow_version_id=version_id, on_step=on_step, approver=approver)

    def resume(self, run_id: str, *, approver: Approver | None, on_step: StepCallback | None = None) -> Run:
        """Go on with a run that waits for approval (also after a restart: its state is stored)."""
        run = self.store.get_run(run_id)
        checkpoint = self.store.get_checkpoint(run.id)
        flow = self.flow_of(run)
        engine = Engine(self.registry, self.provider_factory, self.store)
        return engine.resume(run, flow, checkpoint, approver=approver, on_step=on_step)

    def flow_of(self, run: Run) -> Flow:
        """The flow version a run ran."""
        if run.flow_version_id is None:
            raise ConfigError(f"run {run.id[:8]} has no flow version (its flow was deleted); import the flow again")
        return self.store.get_flow_version(run.flow_version_id)

    def rerun_from(self, run_id: str, seq: int, *, arguments: dict[str, Any] | None = None,
                   decision_prompt: str | None = None, polish_prompt: str | None = None,
                   on_step: StepCallback | None = None, approver: Approver | None = None) -> Run:
        """A new run that reuses a run's steps before `seq` and goes on live from there, with
        edited arguments (a tool_call step) or an edited system prompt (saved as a new flow
        version, so the new run says which prompt it ran)."""
        original = self.store.get_run(run_id)
        flow = self.flow_of(original)
        if decision_prompt is not None:
            flow = flow.model_copy(update={"decision": flow.decision.model_copy(update={"system_prompt": decision_prompt})})
        if polish_prompt is not None:
            if flow.polish is None:
                raise ConfigError(f"flow {flow.name!r} has no polish model whose prompt could change")
            flow = flow.model_copy(update={"polish": flow.polish.model_copy(update={"system_prompt": polish_prompt})})
        checkpoint, reused = checkpoint_before(original, flow, seq, arguments)
        self.registry.resolve(flow.plugin_refs())
        version_id, _ = self.store.save_flow(flow)
        engine = Engine(self.registry, self.provider_factory, self.store)
        return engine.continue_from(flow, original.question, checkpoint, reused, flow_version_id=version_id,
                                    on_step=on_step, approver=approver)

    def export_run(self, run_id: str) -> dict[str, Any]:
        """A run with its steps and the flow version it ran: enough to import it elsewhere."""
        run = self.store.get_run(run_id)
        flow = self.flow_of(run) if run.flow_version_id is not None else None
        return {"format": RUN_FORMAT, "run": run.model_dump(mode="json"),
                "flow": flow.model_dump(mode="json") if flow else None}

    def import_run(self, data: dict[str, Any] | str, *, source: str = "run file") -> Run:
        """Store an exported run (and its flow version); an invalid file changes nothing."""
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{source} is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}")
        if not isinstance(data, dict) or data.get("format") != RUN_FORMAT or "run" not in data:
            raise ConfigError(f"{source} is not a FlowCall run export: it needs \"format\": \"{RUN_FORMAT}\" and a "
                              "\"run\" (export one from the inspector or with `flowcall runs export ID`)")
        try:
            run = Run.model_validate(data["run"])
            flow = parse_flow(data["flow"], source=f"{source} (its flow)") if data.get("flow") else None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(top level)"
            raise ConfigError(f"{source} holds an invalid run at run.{where}: {first['msg']}") from exc
        version_id = self.store.save_flow(flow)[0] if flow else None
        return self.store.import_run(run.model_copy(update={"flow_version_id": version_id}))

    def replay(self, run_id: str, *, on_step: StepCallback | None = None) -> tuple[Run, Run]:
        """Run a recorded run again with its models' recorded answers: (original, replay)."""
        original = self.store.get_run(run_id)
        flow = self.flow_of(original)
        engine = Engine(self.registry, replay_factory(original), self.store)
        replayed = engine.run(flow, original.question, flow_version_id=original.flow_version_id, on_step=on_step)
        return original, replayed
