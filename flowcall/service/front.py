"""One front door for the CLI and the UI: the store, the tool registry and the engine, wired.

Neither the CLI nor a Streamlit page talks to a provider, a tool or the database except through this.
"""

from __future__ import annotations

import json
import shlex
import time
import uuid
from dataclasses import dataclass, field
from functools import cached_property, partial
from ipaddress import ip_address
from typing import Any, Callable
from urllib.parse import urlsplit

import httpx
from pydantic import ValidationError

from flowcall.core import artifacts as artifact_codec
from flowcall.core import call_ids, config, nesting
from flowcall.core.errors import ConfigError
from flowcall.core.lookalike import looks_like
from flowcall.core.messages import ToolSpec
from flowcall.core.spec import Flow, HTTPToolSource, MCPServerConfig, load_flow, parse_flow
from flowcall.core.steps import ChatTurn, Run, RunStatus, StepCallback
from flowcall.engine.approval import Approver
from flowcall.engine.loop import Engine
from flowcall.engine.loop_state import LoopState
from flowcall.engine.replay import replay_factory
from flowcall.engine.rerun import checkpoint_before
from flowcall.engine.subflows import SubFlows
from flowcall.providers import provider_for, warming
from flowcall.providers.base import ProviderFactory
from flowcall.providers.profiled import with_profiles
from flowcall.service.models import check_provider, needs_settings, provider_trust_items
from flowcall.service.records import Records
from flowcall.store import Store, open_store
from flowcall.tools import sources as tool_sources
from flowcall.tools import trial
from flowcall.tools.attach import add_server_to_flow
from flowcall.tools.base import Tool, ToolAnnotations
from flowcall.tools.http_guard import ResponseTooLarge, UnsafeRequest, is_internal
from flowcall.tools.registry import ToolRegistry
from flowcall.tools.review import ToolReview, injection_warnings, review
from flowcall.tools.sources.python import package_tools
from flowcall.tools.trial import TrialResult
from flowcall.trust.api_keys import (
    MAX_SECRET_LENGTH,
    SECRET_PREFIX,
    ApiKey,
    check_key_name,
    key_hash,
    new_secret,
    prefix_of,
)
from flowcall.trust.approval_floor import check_approvals_kept
from flowcall.trust.consent import Grants, TrustItem, require_granted, trust_items
from flowcall.trust.packages import PackageOrigin

IMPORTED_SUFFIX = "-imported"


@dataclass
class Adopted:
    """A flow from outside (a file, a run export) as stored: maybe under another name."""

    flow: Flow
    version_id: int
    version: int
    note: str | None = None  # set when it was stored under a new name


RUN_FORMAT = "flowcall.run/v1"


