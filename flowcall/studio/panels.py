"""The settings of each node of a flow, as the Flows page shows them beside the canvas (one
node at a time) and in its form view (all of them). Each panel reads a node of the draft canvas
and returns what the person set; the checks are the flow's own, told in plain sentences."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import jsonschema
import streamlit as st
from pydantic import ValidationError

from flowcall.core.config import model_label
from flowcall.core.plain_errors import plain_errors
from flowcall.core.schemas import ref_problem
from flowcall.core.spec import DecisionConfig, Flow, PolishConfig
from flowcall.service import models
from flowcall.service.front import FlowCall, review_tool
from flowcall.studio.flowgraph import CanvasNode, CanvasState, bare_name, tool_source
from flowcall.studio.shared import as_json, md

if TYPE_CHECKING:
    from flowcall.tools.base import Tool

WAYS = ["schema", "native", "prompt", "auto", "router"]
WAY_HELP = (
    "schema: the model answers in a fixed JSON format (best on small models); native: the provider's "
    "own tool calls; prompt: tools described in the prompt; auto: try them in the model's best order; "
    "router: rules you write pick the tool"
)
OTHER = "Other…"


def model_options(app: FlowCall, provider: str, current: str) -> list[str]:
    """The models to pick from for a provider: the embedded one for local; for a remote
    provider, those probed here (Models page) and the usual ones; the current one always."""
    probed = [p.model for p in app.model_profiles() if p.provider == provider]
    suggested = models.suggested_models(provider)  # the provider's own (its ProviderInfo)
    return list(dict.fromkeys([current, *suggested, *probed] if current else [*suggested, *probed]))


def model_fields(app: FlowCall, config: dict[str, Any], key: str) -> dict[str, Any]:
    """Provider, model (a picker, or a free entry) and base URL: the fields both models share."""
    providers = list(dict.fromkeys([*models.provider_names(), config.get("provider", "local")]))
    provider = st.selectbox(
        "Provider", providers, index=providers.index(config.get("provider", "local")), key=key + "provider"
    )
    current = config.get("model", "") if provider == config.get("provider") else ""
    options = [*model_options(app, provider, current), OTHER]
    chosen = st.selectbox(
        "Model",
        options,
        index=0,
        key=key + f"model:{provider}",
        help="Pick a model this provider offers, or Other… to type a name",
    )
    model = st.text_input("Model name", current, key=key + "model_free") if chosen == OTHER else chosen
    if provider == "local":
        st.caption(
            md(
                f"Runs the built-in model on this computer ({model_label('local', model)}); "
                "the Models page says how to change it."
            )
        )
        model = model or "embedded"
    base_url = config.get("base_url")
    info = models.provider(provider)
    if info is not None and info.flow_base_url:  # a flow may name its own server (openai-compatible)
        base_url = (
            st.text_input(
                "Base URL",
                base_url or "",
                key=key + "base",
                help=f"Empty: {info.base_url_variable}. Another server needs your grant "
                "before the first run, on the Run page.",
            ).strip()
            or None
        )
    return {**config, "provider": provider, "model": model, "base_url": base_url}


def _checked(model: type[Any], config: dict[str, Any], where: str, fields: tuple[str, ...]) -> list[str]:
    try:
        model.model_validate({k: v for k, v in config.items() if k in model.model_fields})
        return []
    except ValidationError as exc:
        return (
            plain_errors(exc, config, model=Flow, at=fields)
            if fields
            else [f"{where}: {e['msg']}" for e in exc.errors()]
        )


def decision_panel(
    app: FlowCall, state: CanvasState, node: CanvasNode, key: str
) -> tuple[dict[str, Any], list[str]]:
    """The decision model and the loop it runs: (its config, the problems to fix)."""
    c = model_fields(app, node.config, key)
    way = c.get("calling_way", "schema")
    ways = list(dict.fromkeys([*WAYS, way]))
    c["calling_way"] = st.selectbox(
        "Calling way", ways, index=ways.index(way), key=key + "way", help=WAY_HELP
    )
    c["system_prompt"] = st.text_area(
        "System prompt",
        c.get("system_prompt", ""),
        key=key + "prompt",
        help="{{today}}, {{tomorrow}}, {{now}} and {{weekday}} are filled in at run time",
    )
    c["temperature"] = st.slider(
        "Temperature", 0.0, 2.0, float(c.get("temperature", 0.0)), 0.1, key=key + "temp"
    )
    _loop_fields(c, state, key)
    problems = _checked(DecisionConfig, c, "Decision model", ("decision",))
    return c, problems


def _loop_fields(c: dict[str, Any], state: CanvasState, key: str) -> None:
    """How the loop runs, set in `c`: which tool the model must call, several calls at once,
    rounds and retries."""
    names = [bare_name(n.config["ref"]) for n in state.of_kind("tool") if n.attached]
    choice = c.get("tool_choice", "auto")
    choices = list(dict.fromkeys(["auto", "required", "none", *names, choice]))
    c["tool_choice"] = st.selectbox(
        "Tool choice",
        choices,
        index=choices.index(choice),
        key=key + "choice",
        help="auto: the model decides; required: it must call a tool; none: it may "
        "not; a tool's name: it must call that one",
    )
    c["parallel_tool_calls"] = st.checkbox(
        "Several calls at once", bool(c.get("parallel_tool_calls")), key=key + "parallel"
    )
    a, b = st.columns(2)
    c["max_rounds"] = int(
        a.number_input(
            "Rounds",
            1,
            50,
            int(c.get("max_rounds", 2)),
            key=key + "rounds",
            help="How many times the model may call tools and read the results",
        )
    )
    c["retry_budget"] = int(
        b.number_input(
            "Retry budget",
            0,
            10,
            int(c.get("retry_budget", 2)),
            key=key + "budget",
            help="How many wrong calls the model may correct",
        )
    )
    st.caption(md(loop_summary(c)))


def loop_summary(c: dict[str, Any]) -> str:
    """What the loop settings mean for this flow, in a sentence (the node says them in short:
    "rounds: 2 · one call at a time")."""
    rounds, budget = int(c.get("max_rounds", 2)), int(c.get("retry_budget", 2))
    choice = c.get("tool_choice", "auto")
    calls = {
        "auto": "decides whether to call a tool",
        "required": "must call a tool",
        "none": "may not call a tool, and answers from the question alone",
    }.get(choice, f"must call {choice}")
    at_once = (
        "it may ask for several calls at once"
        if c.get("parallel_tool_calls")
        else "it asks for one call at a time, and reads its result before the next"
    )
    return (
        f"For this flow: the decision model {calls}; {at_once}. It gets up to {rounds} "
        f"round{'s' * (rounds != 1)} of calling tools and reading their results before the "
        f"answer, and up to {budget} wrong call{'s' * (budget != 1)} are given back to it to correct."
    )


def schema_problem(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The output schema as typed: (schema, None) or (None, what is wrong and what to do)."""
    if not text.strip():
        return None, None
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"it is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); fix the JSON"
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return None, f"it is not a valid JSON Schema ({exc.message}); fix that keyword"
    problem = ref_problem(schema)
    return (None, problem) if problem else (schema, None)


