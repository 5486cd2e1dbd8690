"""A tool source kind added from outside the package: an installed package (written at test time,
tests/extension/toy.py) offers the kind "toy" through the entry point group
`flowcall.tool_sources`, and the `flowcall` CLI, in a process of its own, runs a flow with a
source of that kind. No file of flowcall/ names it."""

from __future__ import annotations

import json

import pytest

from tests.extension.toy import flowcall_cli, write_flow, write_toy_kind

DICE_FLOW = {
    "name": "dice-roller",
    "decision": {"provider": "scripted", "model": "schema"},
    "tools": ["dice/toy/roll"],
    "sources": {"toy": [{"name": "dice", "faces": 6}]},
}


@pytest.fixture
def cli(tmp_path):
    """`flowcall ...` in a subprocess with the toy package installed and a database of its own."""
    site = write_toy_kind(tmp_path / "site")
    return flowcall_cli(site, tmp_path)


def test_a_flow_runs_with_a_source_of_an_installed_packages_kind_once_the_package_is_granted(cli, tmp_path):
    flow = write_flow(tmp_path, DICE_FLOW)
    refused = cli("run", flow, "roll the die", "--json")
    assert refused.returncode != 0 and "toy_ext" in refused.stdout + refused.stderr.replace("-", "_")
    assert 'tool source kind "toy"' in refused.stderr and "flowcall trust" in refused.stderr
    assert "rolled" not in refused.stdout  # nothing ran

    granted = cli("trust", flow, "--yes")
    assert granted.returncode == 0, granted.stderr
    assert 'use the tool source kind "toy" of the installed package toy-ext 0.1' in granted.stdout

    done = cli("run", flow, "roll the die", "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    results = [
        step["result"] for step in run["steps"] if step["kind"] == "tool_call" and step["name"] == "roll"
    ]
    assert run["status"] == "succeeded" and results == [{"rolled": 6, "die": "dice"}], run["steps"]


def test_a_source_of_a_kind_nobody_installed_is_refused_with_what_to_do(cli, tmp_path):
    flow = write_flow(
        tmp_path,
        {**DICE_FLOW, "name": "ghost", "tools": ["x/nope/y"], "sources": {"nope": [{"name": "x"}]}},
    )
    done = cli("run", flow, "hello")
    assert done.returncode != 0
    assert (
        "flow 'ghost' uses the tool source kind 'nope', which no installed package provides here; "
        "install it or remove the source" in done.stderr
    ), done.stderr


def test_a_source_the_kind_refuses_names_the_field(cli, tmp_path):
    flow = write_flow(
        tmp_path, {**DICE_FLOW, "name": "bad-die", "sources": {"toy": [{"name": "dice", "faces": 1}]}}
    )
    done = cli("run", flow, "roll")
    assert done.returncode != 0 and "Toy dice 'dice' (toy) is not valid: faces" in done.stderr, done.stderr
