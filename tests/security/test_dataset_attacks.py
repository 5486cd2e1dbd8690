"""A dataset file is untrusted input: huge or deeply nested files, bytes that are not UTF-8,
regexes and JSON Schemas that backtrack for ever or reach out, and CSV exports a spreadsheet
would run as formulas. Each gets a clear refusal or a bounded, safe outcome."""

from __future__ import annotations

import csv
import io
import socket
import time
from pathlib import Path

import pytest

from flowcall.core.datasets import (
    MAX_FILE_BYTES,
    MAX_ITEMS,
    DatasetError,
    DatasetItem,
    parse_dataset,
    read_dataset,
    to_csv,
)
from flowcall.core.schemas import schema_errors
from tests.security.test_router_regex import run_isolated
from tests.test_cli import flowcall

EVIL_TEXT = "a" * 60 + "!"


def _refusal(data: bytes, fmt: str = "jsonl") -> str:
    with pytest.raises(DatasetError) as caught:
        parse_dataset(data, fmt, "evil")
    return str(caught.value)


def test_a_file_over_the_size_limit_is_refused_unread_and_nothing_is_stored(attack, tmp_path: Path):
    attack.tried(
        f"`datasets import` of a {MAX_FILE_BYTES * 1.2 / 1e6:.0f} MB file",
        expected="exit 2 naming the limit, read no further than the limit, nothing stored",
    )
    big = tmp_path / "big.jsonl"
    with big.open("wb") as f:
        f.truncate(int(MAX_FILE_BYTES * 1.2))  # sparse: costs no disk
    done = flowcall("datasets", "import", str(big), "--name", "big", check=False)
    listed = flowcall("datasets", "list").stdout
    attack.observed(f"exit {done.returncode}: {done.stderr.strip()[-120:]!r}; datasets listed: {listed!r}")
    assert done.returncode == 2 and "the file is 60.0 MB; a dataset file may be at most 50 MB" in done.stderr
    assert listed == ""


def test_too_many_items_are_refused(attack):
    attack.tried(f"a JSONL file of {MAX_ITEMS + 1:,} items", expected="refused, naming the limit")
    message = _refusal(b'{"question": "q"}\n' * (MAX_ITEMS + 1))
    attack.observed(message[-100:])
    assert f"a dataset may have at most {MAX_ITEMS:,}" in message


@pytest.mark.parametrize("depth", [33, 50_000])
def test_deeply_nested_json_is_refused_without_recursing(attack, depth):
    attack.tried(
        f"an answer_equals nested {depth:,} arrays deep, in JSONL and in a CSV cell",
        expected="both refused with 'nested deeper than 32 levels', no RecursionError",
    )
    nested = "[" * depth + "]" * depth
    jsonl = _refusal(f'{{"question": "q", "answer_equals": {nested}}}'.encode())
    cell = _refusal(f'question,expect_calls\nq,"{nested}"\n'.encode(), "csv")
    attack.observed(f"JSONL: {jsonl.splitlines()[-1]!r}; CSV: {cell.splitlines()[-1]!r}")
    assert "line 1: JSON nested deeper than 32 levels" in jsonl
    assert "line 2, field expect_calls: JSON nested deeper than 32 levels" in cell


def test_a_csv_cell_over_csvs_limit_is_a_line_error(attack):
    attack.tried("a CSV cell of 200,000 characters", expected="a line error naming the limit, not a crash")
    message = _refusal(('question,answer_regex\nfine,x\nq,"' + "a" * 200_000 + '"\n').encode(), "csv")
    attack.observed(message.splitlines()[-1][:120])
    assert "line 3: cannot be read as CSV: field larger than field limit (131072)" in message


def test_an_integer_of_thousands_of_digits_is_a_line_error(attack):
    attack.tried("max_latency_s written with 5,000 digits", expected="a line error, not a crash")
    message = _refusal(('{"question": "q", "max_latency_s": ' + "9" * 5000 + "}").encode())
    attack.observed(message.splitlines()[-1][:120])
    assert "line 1:" in message and "digits" in message


def test_bytes_that_are_not_utf8_are_reported_line_by_line(attack):
    attack.tried(
        "a JSONL file with a Latin-1 line and a stray 0xff byte", expected="each line named; nothing parsed"
    )
    data = (
        '{"question": "ok"}\n'.encode()
        + '{"question": "café"}\n'.encode("latin-1")
        + b'{"question": "\xff"}\n'
    )
    message = _refusal(data)
    attack.observed(message.replace("\n", " | "))
    assert (
        "line 2: not UTF-8 text (byte 0xe9 at column 18)" in message
        and "line 3: not UTF-8 text (byte 0xff" in message
    )


def test_a_catastrophic_answer_regex_is_cut_off_while_scoring(attack):
    attack.tried(
        f"answer_regex '(a|aa)+$' scored against an answer of {len(EVIL_TEXT)} characters",
        expected="a failing verdict that says the pattern was cut off, within 2 s",
    )
    out, note = run_isolated(f"""
        import time
        from flowcall.core.datasets import DatasetItem
        from flowcall.eval.scoring import Observed, score
        item = DatasetItem(question="q", answer_regex="(a|aa)+$")
        started = time.monotonic()
        verdict = score(item, Observed("succeeded", None, [], {EVIL_TEXT!r}, 1.0))[-1]
        print(verdict.passed, round(time.monotonic() - started, 3), verdict.reason[:60].replace(" ", "_"))
    """)
    attack.observed(f"{note}; {out!r}")
    assert out, note
    passed, seconds, reason = out.split()
    assert passed == "False" and float(seconds) < 2 and "still_matching_after_0.5_s" in reason


