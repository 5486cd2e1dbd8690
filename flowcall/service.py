"""One front door for the CLI and the UI: the store, the tool registry and the engine, wired.

Neither the CLI nor a Streamlit page talks to a provider or the database except through this.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from flowcall import config
from flowcall.approval import Approver
from flowcall.engine import Engine, ProviderFactory, StepCallback
from flowcall.errors import ConfigError
from flowcall.providers import provider_for
from flowcall.replay import replay_factory
from flowcall.spec import Flow
from flowcall.steps import Run
from flowcall.store import Store, open_store
from flowcall.tools.registry import ToolRegistry


@dataclass
class FlowCall:
    store: Store
    provider_factory: ProviderFactory = provider_for

    @classmethod
    def open(cls, database_url: str | None = None) -> FlowCall:
        return cls(store=open_store(database_url))

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
        if run.flow_version_id is None:
            raise ConfigError(f"run {run.id} has no flow version to resume (its flow was deleted)")
        flow = self.store.get_flow_version(run.flow_version_id)
        engine = Engine(self.registry, self.provider_factory, self.store)
        return engine.resume(run, flow, checkpoint, approver=approver, on_step=on_step)

    def replay(self, run_id: str, *, on_step: StepCallback | None = None) -> tuple[Run, Run]:
        """Run a recorded run again with its models' recorded answers: (original, replay)."""
        original = self.store.get_run(run_id)
        if original.flow_version_id is None:
            raise ConfigError(f"run {original.id} has no flow version to replay (its flow was deleted)")
        flow = self.store.get_flow_version(original.flow_version_id)
        engine = Engine(self.registry, replay_factory(original), self.store)
        replayed = engine.run(flow, original.question, flow_version_id=original.flow_version_id, on_step=on_step)
        return original, replayed
