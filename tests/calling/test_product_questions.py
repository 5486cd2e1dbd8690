"""The product question set (tests/support/product_questions): real requests for the bundled tools
and example flows, with every correct call. The argument checks must refuse none of those
calls (issue 34, point 1): a user who says "Beijing" and gets 北京 written has been understood."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from tests.support.product_questions import (
    QUESTIONS,
    build,
    doc_value_refusals,
    grounding_refusals,
    load_items,
    load_raw,
    resolve_dates,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def items():
    return load_items()


def test_the_set_is_large_bilingual_and_split_in_halves(items):
    raw = load_raw()
    assert len(raw) >= 200
    assert len({r["id"] for r in raw}) == len(raw)
    languages = Counter(r["lang"] for r in raw)
    assert languages["en"] >= 80 and languages["zh"] >= 80 and languages["mixed"] > 0
    assert {r["half"] for r in raw} == {"calibration", "report"}
    assert all(r["half"] == build.half(r["id"]) for r in raw)
    quiet = sum(not r["correct_calls"] for r in raw)
    assert 0.08 <= quiet / len(raw) <= 0.2  # the gate is measured both ways
    assert all(calls for r in raw for calls in r["correct_calls"])  # no empty call list as a correct call


def test_the_file_is_what_build_writes():
    """questions.jsonl is generated from build.py; the two must not drift apart."""
    assert load_raw() == build.build()


def test_every_correct_call_is_valid_against_the_real_tool_schema(items):
    checker = jsonschema.FormatChecker()
    problems = []
    for item in items:
        by_name = {t.name: t for t in item.tools}
        for calls in item.correct:
            for call in calls:
                if call.name not in by_name:
                    problems.append(f"{item.id}: {call.name} is not attached")
                    continue
                schema = by_name[call.name].parameters
                validator = jsonschema.Draft202012Validator(schema, format_checker=checker)
                problems += [
                    f"{item.id}: {call.name} {call.arguments}: {e.message}"
                    for e in validator.iter_errors(call.arguments)
                ]
    assert problems == []


def test_dates_resolve_from_the_day_the_check_runs():
    saturday = dt.date(2026, 11, 28)
    assert resolve_dates({"due": "{{tomorrow}}", "n": 2}, saturday) == {"due": "2026-11-29", "n": 2}
    assert resolve_dates("{{today+2}}", saturday) == "2026-11-30"
    assert resolve_dates("{{next:mon}}", saturday) == "2026-11-30"
    assert resolve_dates("{{next:sat}}", saturday) == "2026-12-05"  # after today, never today
    assert resolve_dates("{{date:12-05}}", saturday) == "2026-12-05"
    assert resolve_dates("{{date:01-05}}", saturday) == "2027-01-05"
    assert resolve_dates("{{month_end}}", saturday) == "2026-11-30"


def test_grounding_leaves_every_correct_call_correct(items):
    refused = sorted(
        {
            f"{item.id} {r['tool']}.{r['argument']}={r['value']!r} | {item.question}"
            for item in items
            for r in grounding_refusals(item)
            if r["harmful"]
        }
    )
    assert not refused, f"{len(refused)} said values dropped:\n" + "\n".join(refused)


def test_doc_values_flag_no_value_the_user_said(items):
    """Zero, but for a nickname in the user's own script (蓉城 for 成都): no look-up can know it.
    The user's own word ("蓉城") and the other script ("Chengdu") go through; only the docs'
    spelling (成都, the tool's example) is asked about."""
    refused = sorted(
        {
            f"{item.id} {r['tool']}.{r['argument']}={r['value']!r} | {item.question}"
            for item in items
            for r in doc_value_refusals(item)
            if "nickname" not in item.notes
        }
    )
    assert not refused, f"{len(refused)} said values flagged:\n" + "\n".join(refused)
    nicknames = [item for item in items if "nickname" in item.notes]
    for item in nicknames:  # the calls that spell the place as the user did are never asked about
        own = [
            calls
            for calls in item.correct
            if all(
                str(v) in item.question
                for c in calls
                for v in c.arguments.values()
                if isinstance(v, str) and v not in ("base", "all")
            )
        ]
        assert own and not doc_value_refusals(dataclasses.replace(item, correct=own)), item.id


def test_the_script_runs_end_to_end_without_the_model(tmp_path):
    details = tmp_path / "details.json"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "false_refusals.py"),
            "--limit",
            "30",
            "--json",
            str(details),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"false refusals: grounding \d+, doc values \d+, gate not run", last), last
    written = json.loads(details.read_text(encoding="utf-8"))
    assert len(written) == 30 and {"id", "grounding", "doc_values"} <= set(written[0])
    assert QUESTIONS.is_file()
