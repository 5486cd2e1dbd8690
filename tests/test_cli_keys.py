"""`flowcall keys create/list/revoke` with click's CliRunner on the test's SQLite file: the key is
printed once, alone on stdout, and never again by any command; only its hash is kept."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from flowcall.cli.main import cli
from flowcall.core.errors import ConfigError
from flowcall.core.spec import Flow
from flowcall.service.front import FlowCall


@pytest.fixture(autouse=True)
def _flows() -> None:
    store = FlowCall.open().store
    for name in ("weather", "lookup"):
        store.save_flow(Flow(name=name))


def keys(*args: str):
    return CliRunner().invoke(cli, ["keys", *args], obj={})


def test_create_prints_the_key_once_and_how_to_use_it():
    created = keys("create", "billing-app", "--flows", "weather, lookup")
    assert created.exit_code == 0, created.output
    secret = created.stdout.strip()
    assert secret.startswith("fc_") and "\n" not in secret  # stdout holds the key alone: KEY=$(...) works
    assert "will not be shown again" in created.stderr
    assert "Authorization: Bearer <key>" in created.stderr
    assert "for weather, lookup" in created.stderr
    assert FlowCall.open().check_key(secret).flows == ["weather", "lookup"]

    listed = keys("list")
    assert listed.exit_code == 0
    assert "billing-app" in listed.output and f"fc_{secret[3:11]}" in listed.output
    assert secret not in listed.output and secret[11:] not in listed.output
    as_json = keys("list", "--json")
    assert secret[11:] not in as_json.output
    [entry] = json.loads(as_json.stdout)
    assert set(entry) == {"name", "prefix", "flows", "created_at", "revoked_at"}


def test_list_and_revoke_by_name_or_prefix():
    assert "no keys yet" in keys("list").output
    everything = keys("create", "all").stdout.strip()
    other = keys("create", "other").stdout.strip()
    assert "every flow" in keys("list").output

    revoked = keys("revoke", "all")
    assert revoked.exit_code == 0 and "revoked key all" in revoked.output
    assert keys("revoke", f"fc_{other[3:11]}").output.startswith("revoked key other")
    app = FlowCall.open()
    assert app.check_key(everything) is None and app.check_key(other) is None
    rows = [line.split() for line in keys("list").output.splitlines()[1:]]
    assert [row[0] for row in rows] == ["all", "other"] and all(
        row[4] != "-" for row in rows
    )  # revoked, when


@pytest.mark.parametrize(
    "args, words",
    [
        (("create", ""), "a key needs a name"),
        (("create", "k", "--flows", "weather,nope"), "no saved flow named 'nope'"),
        (("revoke", "nothing"), "no key is named 'nothing'"),
    ],
)
def test_refusals_say_what_to_do(args, words):
    done = keys(*args)
    assert done.exit_code != 0 and isinstance(done.exception, ConfigError)
    assert words in str(done.exception)
    assert "fc_" not in done.output  # no key was made


def test_the_group_is_listed_in_the_help():
    assert "keys" in CliRunner().invoke(cli, ["--help"]).output
    assert "Authorization: Bearer <key>" in " ".join(keys("--help").output.split())
