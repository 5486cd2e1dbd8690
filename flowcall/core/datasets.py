"""Datasets: questions, each with what its run must show, read from JSONL or CSV files.

An item is a question plus optional expectations (the pydantic models below are the format):
the calls the model must make (`expect_calls`, a subset of their arguments, `ordered` or not),
or none at all (`expect_no_call`); what the answer must be (`answer_schema`, `answer_contains`,
`answer_regex`, `answer_equals`); that tool results back every value of it (`grounded`); how
long the run may take (`max_latency_s`). An item may also
bring its own tool definitions (`tools`): then only the flow's decision model is asked, and
nothing runs (datasets imported from BFCL, see eval/bfcl_dataset.py). flowcall/eval/scoring.py
judges a run against an item.

A file comes from anyone, so reading one is bounded and every line is checked before anything
is kept: at most MAX_FILE_BYTES and MAX_ITEMS, JSON nested at most MAX_DEPTH deep, UTF-8 only,
regexes and JSON Schemas checked (schemas.py). Every problem is reported with its line
and field. A CSV export escapes cells a spreadsheet would run as a formula, and reading a CSV
undoes exactly that escape, so an export reads back as it was.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from flowcall.core.errors import ConfigError
from flowcall.core.messages import ToolSpec
from flowcall.core.nesting import depth
from flowcall.core.schemas import pattern_problem, schema_problem

MAX_FILE_BYTES = 50_000_000
MAX_ITEMS = 100_000
MAX_DEPTH = 32  # of any JSON value in an item: deeper is refused before pydantic or jsonschema see it
MAX_PROBLEMS_SHOWN = 50
NAME_PATTERN = r"^[\w\-. ]+$"  # as flow names
ANY_OF, OPTIONAL = "any_of", "optional"
# a cell starting with one of these is run as a formula by spreadsheets (OWASP's list)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _matcher_problem(value: dict[str, Any]) -> str | None:
    extra = set(value) - {ANY_OF, OPTIONAL}
    if extra:
        return (
            f"an object with {ANY_OF!r} is a matcher and may only have {ANY_OF!r} and {OPTIONAL!r}, not "
            f'{sorted(extra)}; to expect such an object literally, write {{"{ANY_OF}": [it]}}'
        )
    if not isinstance(value[ANY_OF], list) or not value[ANY_OF]:
        return f"{ANY_OF!r} must be a non-empty list of acceptable values"
    if not isinstance(value.get(OPTIONAL, False), bool):
        return f"{OPTIONAL!r} must be true or false"
    return None


def is_matcher(value: Any) -> bool:
    """`{"any_of": [...], "optional": bool}`: one of several values (optional: or absent)."""
    return isinstance(value, dict) and ANY_OF in value


class ExpectedCall(BaseModel):
    """A call the model must make: this tool, with at least these arguments. An argument's
    value is matched as it is, or is `{"any_of": [v1, v2, ...]}` (any of these values), with
    `"optional": true` when leaving the argument out is fine too. Other arguments are free."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        min_length=1, max_length=255, description="The tool's name or its version (ns/v1/name)."
    )
    arguments: dict[str, Any] = Field(default_factory=dict)

    @field_validator("arguments")
    @classmethod
    def _matchers_are_well_formed(cls, arguments: dict[str, Any]) -> dict[str, Any]:
        for key, value in arguments.items():
            if is_matcher(value) and (problem := _matcher_problem(value)):
                raise ValueError(f"argument {key!r}: {problem}")
        return arguments


