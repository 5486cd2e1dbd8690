"""A flow file never holds a secret: parse_flow refuses one by its name, its value or a URL's
credentials, names each place and the fix, and never repeats the secret. What is not a secret
(a "$VAR" reference, a JSON Schema property called token, the example flows) still loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowcall.core.errors import ConfigError
from flowcall.core.spec import load_flow, parse_flow

FLOWS = Path(__file__).resolve().parents[2] / "flows"

# made-up values in each format (never real credentials)
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
LOOKALIKES = {
    "openai": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "openai-classic": "sk-T3stOnlyN0tARealKey00000000000000000000000",
    "aws-id": "AKIAIOSFODNN7EXAMPLE",
    "aws-session-id": "ASIAY34FZKBOKMUTVV7A",
    "github": "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "github-fine": "github_pat_11AAAAAAA0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
    "slack": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "google": "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV",
    "pem": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
    "hex-32": "9f86d081884c7d659a2feaa0c55ad015",
    "base64-40": "Zm9vYmFyMTIzNDU2Nzg5MGFiY2RlZkFCQ0RFRjEy",
}


def mcp_flow(env: dict[str, str], **server: object) -> dict:
    return {
        "name": "with-mcp",
        "tools": ["gh/mcp/search"],
        "mcp_servers": [{"name": "gh", "command": ["npx", "-y", "some-mcp-server"], "env": env, **server}],
    }


def refused(data: dict) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_flow(data, source="shared.json")
    return str(caught.value)


# ---------------------------------------------------------------- refused


@pytest.mark.parametrize(
    "name",
    [
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "SECRET_KEY_BASE",
        "STRIPE_KEY",
        "private_key",
        "Cookie",
        "SMTP_PASS",
        "GH_PAT",
        "BASIC_AUTH",
        "DBPASSWORD2",
    ],
)
def test_literal_value_under_a_secret_name_is_refused(attack, name):
    attack.tried(f"an MCP server's env holds {name} as a literal value", expected="refused, naming the path")
    value = "plain-literal-value"
    try:
        parse_flow(mcp_flow({name: value}))
        message = "(loaded)"
    except ConfigError as exc:
        message = str(exc)
    attack.observed(message[:200])
    assert f"mcp_servers[0].env.{name}" in message
    assert f'"${name}"' in message  # the fix: a reference, and set the variable
    assert value not in message


@pytest.mark.parametrize("kind", sorted(LOOKALIKES))
def test_value_that_looks_like_a_key_is_refused_anywhere(attack, kind):
    attack.tried(
        f"a {kind} credential pasted into a system prompt and an innocently named env entry",
        expected="refused at both places, the value not repeated",
    )
    secret = LOOKALIKES[kind]
    data = mcp_flow({"CONFIG": secret})
    data["decision"] = {"system_prompt": f"You are helpful. Use the key {secret} when calling the API."}
    try:
        parse_flow(data)
        message = "(loaded)"
    except ConfigError as exc:
        message = str(exc)
    attack.observed(message[:200])
    assert "decision.system_prompt" in message and "mcp_servers[0].env.CONFIG" in message
    assert secret not in message and secret[:12] not in message


@pytest.mark.parametrize("where", ["mcp-url", "openapi", "base-url", "command-arg"])
def test_url_with_credentials_is_refused(attack, where):
    attack.tried(
        f"a URL with user:password@ in the flow ({where})", expected="refused, the password not repeated"
    )
    url = "https://deploy:Hunter2-db-pass@internal.example.com/v1"
    data: dict = {"name": "with-url"}
    path = {
        "mcp-url": "mcp_servers[0].url",
        "openapi": "http_tools[0].openapi",
        "base-url": "decision.base_url",
        "command-arg": "mcp_servers[0].command[2]",
    }[where]
    if where == "mcp-url":
        data["mcp_servers"] = [{"name": "remote", "url": url}]
    elif where == "openapi":
        data["http_tools"] = [{"name": "api", "openapi": url + "/openapi.json"}]
    elif where == "base-url":
        data["decision"] = {"provider": "openai-compatible", "base_url": url}
    else:
        data["mcp_servers"] = [{"name": "db", "command": ["uvx", "mcp-postgres", url]}]
    message = refused(data)
    attack.observed(message[:200])
    assert path in message and "password" in message
    assert "Hunter2-db-pass" not in message


def test_url_with_a_key_in_its_query_is_refused(attack):
    attack.tried("an OpenAPI URL carrying ?api_key=<literal>", expected="refused")
    message = refused(
        {
            "name": "q",
            "http_tools": [
                {"name": "api", "openapi": "https://api.example.com/openapi.json?api_key=abc123XYZ"}
            ],
        }
    )
    attack.observed(message[:200])
    assert "http_tools[0].openapi" in message and "abc123XYZ" not in message


def test_error_names_every_place_and_repeats_no_value(attack):
    attack.tried(
        "three secrets in one flow: an AWS secret in env, an OpenAI key in the prompt, a password in "
        "an MCP URL",
        expected="one error naming all three paths and the $VAR fix, no value",
    )
    data = mcp_flow({"AWS_SECRET_ACCESS_KEY": AWS_SECRET, "GITHUB_TOKEN": "$GITHUB_TOKEN"})
    data["mcp_servers"].append({"name": "remote", "url": "https://bob:Sw0rdfish-77@mcp.example.com/mcp"})
    data["decision"] = {"system_prompt": "key: " + LOOKALIKES["openai"]}
    message = refused(data)
    attack.observed(message)
    for path in ("mcp_servers[0].env.AWS_SECRET_ACCESS_KEY", "decision.system_prompt", "mcp_servers[1].url"):
        assert path in message
    assert '"AWS_SECRET_ACCESS_KEY": "$AWS_SECRET_ACCESS_KEY"' in message and "environment" in message
    for value in (AWS_SECRET, LOOKALIKES["openai"], "Sw0rdfish-77"):
        assert value not in message
    assert "GITHUB_TOKEN" not in message  # a reference is fine


# ---------------------------------------------------------------- accepted


def test_env_references_load_under_any_name(attack):
    attack.tried(
        "the documented form: env values that are $VAR references under secret names",
        expected="loads; the values stay references",
    )
    env = {
        "GITHUB_TOKEN": "$GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY": "$AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD": "$DB_PASSWORD",
        "x-api-key": "$X_API_KEY",
        "Authorization": "$AUTH_HEADER",
        "DB_PASSWORD_FILE": "/run/secrets/db_password",
        "LOG_LEVEL": "debug",
    }
    try:
        flow = parse_flow(mcp_flow(env))
        outcome = f"loaded: {flow.mcp_servers[0].env}"
    except ConfigError as exc:
        flow, outcome = None, f"refused: {exc}"
    attack.observed(outcome[:200])
    assert flow is not None and flow.mcp_servers[0].env == env


def test_output_schema_property_names_are_not_secrets(attack):
    attack.tried(
        "a polish output_schema with properties named token, password and api_key",
        expected="loads: inside a JSON Schema keys are property names",
    )
    schema = {
        "type": "object",
        "required": ["token"],
        "properties": {
            "token": {"type": "string", "pattern": "^[A-Za-z0-9]{32}$"},
            "password": {"type": "string", "minLength": 12},
            "api_key": {"type": "string", "description": "the key the user should create"},
            "secret": {"type": "object", "properties": {"authorization": {"type": "string"}}},
        },
    }
    try:
        flow = parse_flow({"name": "schema", "polish": {"output_schema": schema}})
        outcome = "loaded"
    except ConfigError as exc:
        flow, outcome = None, f"refused: {exc}"
    attack.observed(outcome[:200])
    assert flow is not None and flow.polish.output_schema == schema


def test_example_flows_and_harmless_lookalikes_load(attack):
    attack.tried(
        "every flow in flows/, and a flow full of things that are not secrets (UUIDs, a schema "
        "pattern, a digest-pinned image, a long path, max_tokens, $VAR references)",
        expected="all load",
    )
    outcomes = {}
    for path in sorted(FLOWS.glob("*.json")):
        try:
            load_flow(path)
            outcomes[path.name] = "loaded"
        except ConfigError as exc:
            outcomes[path.name] = f"refused: {exc}"
    harmless = {
        "name": "harmless",
        "description": "Run 123e4567-e89b-12d3-a456-426614174000 and 9F1C2D3E-4B5A-6978-8A9B-0C1D2E3F4A5B; "
        "tokens are counted, the password policy is explained, risk-management skills apply.",
        "decision": {
            "provider": "openai-compatible",
            "base_url": "http://127.0.0.1:11434/v1",
            "model": "Qwen/Qwen2.5-Coder-32B-Instruct-GGUF",
            "max_tokens": 512,
            "system_prompt": "Answer in JSON; ids look like ^[A-Za-z0-9]{32}$ and never include secrets.",
        },
        "tools": ["gh/mcp/search"],
        "mcp_servers": [
            {
                "name": "gh",
                "command": [
                    "docker",
                    "run",
                    "-i",
                    "--rm",
                    "-e",
                    "GITHUB_PERSONAL_ACCESS_TOKEN",
                    "ghcr.io/github/github-mcp-server@sha256:" + "0123456789abcdef" * 4,
                    "/Users/JohnSmith/Projects2024/mcpServer/build/index.js",
                ],
                "env": {
                    "GITHUB_PERSONAL_ACCESS_TOKEN": "$GITHUB_PERSONAL_ACCESS_TOKEN",
                    "MAX_TOKENS": "4096",
                },
            }
        ],
    }
    try:
        parse_flow(harmless)
        outcomes["harmless"] = "loaded"
    except ConfigError as exc:
        outcomes["harmless"] = f"refused: {exc}"
    attack.observed(json.dumps(outcomes)[:300])
    assert set(outcomes) >= {"commute_weather.json", "create_task.json", "harmless"}
    assert all(outcome == "loaded" for outcome in outcomes.values()), outcomes