@dataclass
class FlowCall(Records):
    store: Store
    provider_factory: ProviderFactory = provider_for
    last_import_note: str | None = None  # what `import_run` did with a flow whose name was taken
    _versions: dict[int, Flow] = field(default_factory=dict, repr=False)  # flow versions read (flow_of)

    @classmethod
    def open(cls, database_url: str | None = None) -> FlowCall:
        """The service on a database; models get the capabilities their probe measured
        (Models page, `flowcall profiles probe`), which is what `auto` chooses from."""
        from flowcall.store.profiles import get_profile

        store = open_store(database_url)
        return cls(store=store, provider_factory=with_profiles(provider_for, partial(get_profile, store)))

    def seed_examples(self) -> list[str]:
        """On an empty database, save the example flows (they ship inside the package), so the
        studio opens with something to run and `flowcall run commute-weather` works at once."""
        if self.store.list_flows():
            return []
        seeded = []
        for path in sorted(config.EXAMPLE_FLOWS.glob("*.json")):
            try:
                flow = load_flow(path)
            except ConfigError:
                continue  # a broken example must not keep anything from starting
            self.store.save_flow(flow)
            seeded.append(flow.name)
        return seeded

    @cached_property
    def registry(self) -> ToolRegistry:
        return ToolRegistry.from_plugin_dirs(config.plugin_dirs())

    # --- consent (flowcall/trust/consent.py) -------------------------------------------------------
    def require_trust(self, flow: Flow, ref: str | None = None, *, run_id: str | None = None) -> None:
        """Refuse (TrustRequired, a ConfigError) a flow that would start or reach something no
        person on this machine granted; the message lists each item and the command to grant."""
        command = (
            f"flowcall trust --run {run_id[:8]}"
            if run_id
            else f"flowcall trust {shlex.quote(ref or flow.name)}"
        )
        installed = self._package_tools(flow)
        sources = [
            *tool_sources.source_trust_items(flow),
            *self._sub_flow_items(flow),
            *provider_trust_items(flow),  # a provider of an installed package
        ]
        require_granted(flow, self.store, command, installed=installed, sources=sources)  # before fetching
        fetched = self._fetched_documents(flow)
        require_granted(flow, self.store, command, fetched=fetched, installed=installed, sources=sources)

    def trust_status(self, flow: Flow) -> list[tuple[TrustItem, bool]]:
        """Each item the flow would start or reach, and whether it is granted."""
        granted = self.store.granted_keys()
        sources = [
            *tool_sources.source_trust_items(flow),
            *self._sub_flow_items(flow),
            *provider_trust_items(flow),  # a provider of an installed package
        ]
        items = [
            *trust_items(flow, self._package_tools(flow), sources=sources),
            *self._fetched_documents(flow),
        ]
        return [(item, item.key in granted) for item in items]

    def _sub_flow_items(self, flow: Flow) -> list[TrustItem]:
        """What the flow's sub-flows, and theirs, would start or reach (a run of the flow starts
        them), each saying which sub-flow; items the flow itself lists already are left out."""
        from flowcall.tools.sources.flow import sub_flows

        known = {item.key for item in tool_sources.trust_items(flow, self._package_tools(flow))}
        items, seen, todo = [], {flow.name}, list(sub_flows(flow))
        while todo:
            config = todo.pop(0)
            try:
                child = self.store.get_flow(config.flow, config.version)[0]
            except ConfigError:
                continue  # not stored here: the run says so
            if child.name in seen:
                continue
            seen.add(child.name)
            todo += sub_flows(child)
            own = tool_sources.trust_items(child, self._package_tools(child))
            for item in [*own, *self._fetched_documents(child)]:
                if item.key not in known:
                    known.add(item.key)
                    said = f"{item.summary} (sub-flow {child.name})"
                    items.append(TrustItem(item.kind, item.subject, said))
        return items

    def _package_tools(self, flow: Flow) -> dict[str, PackageOrigin]:
        """The flow's tools that installed packages provide, each with its package: consent asks
        for them (trust/packages.py)."""
        return package_tools(self.registry, flow)

    def grant(self, flow: Flow, *, by: str) -> list[TrustItem]:
        """A person grants everything the flow would start or reach; returns what was new."""
        new = [item for item, ok in self.trust_status(flow) if not ok]
        self.store.grant(new, by=by)
        # an OpenAPI URL's content can be fetched only once the URL is granted: bound now
        granted = self.store.granted_keys()
        content = [item for item in self._fetched_documents(flow) if item.key not in granted]
        self.store.grant(content, by=by)
        return new + content

    def _fetched_documents(self, flow: Flow) -> list[TrustItem]:
        """What only fetching tells (the content of each OpenAPI document the flow loads from a
        URL), as fetched now: a grant binds it, and a run loads only granted content. Nothing is
        fetched until all else the flow reaches is granted (the URL, and the allow_hosts the
        fetch's guard lets through). A document that cannot be fetched is left to the run."""
        granted = self.store.granted_keys()
        if any(item.key not in granted for item in tool_sources.trust_items(flow)):
            return []
        return tool_sources.fetched_trust_items(flow)

    # --- flows from outside ---------------------------------------------------------------
    def adopt(self, flow: Flow, *, api_key: str | None = None) -> Adopted:
        """Store a flow that came from outside without ever changing a saved flow: the same
        content as a saved version is that version; a new name is saved as it is; a name taken
        by a different flow gets a new name (`NAME-imported`, `-imported-2`, ...). `api_key`:
        the API key that imports it, kept with a flow it creates (its quota). A source of a kind
        not installed here, or not valid for its kind, is refused (ConfigError), as is a model of
        a provider not installed here."""
        self._check_flow(flow)
        spec_hash = flow.content_hash()
        base = flow.name[: 120 - len(IMPORTED_SUFFIX) - 4]
        for n in range(1, 1000):
            name = flow.name if n == 1 else f"{base}{IMPORTED_SUFFIX}" + ("" if n == 2 else f"-{n - 1}")
            candidate = flow if n == 1 else flow.model_copy(update={"name": name})
            found = self.store.find_version(name, candidate.content_hash() if n > 1 else spec_hash)
            if found is False:
                continue  # a different flow has this name: never add a version to it
            note = (
                (self._look_alike(name) if found is None else None)
                if n == 1
                else (
                    f"a different flow named {flow.name!r} is saved here, so this one is "
                    f"stored as {name!r}; the saved {flow.name!r} is unchanged"
                )
            )
            version_id, version = found or self.store.save_flow(candidate, api_key=api_key)
            return Adopted(candidate, version_id, version, note)
        raise ConfigError(f"too many flows named {flow.name!r}-imported; rename the flow in its file")

    def _engine(
        self,
        sink: Any = None,
        *,
        provider_factory: ProviderFactory | None = None,
        replaying: str | None = None,
    ) -> Engine:
        """The engine for a run recorded in the store (or `sink`), its sub-flows too; `replaying`:
        the recorded run a replay follows, whose sub-flows answer from their own records."""
        return Engine(
            self.registry,
            provider_factory or self.provider_factory,
            sink or self.store,
            self.store,
            subflows=SubFlows(self.store, replaying=replaying),
        )

    def save_flow(self, flow: Flow) -> tuple[int, int]:
        """Save `flow` as a new version of its name (unless unchanged): (version id, version).
        Refused (ConfigError) when a source is not valid for its kind, a sub-flow is not stored
        here, or a sub-flow leads back to the flow (A calls B calls A)."""
        self._check_flow(flow)
        return self.store.save_flow(flow)

    def _check_flow(self, flow: Flow) -> None:
        """What a flow must be to be stored here: each source valid for its installed kind, each
        model's provider installed, each sub-flow stored and not leading back to the flow."""
        from flowcall.tools.sources.flow import check_chain

        tool_sources.validate_sources(flow)
        for model in (flow.decision, flow.polish):
            if model is not None:
                check_provider(model.provider)  # ConfigError naming the ones here

        def stored(name: str, version: int) -> Flow | None:
            try:
                return self.store.get_flow(name, version)[0]
            except ConfigError:
                return None

        check_chain(flow, stored)

    def _look_alike(self, name: str) -> str | None:
        """A note when a new flow's name reads as a saved one's (letter case, width, letters of
        another script that look the same): in a list or a command one is taken for the other."""
        twin = looks_like(name, [saved["name"] for saved in self.store.list_flows()])
        if twin is None:
            return None
        return (
            f"{name!r} looks like the saved flow {twin!r}: the names differ only in letter case, width "
            "or look-alike letters; it is stored as a flow of its own, so check which one you run"
        )

    def run(
        self,
        flow: Flow,
        question: str,
        *,
        on_step: StepCallback | None = None,
        approver: Approver | None = None,
        run_id: str | None = None,
        context: list[ChatTurn] | None = None,
        api_key: str | None = None,
    ) -> Run:
        """Run the flow against its stored version (stored first if new; a flow whose name is
        taken by a different saved flow is stored under a new name, see `adopt`). Without an
        approver, a call that needs a person pauses the run (WAITING_APPROVAL). `api_key`: the
        HTTP API key that starts it, recorded with the run (only that key sees it)."""
        adopted = self.prepare(flow)  # fails before anything is recorded if a tool is missing
        engine = self._engine(self._sink(api_key))
        return engine.run(
            adopted.flow,
            question,
            flow_version_id=adopted.version_id,
            on_step=on_step,
            approver=approver,
            run_id=run_id,
            context=context,
        )

    def warm_up(self, flows: list[Flow], *, on_flow: Callable[[Flow], None] | None = None) -> int:
        """Have the embedded model read, once, what every run of these flows begins with: the
        decision's prompt and tools and the relevance questions before the user's words. The
        local provider keeps those states in its prompt cache on disk, so the first real run
        reads only the question. Nothing is executed or stored. Returns how many flows were read:
        those that decide with the embedded model on plugin tools only."""
        from flowcall.core.steps import MemorySink

        engine = Engine(self.registry, self.provider_factory, MemorySink())
        with warming.warming():  # the studio says runs are slower until this is done
            return self._warm(engine, flows, on_flow)

    def prompt_cache_warming(self) -> bool:
        """Is the embedded model's prompt cache being warmed now (by `warm_up`, in any process)?"""
        return warming.in_progress()

    def _warm(self, engine: Engine, flows: list[Flow], on_flow: Callable[[Flow], None] | None) -> int:
        done = 0
        for flow in flows:
            if flow.decision.provider != "local" or flow.mcp_servers or flow.http_tools or flow.sources:
                continue
            if on_flow:
                on_flow(flow)
            messages = LoopState.fresh(flow, "?").messages
            tools = [tool.spec() for tool in self.registry.resolve(flow.plugin_refs())]
            engine.decide_only(flow, messages, tools, label=f"warm-up {flow.name}")
            done += 1
        return done

    # --- a run recorded first, executed later by its id (experiments; later, workers) ----------
    def prepare(self, flow: Flow) -> Adopted:
        """Check that `flow` can run here (its plugin tools exist; what it starts or reaches is
        granted) and store it, as `run` does: the flow version its runs will point at."""
        self.registry.resolve(flow.plugin_refs())
        tool_sources.validate_sources(flow)  # an unknown kind is said before consent lists anything
        self.require_trust(flow)
        return self.adopt(flow)

    def check_settings(self, flow: Flow) -> None:
        """NotConfigured, naming the variable to set, where a hosted model of the flow lacks its
        key or base URL: asked before a run is recorded and handed over, so a missing setting
        leaves no failed run behind; ConfigError for a provider not installed here. The embedded
        model needs none (a missing model file is the run's to record, as in `run`)."""
        for model in (flow.decision, flow.polish):
            if model is not None and needs_settings(
                model.provider, package_granted=self._package_granted(flow)
            ):
                self.provider_factory(model)

    def _package_granted(self, flow: Flow) -> bool:
        """Is every installed provider the flow's models name granted (their modules may load)?"""
        granted = self.store.granted_keys()
        return all(item.key in granted for item in provider_trust_items(flow))

    def submit(
        self,
        adopted: Adopted,
        question: str,
        *,
        api_key: str | None = None,
        run_id: str | None = None,
        context: list[ChatTurn] | None = None,
    ) -> Run:
        """Record a run of a prepared flow on `question` without running it (status queued).
        `execute` runs it given only its id, in this process or, later, in a worker's.
        `api_key`, `run_id` and `context` as in `run`."""
        return self.submit_many(adopted, [question], api_key=api_key, run_id=run_id, context=context)[0]

    def submit_many(
        self,
        adopted: Adopted,
        questions: list[str],
        *,
        api_key: str | None = None,
        run_id: str | None = None,
        context: list[ChatTurn] | None = None,
    ) -> list[Run]:
        """`submit` for many questions (an experiment's items), recorded in one transaction;
        `api_key` and `context` as in `run`; `run_id` only for a single question."""
        runs = [
            Run(
                id=run_id or str(uuid.uuid4()),
                flow_name=adopted.flow.name,
                flow_version_id=adopted.version_id,
                question=question,
                context=context or [],
                trace_id=uuid.uuid4().hex,
                status=RunStatus.QUEUED,
            )
            for question in questions
        ]
        self.store.queue_runs(runs, api_key=api_key)
        return runs

    def execute(
        self,
        run_id: str,
        *,
        tools: list[ToolSpec] | None = None,
        approver: Approver | None = None,
        on_step: StepCallback | None = None,
    ) -> Run:
        """Run a queued run: claim it (so it runs once, whoever else asks), then run its flow
        version from the question. With `tools`, only its decision model is asked, once, with
        those tool definitions instead of the flow's, and nothing is executed (a dataset item
        that brings its own tools, e.g. one imported from BFCL). A missing API key raises
        NotConfigured and leaves the run queued."""
        run = self.store.get_run(run_id)
        if run.status != RunStatus.QUEUED:
            raise ConfigError(
                f"run {run.id} is {run.status}, not queued; only a queued run is executed "
                f"(see `flowcall runs show {run.id[:8]}`)"
            )
        flow = self.flow_of(run)
        self.require_trust(flow, run_id=run.id)
        engine = self._engine()
        if tools is None:  # a re-run goes on from where it was cut; any other queued run has no state
            checkpoint = self.store.get_checkpoint(run.id)
            return engine.resume(run, flow, checkpoint, approver=approver, on_step=on_step)
        if flow.tool_choice not in ("auto", "required", "none") and flow.tool_choice not in {
            t.name for t in tools
        }:
            flow = flow.model_copy(update={"tool_choice": "auto"})  # it names one of the flow's own tools
        return engine.decide_only(
            flow, LoopState.fresh(flow, run.question, run.context).messages, tools, run=run
        )[0]

    def follow(
        self,
        run_id: str,
        *,
        on_step: StepCallback | None = None,
        poll_s: float = 0.2,
        timeout_s: float | None = None,
    ) -> Run:
        """Watch a run that a worker executes, from the database: each new step to `on_step` as it
        is committed, until the run ends or waits for a person (an interrupted run is waited for:
        its task goes to another worker). On `timeout_s`, the run as it is then."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        seen = 0
        while True:
            run = self.store.get_run(run_id)
            for step in run.steps[seen:]:
                if on_step:
                    on_step(step)
            seen = len(run.steps)
            waiting = run.status in (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.INTERRUPTED)
            if not waiting or (deadline is not None and time.monotonic() >= deadline):
                return run
            time.sleep(poll_s)

    def resume(self, run_id: str, *, approver: Approver | None, on_step: StepCallback | None = None) -> Run:
        """Go on with a run that waits for approval or was interrupted (its process died), from
        its last committed step; its state is in the database, so this works after a restart.

        Exactly once: the engine claims the run in the database before anything runs, so of two
        resumers (CLI and studio, two tabs) one goes on and the other gets a ConfigError."""
        # The run (its steps) is read before its state: the claim checks the step count, so a
        # state saved by a newer pause than these steps is never resumed (the claim fails).
        run = self.store.get_run(run_id)
        parent = self.store.find_run(run.parent_run_id) if run.parent_run_id else None
        if parent is not None and parent.status in (RunStatus.WAITING_APPROVAL, RunStatus.INTERRUPTED):
            # a sub-flow's run goes on through its parent's call, which then goes on with the answer
            return self.resume(parent.id, approver=approver, on_step=on_step)
        checkpoint = self.store.get_checkpoint(run.id)
        flow = self.flow_of(run)
        self.require_trust(flow, run_id=run.id)  # a refusal leaves the run waiting: nothing is claimed yet
        engine = self._engine()
        return engine.resume(run, flow, checkpoint, approver=approver, on_step=on_step)

    def cancel(self, run_id: str, *, by: str = "a person") -> Run:
        """Cancel a run that is running (its process stops at its next step), waits for
        approval or was interrupted. A run that ended is left as it is (ConfigError). The runs
        its sub-flow calls started and that have not ended are cancelled with it."""
        cancelled = self.store.cancel(run_id, by=by)
        for child in self.store.child_runs(cancelled.id):
            if child.status not in (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED):
                try:
                    self.cancel(child.id, by=by)
                except ConfigError:
                    pass  # it ended meanwhile
        return cancelled

    def flow_of(self, run: Run) -> Flow:
        """The flow version a run ran (kept once read: a stored version never changes)."""
        if run.flow_version_id is None:
            raise ConfigError(
                f"run {run.id[:8]} has no flow version (its flow was deleted); import the flow again"
            )
        if run.flow_version_id not in self._versions:
            self._versions[run.flow_version_id] = self.store.get_flow_version(run.flow_version_id)
        return self._versions[run.flow_version_id]

    def rerun_from(
        self,
        run_id: str,
        seq: int,
        *,
        on_step: StepCallback | None = None,
        approver: Approver | None = None,
        **edits: Any,
    ) -> Run:
        """A new run that reuses a run's steps before `seq` and goes on live from there, with
        `edits` as `queue_rerun` takes them (edited arguments, or an edited system prompt saved
        as a new flow version, so the new run says which prompt it ran); then `execute`."""
        new = self.queue_rerun(run_id, seq, **edits)
        for step in new.steps if on_step else ():
            on_step(step)
        return self.execute(new.id, approver=approver, on_step=on_step)

    def queue_rerun(
        self,
        run_id: str,
        seq: int,
        *,
        arguments: dict[str, Any] | None = None,
        decision_prompt: str | None = None,
        polish_prompt: str | None = None,
    ) -> Run:
        """Record the re-run `rerun_from` describes without running it: queued, with the steps
        it reuses (marked so) and the state they lead to. `execute` (or a runner, or a worker)
        goes on from there given only its id."""
        original = self.store.get_run(run_id)
        flow = self._edited(self.flow_of(original), decision_prompt, polish_prompt)
        state, reused = checkpoint_before(original, flow, seq, arguments)
        saved = self.store.artifacts_before(original.id, reused[-1].seq + 1 if reused else 1)
        if saved:  # the hidden context (a loaded table) as it was at the cut
            state.artifacts = artifact_codec.decode(saved)
        self.registry.resolve(flow.plugin_refs())
        self.require_trust(flow, run_id=original.id)
        version_id, _ = self.store.save_flow(flow)
        run = Run(
            id=str(uuid.uuid4()),
            flow_name=flow.name,
            flow_version_id=version_id,
            question=original.question,
            context=original.context,
            trace_id=uuid.uuid4().hex,
        )
        run.steps = [
            step.model_copy(update={"run_id": run.id, "trace_id": run.trace_id, "seq": n})
            for n, step in enumerate(reused, start=1)
        ]
        self.store.queue_rerun(run, run.steps, state.checkpoint())
        return run

    @staticmethod
    def _edited(flow: Flow, decision_prompt: str | None, polish_prompt: str | None) -> Flow:
        """The flow with an edited decision or polish system prompt."""
        if decision_prompt is not None:
            flow = flow.model_copy(
                update={"decision": flow.decision.model_copy(update={"system_prompt": decision_prompt})}
            )
        if polish_prompt is not None:
            if flow.polish is None:
                raise ConfigError(f"flow {flow.name!r} has no polish model whose prompt could change")
            flow = flow.model_copy(
                update={"polish": flow.polish.model_copy(update={"system_prompt": polish_prompt})}
            )
        return flow

    def export_run(self, run_id: str) -> dict[str, Any]:
        """A run with its steps and the flow version it ran: enough to import it elsewhere."""
        run = self.store.get_run(run_id)
        flow = self.flow_of(run) if run.flow_version_id is not None else None
        return {
            "format": RUN_FORMAT,
            "run": run.model_dump(mode="json"),
            "flow": flow.model_dump(mode="json") if flow else None,
        }

    def import_run(self, data: dict[str, Any] | str, *, source: str = "run file") -> Run:
        """Store an exported run (and its flow version); an invalid file changes nothing."""
        if isinstance(data, str):
            try:
                data = nesting.loads(data, source, nesting.RUN_DEPTH)
            except json.JSONDecodeError as exc:
                raise ConfigError(
                    f"{source} is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
                )
        else:
            nesting.check_depth(data, source, nesting.RUN_DEPTH)
        if not isinstance(data, dict) or data.get("format") != RUN_FORMAT or "run" not in data:
            raise ConfigError(
                f'{source} is not a FlowCall run export: it needs "format": "{RUN_FORMAT}" and a '
                '"run" (export one from the inspector or with `flowcall runs export ID`)'
            )
        try:
            run = Run.model_validate(data["run"])
            flow = parse_flow(data["flow"], source=f"{source} (its flow)") if data.get("flow") else None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(top level)"
            raise ConfigError(f"{source} holds an invalid run at run.{where}: {first['msg']}") from exc
        run = call_ids.imported(run, source)  # one call, one id: a decision binds one call
        self.store.check_import(run, source)  # before the flow is adopted: a refused file stores nothing
        adopted = self.adopt(flow) if flow else None
        update: dict[str, Any] = {"flow_version_id": adopted.version_id if adopted else None}
        if adopted and adopted.flow.name != flow.name:
            update["flow_name"] = adopted.flow.name
        imported = self.store.import_run(run.model_copy(update=update))
        self.last_import_note = adopted.note if adopted else None
        return imported

    def replay(self, run_id: str, *, on_step: StepCallback | None = None) -> tuple[Run, Run]:
        """Run a recorded run again with its models' recorded answers: (original, replay)."""
        original = self.store.get_run(run_id)
        flow = self.flow_of(original)
        self.require_trust(flow, run_id=original.id)
        engine = self._engine(provider_factory=replay_factory(original), replaying=original.id)
        replayed = engine.run(
            flow,
            original.question,
            flow_version_id=original.flow_version_id,
            on_step=on_step,
            context=original.context,
        )
        return original, replayed

    # --- datasets, experiments and model profiles: the store's records, for the pages and the CLI
    def datasets(self) -> list[dict[str, Any]]:
        from flowcall.store.datasets import list_datasets

        return list_datasets(self.store)

    def dataset(self, name: str, version: int | None = None) -> Any:
        from flowcall.store.datasets import get_dataset

        return get_dataset(self.store, name, version)

    def save_dataset(self, name: str, items: list[Any], source: str) -> Any:
        """A new version of dataset `name` unless its items equal the latest (store.datasets.Saved)."""
        from flowcall.store.datasets import save_dataset

        return save_dataset(self.store, name, items, source)

    def experiments(self, limit: int = 50) -> list[Any]:
        from flowcall.store.experiments import list_experiments

        return list_experiments(self.store, limit)

    def experiment(self, experiment_id: int | str) -> Any:
        from flowcall.store.experiments import get_experiment

        return get_experiment(self.store, experiment_id)

    def experiment_runs(self, experiment_id: int) -> dict[str, Any]:
        """Each run of an experiment by id: its question, answer, error and status."""
        from flowcall.store.experiments import run_texts

        return run_texts(self.store, experiment_id)

    def experiment_running_item(self, experiment_id: int) -> tuple[int, int, str] | None:
        """The item a worker runs now: (position, attempt, question)."""
        from flowcall.store.experiments import running_item

        return running_item(self.store, experiment_id)

    def model_profiles(self) -> list[Any]:
        """The stored capability profiles, newest first."""
        from flowcall.store.profiles import list_profiles

        return list_profiles(self.store)

    def probe_model(
        self,
        model: Any,
        *,
        timeout_s: float = 120.0,
        on_check: Callable[[Any], None] | None = None,
        store: bool = True,
    ) -> Any:
        """Measure what a model really does (probe.py) and, when anything was learned and
        `store`, keep the profile that `auto` picks its calling way from."""
        from flowcall.service.probe import probe
        from flowcall.store.profiles import save_profile

        profile = probe(model, self.provider_factory, timeout_s=timeout_s, on_check=on_check)
        if store and profile.learned_anything():
            save_profile(self.store, profile)
        return profile

    # --- keys to the HTTP API (flowcall/trust/api_keys.py): made here, only their hashes stored ------
    def create_key(self, name: str, flows: list[str] | None = None) -> tuple[ApiKey, str]:
        """A new key named `name`, for the saved flows `flows` (None: every flow): (the record,
        the key). The key is stored only as its hash, so this is the one time it can be shown."""
        from flowcall.store.api_keys import add_key

        check_key_name(name)
        chosen = None if flows is None else self._key_flows(flows)
        secret = new_secret()
        return add_key(self.store, name, prefix_of(secret), key_hash(secret), chosen), secret

    def _key_flows(self, flows: list[str]) -> list[str]:
        chosen = list(dict.fromkeys(name.strip() for name in flows if name.strip()))
        if not chosen:
            raise ConfigError(
                "the list of flows for the key is empty; name at least one saved flow, "
                "or give none for a key that may call every flow"
            )
        saved = {flow["name"] for flow in self.store.list_flows()}
        unknown = [name for name in chosen if name not in saved]
        if unknown:
            raise ConfigError(
                f"no saved flow named {', '.join(map(repr, unknown))}; a key can be limited to saved "
                f"flows only ({', '.join(sorted(saved)) or 'none saved yet'}); import a flow with "
                "`flowcall flows import FILE`"
            )
        return chosen

    def list_keys(self) -> list[ApiKey]:
        """Every key, revoked ones too, oldest first; never a key itself or its hash."""
        from flowcall.store.api_keys import list_keys

        return list_keys(self.store)

    def revoke_key(self, name_or_prefix: str) -> list[ApiKey]:
        """Revoke the key with this name or prefix (as listed): it stops working at once.
        ConfigError (NotFoundError) when no key in use matches."""
        from flowcall.store.api_keys import revoke_keys

        return revoke_keys(self.store, name_or_prefix)

    def check_key(self, secret: str) -> ApiKey | None:
        """The key a request sent, if it is one not revoked; else None. It is looked up by its
        hash, so the time taken says nothing about how much of a stored key it matched."""
        from flowcall.store.api_keys import find_key

        if (
            not isinstance(secret, str)
            or len(secret) > MAX_SECRET_LENGTH
            or not secret.startswith(SECRET_PREFIX)
        ):
            return None
        found = find_key(self.store, key_hash(secret))
        return found if found is not None and found.active else None

    # --- what a key owns (flowcall/store/key_owned.py): its runs, the flows it imported ----------
    def _sink(self, api_key: str | None) -> Any:
        """Where a run's records go: the store, recording the API key that started the run."""
        from flowcall.store.key_owned import KeyedSink

        return self.store if api_key is None else KeyedSink(self.store, api_key)

    def import_for_key(self, flow: Flow, api_key: str | None) -> Adopted:
        """`adopt` for a flow that comes through the HTTP API: refused (ApprovalsLowered) when
        it would call, without asking, a tool that a saved flow asks a person about."""
        check_approvals_kept(flow, self.store.latest_flows())
        return self.adopt(flow, api_key=api_key)

    def stored_by_key(self, api_key: str) -> tuple[int, int]:
        """(runs, flows) stored now that the API key started or imported."""
        from flowcall.store.key_owned import stored_by_key

        return stored_by_key(self.store, api_key)

    # --- tools, for the pages and the CLI: a registered one tried, a server attached to a flow -
    def try_tool(self, ref: str, arguments: dict[str, Any]) -> TrialResult:
        """Run a registered tool once, outside any run (the Plugins page's "Try it"); nothing is
        recorded. An unknown reference raises ConfigError; the tool's own failure is a result."""
        return trial.try_tool(self.registry, ref, arguments)

    def attach_server(
        self, flow_name: str, server: MCPServerConfig, tools: list[Tool]
    ) -> tuple[int, list[str]]:
        """Save the latest version of `flow_name` with the MCP server and these of its tools:
        (the new version, the tools left out because the flow has a tool of that name)."""
        return add_server_to_flow(self.store, flow_name, server, tools)


