"""Load BFCL (Berkeley Function Calling Leaderboard) cases and turn their docs into tools.

BFCL describes functions with Gorilla type names (`dict`, `float`, `tuple`, `any`) and dotted
names (`math.factorial`), neither of which a provider or llama.cpp's grammar accepts, so each
case carries JSON Schema tools with sanitised names plus the map back to the original names
that the checker needs. The data is vendored under `data/bfcl/` (Apache-2.0, see NOTICE.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowcall.core.errors import ConfigError
from flowcall.core.messages import Message, ToolSpec

DATA_DIR = Path(__file__).parent / "data" / "bfcl"
ANSWER_DIR = "possible_answer"

CATEGORIES: dict[str, str] = {
    "simple": "BFCL_v4_simple_python.json",
    "multiple": "BFCL_v4_multiple.json",
    "parallel": "BFCL_v4_parallel.json",
    "parallel_multiple": "BFCL_v4_parallel_multiple.json",
    "irrelevance": "BFCL_v4_irrelevance.json",
}
UNANSWERED = {"irrelevance"}  # a correct model makes no call, so there is no answer file

# Gorilla type name -> JSON Schema type; None means "any value".
GORILLA_TO_JSON: dict[str, str | None] = {
    "string": "string",
    "integer": "integer",
    "float": "number",
    "number": "number",
    "boolean": "boolean",
    "array": "array",
    "tuple": "array",
    "list": "array",
    "dict": "object",
    "object": "object",
    "any": None,
}
# Standard keywords copied as they are; Gorilla's own extras (`optional`) are dropped.
_KEPT_KEYWORDS = ("description", "enum", "default", "format", "minimum", "maximum", "minItems", "maxItems")
# "Any value" spelt as a list of types rather than `{}`: llama.cpp's grammar converter reads an
# empty schema as "an object" and rejects `{"description": ...}` outright. (BFCL's own
# handlers send "string" here, and its checker wants a string for `any`.)
ANY_TYPES = ["string", "number", "boolean", "array", "object", "null"]
_NAME_MAX = 64  # OpenAI-style APIs: ^[a-zA-Z0-9_-]{1,64}$


@dataclass
class BfclCase:
    """One BFCL question, its function docs as given and as tools, and the expected calls."""

    id: str
    category: str
    question: str  # text of the (last) user message of the first turn
    messages: list[Message]  # the whole first turn, system message included if any
    functions: list[dict[str, Any]]  # the original Gorilla docs, used by the checker
    tools: list[ToolSpec]
    name_map: dict[str, str]  # tool name the model sees -> original BFCL name
    ground_truth: list[dict[str, dict[str, list[Any]]]] = field(default_factory=list)

    def original_name(self, tool_name: str) -> str:
        """The BFCL name for a name the model used (unknown names come back unchanged)."""
        return self.name_map.get(tool_name, tool_name)


def gorilla_to_json_schema(doc: dict[str, Any]) -> dict[str, Any]:
    """Convert one Gorilla parameter doc, recursively, to JSON Schema.

    Raises ValueError on a type name that is neither Gorilla nor JSON Schema, because a silent
    fallback would hand the model a schema that disagrees with what the checker expects.
    """
    gorilla_type = doc.get("type", "any")
    if gorilla_type not in GORILLA_TO_JSON:
        raise ValueError(f"unknown parameter type {gorilla_type!r}")
    json_type = GORILLA_TO_JSON[gorilla_type]
    schema: dict[str, Any] = {"type": list(ANY_TYPES) if json_type is None else json_type}
    schema.update({key: doc[key] for key in _KEPT_KEYWORDS if key in doc})
    if json_type == "object":
        if "properties" in doc:
            schema["properties"] = {k: gorilla_to_json_schema(v) for k, v in doc["properties"].items()}
        if doc.get("required"):
            schema["required"] = list(doc["required"])
    if json_type == "array" and isinstance(doc.get("items"), dict):
        schema["items"] = gorilla_to_json_schema(doc["items"])
    return schema


def function_to_parameters(function: dict[str, Any]) -> dict[str, Any]:
    """The tool's parameter schema: always a plain object at the root (a Gorilla root may
    carry stray keys such as `default: "location"` or `optional: [...]`, which are dropped)."""
    params = function.get("parameters") or {}
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {k: gorilla_to_json_schema(v) for k, v in (params.get("properties") or {}).items()},
    }
    if params.get("required"):
        schema["required"] = list(params["required"])
    return schema


def sanitize_name(name: str) -> str:
    """A tool name OpenAI-style APIs accept: `math.factorial` -> `math_factorial`."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:_NAME_MAX] or "tool"