def polish_panel(app: FlowCall, node: CanvasNode, key: str) -> tuple[dict[str, Any], list[str]]:
    """The polish model and the answer's JSON Schema, checked as it is typed."""
    c = model_fields(app, node.config, key)
    c["system_prompt"] = st.text_area(
        "Polish prompt (empty: FlowCall's default)", c.get("system_prompt", ""), key=key + "prompt"
    )
    problems = []
    text = st.text_area(
        "Answer as JSON valid against this schema (optional)",
        as_json(c["output_schema"]) if c.get("output_schema") else "",
        height=220,
        key=key + "schema",
        help="Leave it empty for a text answer",
    )
    schema, problem = schema_problem(text)
    if problem:
        problems.append(f"Polish model › output schema: {problem}.")
        st.error(md(problems[-1]))
    else:
        c["output_schema"] = schema
        if schema is not None:
            st.success("The schema is valid (JSON Schema 2020-12).")
    return c, problems + _checked(PolishConfig, c, "Polish model", ("polish",))


def annotation_words(tool: Tool) -> list[str]:
    hints = tool.annotations
    return [
        "reads only" if hints.read_only else "changes things",
        *(["destructive"] if hints.destructive else []),
        "reaches the outside world" if hints.open_world else "closed world",
    ]


def tool_summary(tool: Tool) -> dict[str, Any]:
    """What the palette and the canvas say of a tool: description, source, annotations, cost."""
    checked = review_tool(tool)
    return {
        "ref": tool.version,
        "name": tool.name,
        "description": tool.description or "",
        "source": tool.source,
        "annotations": annotation_words(tool),
        "tokens": checked.tokens,
        "warnings": checked.warnings,
    }