# --- tools from outside, for the pages and the CLI: listed, reviewed, tried ---------------------
# They need neither the store nor the registry, so they are functions: `flowcall mcp tools`
# opens no database.

# what loading an HTTP source's document or starting an MCP server may fail with; the studio
# says it to the person as it is
SOURCE_ERRORS: tuple[type[Exception], ...] = (
    ConfigError,
    UnsafeRequest,
    ResponseTooLarge,
    httpx.HTTPError,
    OSError,
)


def review_tool(tool: Tool) -> ToolReview:
    """What a tool costs the decision model in tokens, and what in its description speaks to the model."""
    return review(tool)


def description_warnings(tool: Tool) -> list[str]:
    """What in a tool's description speaks to the model (review_tool's warnings, no token count)."""
    return injection_warnings(tool)


def mcp_server(name: str, command_line: str = "", url: str = "") -> MCPServerConfig:
    """An MCP server from a form: a one-line stdio command (shell quoting allowed) or a URL."""
    return trial.server_config(name, command_line, url)


@dataclass(frozen=True)
class SourceKindInfo:
    """A kind of tool source, as the studio offers it: its name (the middle of `<source>/<kind>/<tool>`),
    its label, its config's JSON Schema, how its fields are shown, where a flow lists its sources
    (a Flow field, or "sources"), and the installed package it comes from (None: built in)."""

    kind: str
    label: str
    schema: dict[str, Any]
    fields: dict[str, Any]
    flow_field: str
    package: str | None = None