def build_name_map(names: list[str]) -> dict[str, str]:
    """Sanitised name -> original name, unambiguous within one case.

    Names that are already valid keep their spelling; the others get `_2`, `_3`... when their
    sanitised form is taken, so two functions never share a tool name.
    """
    taken: dict[str, str] = {n: n for n in names if sanitize_name(n) == n}
    for name in names:
        if name in taken.values():
            continue
        base = sanitize_name(name)
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            suffix = f"_{n}"
            candidate = base[: _NAME_MAX - len(suffix)] + suffix
        taken[candidate] = name
    return {tool: taken[tool] for tool in sorted(taken, key=lambda t: names.index(taken[t]))}


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise ConfigError(f"BFCL file not found: {path}. Expected the BFCL v4 JSON Lines files there.")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{number} is not valid JSON ({exc.msg}); BFCL files are JSON Lines.")
    return rows


def _make_case(category: str, row: dict[str, Any], ground_truth: list[Any], source: Path) -> BfclCase:
    try:
        first_turn = row["question"][0]
        functions = row["function"]
        messages = [Message(role=m["role"], content=m["content"]) for m in first_turn]
        users = [m.content or "" for m in messages if m.role == "user"]
        name_map = build_name_map([f["name"] for f in functions])
        by_name = {f["name"]: f for f in functions}
        tools = [
            ToolSpec(
                name=tool_name,
                description=by_name[original].get("description", ""),
                parameters=function_to_parameters(by_name[original]),
            )
            for tool_name, original in name_map.items()
        ]
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise ConfigError(f"{source}: case {row.get('id', '?')!r} is not a BFCL question ({exc}).") from exc
    return BfclCase(
        id=row["id"],
        category=category,
        question=users[-1] if users else "",
        messages=messages,
        functions=functions,
        tools=tools,
        name_map=name_map,
        ground_truth=ground_truth,
    )


def load_cases(category: str, data_dir: Path | None = None, limit: int | None = None) -> list[BfclCase]:
    """The cases of one category, in file order; `limit` keeps the first N.

    `data_dir` defaults to the vendored copy, so evaluation works without any download; any
    folder laid out like BFCL's `bfcl_eval/data/` (answers in `possible_answer/`) works too.
    """
    if category not in CATEGORIES:
        raise ConfigError(f"unknown BFCL category {category!r}; choose one of {', '.join(CATEGORIES)}.")
    folder = Path(data_dir) if data_dir is not None else DATA_DIR
    if not folder.is_dir():
        raise ConfigError(
            f"BFCL data folder not found: {folder}. Expected a folder holding {CATEGORIES[category]} "
            f"and {ANSWER_DIR}/{CATEGORIES[category]} (BFCL v4 JSON Lines)."
        )
    question_path = folder / CATEGORIES[category]
    rows = _read_jsonl(question_path)
    if limit is not None:
        rows = rows[: max(limit, 0)]
    answers: dict[str, list[Any]] = {}
    if category not in UNANSWERED:
        answer_path = folder / ANSWER_DIR / CATEGORIES[category]
        answers = {a.get("id"): a.get("ground_truth") for a in _read_jsonl(answer_path)}
        missing = [row.get("id") for row in rows if not answers.get(row.get("id"))]
        if missing:
            raise ConfigError(
                f"{answer_path} has no ground_truth for {len(missing)} case(s), e.g. {missing[0]!r}."
            )
    return [_make_case(category, row, answers.get(row.get("id"), []), question_path) for row in rows]