# what a tool's source is, in words (an installed package's kind: by its name)
SOURCE_WORDS = {"plugin": "Python plugin", "mcp": "MCP server", "http": "HTTP tool", "flow": "sub-flow"}


def tool_panel(state: CanvasState, node: CanvasNode, tool: Tool | None, key: str) -> tuple[list[str], bool]:
    """One tool: what it is and costs, and whether its calls wait for a person. Returns the
    flow's needs_approval list as set here, and whether the person removed the tool."""
    ref = node.config["ref"]
    group, source = tool_source(ref, state.settings)
    st.markdown(f"**{md(bare_name(ref))}** · {md(SOURCE_WORDS.get(group, f'{group} source'))} {md(source)}")
    approval = list(state.settings.get("needs_approval", []))
    if tool is None:
        st.caption(md(f"{ref}: its definition is known once its source is granted and listed."))
    else:
        about = tool_summary(tool)
        st.markdown(md(about["description"]) if about["description"] else "(no description)")
        st.caption(
            md(
                " · ".join(about["annotations"]) + f" · costs the decision model {about['tokens']} tokens "
                "in every request"
            )
        )
        for warning in about["warnings"]:
            st.warning(f"Possible prompt injection: {md(warning)}")
        with st.expander("Arguments (JSON Schema)"):
            st.json(tool.parameters)
    named = [a for a in approval if a in (ref, bare_name(ref))]
    wanted = st.checkbox(
        "Needs approval: each call waits for a person",
        bool(named),
        key=key + "approval",
        help="Destructive tools and untrusted MCP servers always wait, whatever this says",
    )
    if wanted and not named:
        approval.append(ref)
    elif not wanted and named:
        approval = [a for a in approval if a not in named]
    if not node.attached:
        st.info(
            "This tool is on the canvas but not connected: drag from the decision model's lower handle "
            "to it, or use Connect below."
        )
    removed = st.button("Remove from the flow", key=key + "remove")
    return approval, removed


def question_panel(state: CanvasState, key: str) -> dict[str, Any]:
    s = dict(state.settings)
    st.caption("A run starts here, with the user's question.")
    s["description"] = st.text_area(
        "What this flow does (its description)", s.get("description", ""), key=key + "description"
    )
    s["tool_timeout_s"] = float(
        st.number_input(
            "Seconds a tool may take", 1.0, 600.0, float(s.get("tool_timeout_s", 30.0)), key=key + "timeout"
        )
    )
    s["conversation"] = st.checkbox(
        "Read the earlier messages of a chat",
        bool(s.get("conversation")),
        key=key + "conversation",
        help="When a program calls this flow through the HTTP API's chat completions, the decision model "
        "also reads the messages before the question. Off: only the last user message.",
    )
    s["answers_without_tools"] = st.checkbox(
        "Answers without tools are fine here",
        bool(s.get("answers_without_tools")),
        key=key + "no_tools_ok",
        help="For small-talk flows, or flows whose tools are optional. Off: a run that ends with no tool "
        "result behind its answer is marked 'answered without tools' and shown amber, not green.",
    )
    return s


def answer_panel(state: CanvasState) -> None:
    polish = state.node("polish")
    if polish is None:
        st.caption(
            "The decision model's own words are the answer. Add a polish model to rewrite them, "
            "or to answer as JSON."
        )
    elif polish.config.get("output_schema"):
        st.caption("The answer is JSON, valid against the polish model's schema.")
    else:
        st.caption("The polish model writes the answer from the tool results.")