def source_kinds() -> list[SourceKindInfo]:
    """Every kind of tool source a flow can list here: the built-in ones, then installed packages'."""
    installed = tool_sources.installed_kinds()
    return [
        SourceKindInfo(
            kind=name,
            label=kind.label,
            schema=kind.config_model.model_json_schema(),
            fields=dict(kind.form_fields()),
            flow_field=tool_sources.flow_field(kind),
            package=installed[name].package if name in installed else None,
        )
        for name, kind in tool_sources.kinds().items()
    ]


def source_config(kind: str, data: dict[str, Any]) -> Any:
    """A source of `kind` from its JSON, checked by the kind's config model; ConfigError naming
    the field and what is wrong (an unknown kind: what to install)."""
    model = tool_sources.kind_of(kind).config_model
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'source'}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"the source is not valid: {problems}") from None


def source_ungranted(grants: Grants, kind: str, config: Any) -> list[TrustItem]:
    """What loading the source (a flow attaching only it) would need that nobody here granted,
    each item saying what changed when the same thing was granted before otherwise."""
    from flowcall.trust.consent import TrustRequired

    probe = tool_sources.probe_flow(kind, config)
    try:
        require_granted(probe, grants, "the consent panel", sources=tool_sources.source_trust_items(probe))
    except TrustRequired as exc:
        return exc.items
    return []


