"""Keys to the HTTP API through the service, on a real SQLite file: made, listed, revoked and
checked; the key itself is kept nowhere; a key limited to some flows allows only those; names
and flows that cannot be are refused, saying why and what to do."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text

from flowcall.core.errors import ConfigError, NotFoundError
from flowcall.core.spec import Flow
from flowcall.service.front import FlowCall
from flowcall.trust.api_keys import ApiKey, key_hash, new_secret, prefix_of


@pytest.fixture
def app() -> FlowCall:
    service = FlowCall.open()  # the test's own SQLite file (tests/conftest.py)
    for name in ("weather", "lookup", "third one"):
        service.store.save_flow(Flow(name=name))
    return service


def database_files(app: FlowCall) -> list[Path]:
    path = Path(app.store.engine.url.database)
    return [p for p in path.parent.iterdir() if p.name.startswith(path.name)]  # the file, its WAL and shm


def test_a_secret_is_fc_and_256_random_bits_and_its_hash_is_sha256():
    secret = new_secret()
    assert secret.startswith("fc_") and len(secret) == 46 and secret != new_secret()
    assert len(key_hash(secret)) == 64 and key_hash(secret) == key_hash(secret) != key_hash(new_secret())
    assert prefix_of(secret) == secret[3:11]


def test_create_list_check_revoke(app):
    key, secret = app.create_key("billing-app")
    assert key.name == "billing-app" and key.flows is None and key.active and key.prefix == secret[3:11]
    assert app.check_key(secret) == key
    assert [k.name for k in app.list_keys()] == ["billing-app"]

    revoked = app.revoke_key("billing-app")
    assert [k.name for k in revoked] == ["billing-app"] and revoked[0].revoked_at is not None
    assert app.check_key(secret) is None  # revoked: as unknown
    assert not app.list_keys()[0].active and not app.list_keys()[0].allows("weather")


def test_the_secret_is_stored_nowhere_only_its_hash(app):
    _, secret = app.create_key("ci", ["weather"])
    with app.store.engine.connect() as conn:
        rows = [dict(row._mapping) for row in conn.execute(text("SELECT * FROM api_keys"))]
    assert len(rows) == 1
    assert all(secret not in str(value) for value in rows[0].values())
    assert rows[0]["key_hash"] == key_hash(secret)
    app.store.engine.dispose()  # the WAL checkpointed into the file
    assert any(
        key_hash(secret).encode() in path.read_bytes() for path in database_files(app)
    )  # the row is read
    for path in database_files(app):
        assert secret.encode() not in path.read_bytes(), path
        assert secret[3:].encode() not in path.read_bytes(), path  # nor the key without its "fc_"


def test_unknown_and_malformed_keys_check_as_none(app):
    app.create_key("one")
    for sent in ("", "fc_", new_secret(), "Bearer " + new_secret(), "fc_" + "x" * 5000, None, 42):
        assert app.check_key(sent) is None


def test_a_key_limited_to_flows_allows_only_those(app):
    key, secret = app.create_key("limited", ["weather", "third one", "weather"])
    assert key.flows == ["weather", "third one"]  # each once, in the order given
    checked = app.check_key(secret)
    assert checked.allows("weather") and checked.allows("third one")
    assert not checked.allows("lookup") and not checked.allows("Weather")
    every, _ = app.create_key("all")
    assert every.allows("lookup") and every.allows("anything saved later")


@pytest.mark.parametrize(
    "name, words",
    [
        ("", "a key needs a name"),
        ("   ", "a key needs a name"),
        (" padded", "not starting or ending with a space"),
        ("semi;colon", "letters, digits, spaces and - _ ."),
        ("x" * 121, "1 to 120"),
    ],
)
def test_bad_names_are_refused_saying_what_is_allowed(app, name, words):
    with pytest.raises(ConfigError, match=words):
        app.create_key(name)
    assert app.list_keys() == []


def test_a_name_in_use_is_refused_until_its_key_is_revoked(app):
    _, first = app.create_key("shared")
    with pytest.raises(
        ConfigError, match=r"a key named 'shared' exists and is not revoked.*flowcall keys revoke"
    ):
        app.create_key("shared")
    app.revoke_key("shared")
    _, second = app.create_key("shared")  # a revoked key's name may be taken again
    assert app.check_key(first) is None and app.check_key(second).name == "shared"
    assert [(k.name, k.active) for k in app.list_keys()] == [("shared", False), ("shared", True)]


def test_flows_must_be_saved_flows(app):
    with pytest.raises(
        ConfigError,
        match=r"no saved flow named 'nope', 'gone'.*lookup, third one, weather.*"
        r"flowcall flows import",
    ):
        app.create_key("k", ["weather", "nope", "gone"])
    with pytest.raises(ConfigError, match="empty; name at least one saved flow, or give none"):
        app.create_key("k", [" ", ""])
    assert app.list_keys() == []


def test_revoke_by_prefix_and_what_matches_nothing(app):
    key, secret = app.create_key("by-prefix")
    other, other_secret = app.create_key("kept")
    assert [k.name for k in app.revoke_key(f"fc_{key.prefix}")] == ["by-prefix"]
    assert app.check_key(secret) is None and app.check_key(other_secret) == other
    with pytest.raises(NotFoundError, match="already revoked"):
        app.revoke_key(key.prefix)
    with pytest.raises(NotFoundError, match=rf"no key is named 'nothing'.*kept \(fc_{other.prefix}\)"):
        app.revoke_key("nothing")


def test_the_record_says_whether_it_is_active():
    now = datetime.now(UTC)
    key = ApiKey(name="k", prefix="abcdefgh", flows=None, created_at=now)
    assert key.active and key.allows("x")
    assert not key.model_copy(update={"revoked_at": now}).active
    assert "key_hash" not in key.model_dump() and "secret" not in key.model_dump()