class ItemTool(BaseModel):
    """A tool definition an item brings: offered to the decision model, never run."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    @field_validator("parameters")
    @classmethod
    def _is_an_object_schema(cls, parameters: dict[str, Any]) -> dict[str, Any]:
        problem = schema_problem(parameters)
        if problem:
            raise ValueError(problem)
        if parameters.get("type") != "object":
            raise ValueError('a tool\'s parameters must be a JSON Schema with "type": "object"')
        return parameters

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)


class DatasetItem(BaseModel):
    """One question and what its run must show. Absent fields expect nothing."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="Names the item in reports; compare pairs items by it (else by question).",
    )
    question: str = Field(min_length=1)
    expect_calls: list[ExpectedCall] | None = None
    ordered: bool = Field(default=False, description="expect_calls must happen in this order.")
    expect_no_call: bool = False
    answer_schema: dict[str, Any] | None = None
    answer_contains: str | None = Field(default=None, min_length=1)
    answer_regex: str | None = Field(default=None, min_length=1)
    answer_equals: Any = None
    grounded: bool = Field(
        default=False,
        description="Tool results back the answer: every value of it is traced "
        "to a tool result or the question (provenance.py), and the run did not answer without tools.",
    )
    max_latency_s: float | None = Field(default=None, gt=0)
    tools: list[ItemTool] | None = Field(default=None, min_length=1)

    @field_validator("question")
    @classmethod
    def _not_blank(cls, question: str) -> str:
        if not question.strip():
            raise ValueError("the question is blank")
        return question

    @field_validator("expect_calls")
    @classmethod
    def _none_when_empty(cls, calls: list[ExpectedCall] | None) -> list[ExpectedCall] | None:
        return calls or None

    @field_validator("ordered")
    @classmethod
    def _ordered_needs_calls(cls, ordered: bool, info: ValidationInfo) -> bool:
        if ordered and not info.data.get("expect_calls"):
            raise ValueError("ordered applies to expect_calls, which this item does not have")
        return ordered

    @field_validator("expect_no_call")
    @classmethod
    def _not_both(cls, no_call: bool, info: ValidationInfo) -> bool:
        if no_call and info.data.get("expect_calls"):
            raise ValueError("an item cannot expect calls (expect_calls) and no call at once")
        return no_call

    @field_validator("answer_schema")
    @classmethod
    def _schema_is_usable(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is not None and (problem := schema_problem(schema)):
            raise ValueError(problem)
        return schema

    @field_validator("answer_regex")
    @classmethod
    def _regex_is_usable(cls, pattern: str | None) -> str | None:
        if pattern is not None and (problem := pattern_problem(pattern)):
            raise ValueError(problem)
        return pattern

    def key(self) -> str:
        """What pairs this item with itself in another experiment: its id, else its question."""
        return self.id or self.question

    def dump(self) -> dict[str, Any]:
        """The item as a line of JSONL: only what differs from the defaults, in field order."""
        return self.model_dump(mode="json", exclude_defaults=True)


FIELDS = tuple(DatasetItem.model_fields)
_TEXT_FIELDS = {"id", "question", "answer_contains", "answer_regex"}  # a CSV cell is the text itself
_JSON_FIELDS = {"expect_calls", "answer_schema", "tools"}  # a CSV cell holds JSON text
# the others (ordered, expect_no_call, grounded, max_latency_s) are read by pydantic from the cell's text;
# answer_equals is JSON when its cell parses as JSON, else the text itself


@dataclass(frozen=True)
class Problem:
    line: int | None  # None: the file as a whole
    field: str | None
    message: str

    def __str__(self) -> str:
        where = ", ".join(
            part
            for part in (
                f"line {self.line}" if self.line else "",
                f"field {self.field}" if self.field else "",
            )
            if part
        )
        return f"{where}: {self.message}" if where else self.message


class DatasetError(ConfigError):
    """A dataset file that cannot be imported; `problems` holds each one with its line and field."""

    def __init__(self, source: str, problems: list[Problem]):
        self.source, self.problems = source, problems
        shown = "\n".join(f"  {p}" for p in problems[:MAX_PROBLEMS_SHOWN])
        more = (
            f"\n  ... and {len(problems) - MAX_PROBLEMS_SHOWN} more"
            if len(problems) > MAX_PROBLEMS_SHOWN
            else ""
        )
        count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
        super().__init__(f"{source} cannot be imported ({count}; nothing was stored):\n{shown}{more}")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _json(text: str) -> Any:
    """json.loads, with nesting past MAX_DEPTH refused as ValueError (json itself would recurse),
    and NaN and Infinity refused (they are not JSON)."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON (column {exc.colno}: {exc.msg})") from None
    if depth(value) > MAX_DEPTH:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
    return value


def _collect(data: dict[str, Any], line: int, items: list[DatasetItem], problems: list[Problem]) -> None:
    """Validate one item: keep it, or a problem for each field that is wrong."""
    try:
        items.append(DatasetItem.model_validate(data))
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            field = ".".join(str(p) for p in err["loc"]) or None
            message = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                message = f"unknown field; an item has {', '.join(FIELDS)}"
            problems.append(Problem(line, field, message))


def _lines_as_text(data: bytes) -> tuple[list[str], list[Problem]]:
    """The file's lines as text; a problem for each line that is not UTF-8."""
    lines, problems = [], []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            problems.append(
                Problem(
                    number,
                    None,
                    f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
                    f"{exc.start + 1}); save the file as UTF-8",
                )
            )
    return lines, problems


def parse_jsonl(text: str) -> tuple[list[DatasetItem], list[Problem]]:
    """One JSON object per line; blank lines are skipped."""
    items, problems = [], []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            data = _json(line)
        except ValueError as exc:
            problems.append(Problem(number, None, str(exc)))
            continue
        if not isinstance(data, dict):
            problems.append(Problem(number, None, f"an item is a JSON object, not {type(data).__name__}"))
            continue
        _collect(data, number, items, problems)
    return items, problems


def unescape_formula(cell: str) -> str:
    """Undo escape_formula: a `'` before a formula start (or before another `'`) is dropped."""
    return cell[1:] if cell[:1] == "'" and cell[1:2] in (*FORMULA_STARTS, "'") else cell


def escape_formula(cell: str) -> str:
    """A cell a spreadsheet shows as text: one that starts like a formula gets a leading `'`
    (so does one that starts with `'` before such a start, so unescape_formula undoes exactly this)."""
    return "'" + cell if cell.startswith(FORMULA_STARTS) or unescape_formula(cell) != cell else cell


def _csv_value(field: str, cell: str) -> Any:
    if field in _TEXT_FIELDS:
        return cell
    if field in _JSON_FIELDS:
        return _json(cell)
    if field == "answer_equals":
        try:
            return _json(cell)
        except ValueError:
            return cell
    return cell  # a bool or a number, read by pydantic


def _csv_header(header: list[str]) -> list[Problem]:
    problems = [
        Problem(1, name or "(empty)", f"unknown column; the columns are {', '.join(FIELDS)}")
        for name in header
        if name not in FIELDS
    ]
    problems += [
        Problem(1, name, "this column appears twice") for name in set(header) if header.count(name) > 1
    ]
    if "question" not in header:
        problems.append(Problem(1, "question", "the header has no question column"))
    return problems


def parse_csv(text: str) -> tuple[list[DatasetItem], list[Problem]]:
    """A header row naming the fields, then one item per row. Empty cells are absent fields;
    expect_calls, answer_schema and tools hold JSON text."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [name.strip() for name in next(reader, [])]
    except csv.Error as exc:
        return [], [Problem(1, None, f"not a CSV header: {exc}")]
    if not header:
        return [], [Problem(None, None, "the file is empty; a CSV dataset starts with a header row")]
    problems = _csv_header(header)
    if problems:
        return [], problems
    items = []
    while True:
        line = reader.line_num + 1
        try:
            row = next(reader, None)
        except csv.Error as exc:  # a cell over csv's limit (131,072 characters), a broken quote
            problems.append(Problem(line, None, f"cannot be read as CSV: {exc}"))
            break
        if row is None:
            break
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            problems.append(Problem(line, None, f"has {len(row)} cells; the header has {len(header)}"))
            continue
        data, broken = {}, False
        for field, cell in zip(header, row):
            if cell == "":
                continue
            try:
                data[field] = _csv_value(field, unescape_formula(cell))
            except ValueError as exc:
                problems.append(Problem(line, field, f"{exc} (in CSV this column holds JSON text)"))
                broken = True
        if not broken:
            _collect(data, line, items, problems)
    return items, problems


def _too_big(source: str, size: int) -> DatasetError:
    return DatasetError(
        source,
        [
            Problem(
                None,
                None,
                f"the file is {size / 1e6:.1f} MB; a dataset file may be at "
                f"most {MAX_FILE_BYTES / 1e6:.0f} MB: split it",
            )
        ],
    )


def parse_dataset(data: bytes, fmt: str, source: str = "dataset") -> list[DatasetItem]:
    """Every item of a JSONL or CSV file's bytes; DatasetError listing every problem if any."""
    if len(data) > MAX_FILE_BYTES:
        raise _too_big(source, len(data))
    lines, problems = _lines_as_text(data.removeprefix(b"\xef\xbb\xbf"))  # a UTF-8 BOM is harmless
    if problems:
        raise DatasetError(source, problems)
    items, problems = (parse_jsonl if fmt == "jsonl" else parse_csv)("\n".join(lines))
    if not problems and len(items) > MAX_ITEMS:
        problems.append(
            Problem(None, None, f"{len(items):,} items; a dataset may have at most {MAX_ITEMS:,}")
        )
    if not problems and not items:
        problems.append(Problem(None, None, "the file has no items"))
    if problems:
        raise DatasetError(source, problems)
    return items


def format_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    raise ConfigError(f"{path} is neither .jsonl nor .csv; name a JSON Lines file .jsonl, a CSV file .csv")


def read_dataset(path: Path) -> list[DatasetItem]:
    """The items of a dataset file (format by its suffix), read no further than the size limit."""
    fmt = format_of(path)
    if not path.is_file():
        raise ConfigError(f"{path} does not exist")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise _too_big(str(path), path.stat().st_size)
    with path.open("rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)  # never more: the limit is checked on what was read
    return parse_dataset(data, fmt, str(path))


def to_jsonl(items: Iterable[DatasetItem]) -> str:
    return "".join(json.dumps(item.dump(), ensure_ascii=False) + "\n" for item in items)


def _csv_cell(field: str, value: Any) -> str:
    if value is None:
        return ""
    if field in ("ordered", "expect_no_call", "grounded"):
        return "true" if value else ""
    if field in _TEXT_FIELDS:
        return escape_formula(value)
    if field == "max_latency_s":
        return escape_formula(repr(value))
    return escape_formula(json.dumps(value, ensure_ascii=False))


def to_csv(items: Iterable[DatasetItem]) -> str:
    """A header with every field, then a row per item; no cell starts like a formula."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(FIELDS)
    for item in items:
        data = item.dump()
        writer.writerow([_csv_cell(field, data.get(field)) for field in FIELDS])
    return out.getvalue()


def content_hash(items: Iterable[DatasetItem]) -> str:
    """Stable over the items' content and order: importing the same items makes no new version."""
    canonical = json.dumps([item.dump() for item in items], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def check_name(name: str) -> str:
    if not (0 < len(name) <= 120) or not re.fullmatch(NAME_PATTERN, name):
        raise ConfigError(
            f"dataset name {name!r} is not allowed; use 1 to 120 letters, digits, spaces and - _ ."
        )
    return name
