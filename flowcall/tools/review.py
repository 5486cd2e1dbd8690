"""Tool descriptions are prompt text: what each tool costs the decision model in
tokens, and whether its description carries instructions aimed at the model.

The cost is counted on the text the model reads for the tool (its definition as JSON, as chat
templates and FlowCall's prompt ways render it) with the embedded model's own tokenizer; where
that model is absent the count is an estimate and says so. The warnings are patterns seen in
tool-poisoning attacks on MCP servers: hidden <IMPORTANT> blocks, "ignore previous
instructions", requests to keep something from the user or to read secrets.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field

from flowcall.tools.base import Tool

_SUSPICIOUS = [
    (
        re.compile(r"ignore (all |any )?(the )?(previous|prior|above|earlier) (instructions|prompts?)", re.I),
        "tells the model to ignore its instructions",
    ),
    (
        re.compile(r"<\s*(important|system|instructions?|secret)\s*>", re.I),
        "has a hidden <IMPORTANT>-style block",
    ),
    (
        re.compile(r"(do not|don't|never) (tell|mention|inform|reveal)[^.]{0,40}(user|human)", re.I),
        "asks the model to keep something from the user",
    ),
    (
        re.compile(r"(system prompt|your instructions|previous conversation)", re.I),
        "refers to the model's own prompt or conversation",
    ),
    (
        re.compile(r"(~/\.ssh|id_rsa|\.env\b|api[_ -]?keys?|passwords?|credentials)", re.I),
        "mentions secrets or credential files",
    ),
    (
        re.compile(r"(before|instead of) (using|calling) (this|any other) tool", re.I),
        "tries to steer how other tools are used",
    ),
]


@dataclass
class ToolReview:
    version: str
    tokens: int
    tokens_exact: bool  # counted with the model's tokenizer, not estimated
    warnings: list[str] = field(default_factory=list)


def definition_text(tool: Tool) -> str:
    """What the model reads for this tool."""
    return json.dumps({"type": "function", "function": tool.spec().model_dump()}, ensure_ascii=False)


@functools.lru_cache(maxsize=1)
def _tokenizer():
    """The embedded model's tokenizer, loaded without its weights; None if the model is absent."""
    from flowcall.core import config
    from flowcall.providers import local_model

    if not local_model.status(config.model_path())["present"]:
        return None
    from llama_cpp import Llama
    from llama_cpp._utils import suppress_stdout_stderr

    with suppress_stdout_stderr(disable=False):  # llama.cpp warns about the missing context size
        return local_model.close_at_exit(
            Llama(model_path=str(config.model_path()), vocab_only=True, verbose=False)
        )


def count_tokens(text: str) -> tuple[int, bool]:
    tokenizer = _tokenizer()
    if tokenizer is None:
        return max(
            1, round(len(text.encode("utf-8")) / 3.6)
        ), False  # about 3.6 bytes a token for JSON and CJK
    return len(tokenizer.tokenize(text.encode("utf-8"), add_bos=False, special=False)), True


def injection_warnings(tool: Tool) -> list[str]:
    # a server writes the schema: its properties may be anything, not only a mapping
    properties = tool.parameters.get("properties") if isinstance(tool.parameters, dict) else None
    texts = [("description", str(tool.description))] + [
        (f"parameter '{name}'", str(schema.get("description", "")))
        for name, schema in (properties.items() if isinstance(properties, dict) else ())
        if isinstance(schema, dict)
    ]
    found = []
    for where, text in texts:
        for pattern, why in _SUSPICIOUS:
            if pattern.search(text):
                found.append(f"{where} {why}: {pattern.search(text).group(0)!r}")
    return found


def review(tool: Tool) -> ToolReview:
    tokens, exact = count_tokens(definition_text(tool))
    return ToolReview(tool.version, tokens, exact, injection_warnings(tool))


def definition(tool: Tool) -> dict:
    """What a person accepts when they accept a tool: all the model and the host go by."""
    return {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
        "annotations": vars(tool.annotations),
    }


def fingerprint(tool: Tool) -> str:
    import hashlib

    return hashlib.sha256(
        json.dumps(definition(tool), sort_keys=True, ensure_ascii=False).encode()
    ).hexdigest()


def what_changed(old: dict, new: dict) -> list[str]:
    return [
        key for key in ("name", "description", "parameters", "annotations") if old.get(key) != new.get(key)
    ]


@dataclass
class PinCheck:
    """A run's tools against the definitions first accepted for its flow (see
    engine.approval.changed_tools)."""

    first_used: list[Tool] = field(default_factory=list)  # to pin now
    changed: frozenset[str] = frozenset()  # versions whose definition changed: their calls wait for a person
    warnings: list[tuple[str, str, dict | None]] = field(default_factory=list)  # (tool name, note, result)


def check_pins(tools: list[Tool], pins: dict[str, dict]) -> PinCheck:
    """MCP and HTTP tools are pinned as first used: a server can change what a tool says or
    takes at any time. A changed one gets a warning, and so does a description with
    instructions aimed at the model (an outside server's text reaches the model as is)."""
    check, changed = PinCheck(), set()
    for tool in tools:
        if tool.source == "python":
            continue
        check.warnings += [
            (tool.name, f"{tool.version}: {warning}", None) for warning in injection_warnings(tool)
        ]
        pin = pins.get(tool.version)
        if pin is None:
            check.first_used.append(tool)
        elif pin["fingerprint"] != fingerprint(tool):
            changed.add(tool.version)
            what = ", ".join(what_changed(pin["definition"], definition(tool)))
            check.warnings.append(
                (
                    tool.name,
                    f"the {what} of {tool.version} changed since it was first accepted; "
                    "its calls wait for a person this run",
                    {"accepted": pin["definition"], "now": definition(tool)},
                )
            )
    check.changed = frozenset(changed)
    return check