def source_tools(
    kind: str,
    config: Any,
    grants: Grants | None = None,
    *,
    describe_flow: Callable[[str, int], str] | None = None,
) -> list[Tool]:
    """A source's tools, to show: loaded through its kind (a server started) and closed again.
    `grants` (the studio's store): it loads only as a run would (a stdio server's command checked
    again at its start, an installed kind's package granted). `describe_flow`: a saved flow's
    description (FlowCall.flow_description), which a sub-flow's tool shows as the model reads it."""
    from flowcall.tools.sources.flow import DESCRIBE_FLOW

    services = {DESCRIBE_FLOW: describe_flow} if describe_flow is not None else None
    return trial.source_tools(kind, config, grants, services)


def try_source_tool(
    kind: str, config: Any, name: str, arguments: dict[str, Any], grants: Grants | None = None
) -> TrialResult:
    """Load the source, call one of its tools by name with the kind's call timeout, close it."""
    return trial.try_source_tool(kind, config, name, arguments, grants)


def server_tools(server: MCPServerConfig, grants: Grants | None = None) -> list[Tool]:
    """An MCP server's tools (all pages), to show: `source_tools` of kind "mcp"."""
    return source_tools("mcp", server, grants)


def try_server_tool(
    server: MCPServerConfig, name: str, arguments: dict[str, Any], grants: Grants | None = None
) -> TrialResult:
    """Start the server, call one of its tools by name, stop the server: `try_source_tool` of kind "mcp"."""
    return try_source_tool("mcp", server, name, arguments, grants)