def test_a_catastrophic_pattern_inside_an_answer_schema_is_cut_off_too(attack):
    attack.tried(
        "answer_schema {'type': 'string', 'pattern': '(a|aa)+$'} (jsonschema would use re, unstoppable)",
        expected="the schema check ends within 2 s, failing with the time limit named",
    )
    out, note = run_isolated(f"""
        import time
        from flowcall.core.schemas import schema_errors
        started = time.monotonic()
        errors = schema_errors({{"type": "object", "patternProperties": {{"(a|aa)+$": {{}}}},
                                 "properties": {{"s": {{"type": "string", "pattern": "(a|aa)+$"}}}}}},
                               {{"s": {EVIL_TEXT!r}}})
        print(len(errors), round(time.monotonic() - started, 3), errors[0].replace(" ", "_"))
    """)
    attack.observed(f"{note}; {out!r}")
    assert out, note
    count, seconds, first = out.split()
    assert count == "1" and float(seconds) < 2 and first.startswith("s:_") and "still_matching" in first


def test_overlong_and_broken_patterns_are_refused_on_import(attack):
    attack.tried(
        "answer_regex of 5,000 characters; a pattern only re accepts; a schema pattern that does not compile",
        expected="each refused on import with its line and field",
    )
    message = _refusal(
        (
            "\n".join(
                [
                    '{"question": "q", "answer_regex": "' + "a" * 5000 + '"}',
                    '{"question": "q", "answer_regex": "(?P<x>a)(?P=y)"}',
                    '{"question": "q", "answer_schema": {"type": "string", "pattern": "(unclosed"}}',
                ]
            )
        ).encode()
    )
    attack.observed(message.replace("\n", " | ")[:300])
    assert "line 1, field answer_regex: the pattern is 5,000 characters long; at most 1,000" in message
    assert "line 2, field answer_regex:" in message and "line 3, field answer_schema:" in message


def test_a_schema_reference_outside_the_schema_is_refused_and_never_fetched(attack):
    attack.tried(
        "answer_schema {'$ref': 'http://127.0.0.1:PORT/schema.json'} (jsonschema's default registry "
        "downloads it), and an item tool's $dynamicRef to it, with a listener on PORT",
        expected="both refused on import; applying such a schema anyway connects to nothing",
    )
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(0.5)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/schema.json"
        message = _refusal(f'{{"question": "q", "answer_schema": {{"$ref": "{url}"}}}}'.encode())
        tool = _refusal(
            (
                '{"question": "q", "tools": [{"name": "t", "parameters": {"type": "object", "properties": '
                f'{{"x": {{"$dynamicRef": "{url}"}}}}}}}}]}}'
            ).encode()
        )
        errors = schema_errors({"$ref": url}, "anything")
        try:
            listener.accept()
            connected = True
        except TimeoutError:
            connected = False
    attack.observed(f"import: {message.splitlines()[-1][:100]!r}; applied: {errors}; connected: {connected}")
    assert "refers outside the schema" in message and errors and not connected
    assert (
        "field tools.0.parameters" in tool and "$dynamicRef" in tool and "refers outside the schema" in tool
    )


def test_a_csv_export_never_starts_a_cell_like_a_formula_and_reads_back(attack, tmp_path: Path):
    formulas = ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1:A9)", "\t=1", "\r=1", "'=already quoted"]
    attack.tried(
        f"questions and answers {formulas!r}, exported as CSV",
        expected="no cell of the export starts with = + - @ tab or CR; it imports back unchanged",
    )
    items = [
        DatasetItem(question=f, answer_contains=f, answer_equals=f, expect_no_call=True) for f in formulas
    ]
    items.append(DatasetItem(question="negative", answer_equals=-5, max_latency_s=2))
    exported = to_csv(items)
    cells = [cell for row in csv.reader(io.StringIO(exported, newline="")) for cell in row]
    risky = [cell for cell in cells if cell.startswith(("=", "+", "-", "@", "\t", "\r"))]
    path = tmp_path / "export.csv"
    path.write_text(exported, encoding="utf-8", newline="")
    back = read_dataset(path)
    attack.observed(
        f"{len(cells)} cells, {len(risky)} starting like a formula; read back equal: {back == items}"
    )
    assert risky == [] and back == items


def test_importing_an_attack_file_keeps_the_database_unchanged(attack, tmp_path: Path):
    attack.tried(
        "one good line then one nested 100,000 deep, via `flowcall datasets import`",
        expected="exit 2 with the line; the good line is not stored either",
    )
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        '{"question": "fine"}\n{"question": "q", "answer_equals": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
        encoding="utf-8",
    )
    started = time.monotonic()
    done = flowcall("datasets", "import", str(path), "--name", "mixed", check=False)
    listed = flowcall("datasets", "list").stdout
    attack.observed(f"exit {done.returncode} in {time.monotonic() - started:.1f} s; listed {listed!r}")
    assert (
        done.returncode == 2 and "line 2: JSON nested deeper than 32 levels" in done.stderr and listed == ""
    )
    assert "Traceback" not in done.stderr