def internal_hosts(source: HTTPToolSource) -> list[str]:
    """The hosts of the source's document URL and base URL that are this machine or a private
    network (an address or "localhost"; a name is not looked up before a grant) and that its
    allow_hosts leaves out: the guard would refuse them, so the consent panel offers them."""
    allowed = {host.lower() for host in source.allow_hosts}
    found = []
    for url in (source.openapi, source.base_url or ""):
        if not url.lower().startswith(("http://", "https://")):
            continue
        host = (urlsplit(url).hostname or "").lower()
        try:
            internal = host == "localhost" or is_internal(ip_address(host))
        except ValueError:  # a name: only its lookup could tell
            internal = False
        if internal and host not in allowed and host not in found:
            found.append(host)
    return found


def listed_tool(entry: dict[str, Any]) -> Tool:
    """A tool as a source listed it (studio_sources.source_tools), to show like any other: its
    description, annotations and cost are the server's word, checked as a plugin's are."""
    hints = entry.get("annotations") or {}
    return Tool(
        name=entry["name"],
        version=entry["ref"],
        description=entry.get("description") or "",
        parameters=entry.get("parameters") or {},
        func=lambda **_: None,
        source=entry.get("kind", "mcp"),
        annotations=ToolAnnotations(
            read_only=bool(hints.get("read_only")),
            destructive=bool(hints.get("destructive")),
            open_world=bool(hints.get("open_world")),
        ),
    )
