"""The Models page, run headless with Streamlit's AppTest: key status without the key, the
embedded model's state, and the probe."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from flowcall.core import config
from flowcall.providers import add_provider, provider_infos, remove_provider
from flowcall.providers.base import ProviderInfo
from flowcall.store import open_store
from flowcall.store.profiles import list_profiles
from flowcall.studio.shared import md
from tests.test_studio import shown

KEYS = ("OPENAI_API_KEY", "DASHSCOPE_API_KEY", "OPENAI_COMPATIBLE_API_KEY")
SECRET = "sk-test-Zq8wSECRETvalue42"
PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "models.py")


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)


def page() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    return at.run()


def button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def key_column(at: AppTest) -> dict[str, str]:
    providers = at.dataframe[0].value
    return dict(zip(providers["provider"], providers["key"]))


def walk(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from walk(child)


def everything_shown(at: AppTest) -> str:
    """Every value the page put on screen, and the raw protobuf of every element besides."""
    parts = [
        str(el.value)
        for kind in (
            "markdown",
            "text",
            "caption",
            "code",
            "title",
            "header",
            "subheader",
            "info",
            "success",
            "warning",
            "error",
            "json",
            "metric",
            "text_input",
        )
        for el in getattr(at, kind)
    ]
    parts += [table.value.to_csv() for table in at.dataframe]
    parts += [str(getattr(node, "proto", "")) for node in walk(at._tree)]
    return "\n".join(parts)


def test_renders_with_no_key_set():
    at = page()
    assert not at.exception
    keys = key_column(at)
    assert keys["openai"] == "not set" and keys["dashscope"] == "not set"
    assert keys["openai-compatible"].startswith("not set (optional")
    assert [h.value for h in at.header] == ["Providers", "Embedded model", "Capability probe"]
    assert any("No model has been probed yet" in i.value for i in at.info)


def test_the_providers_table_is_read_from_the_providers_infos():
    at = page()
    rows = at.dataframe[0].value
    infos = [info for info in provider_infos().values() if info.listed]
    assert list(rows["provider"]) == [info.name for info in infos]
    assert list(rows["key variable"]) == [info.api_key_variable or "-" for info in infos]
    assert list(rows["base URL variable"]) == [info.base_url_variable or "-" for info in infos]
    assert dict(zip(rows["provider"], rows["base URL variable"]))["dashscope"] == "DASHSCOPE_HTTP_BASE_URL"
    assert at.selectbox[0].options == [info.name for info in infos]


def test_a_provider_added_at_run_time_shows_with_its_variables(monkeypatch):
    toy = ProviderInfo(
        name="toy",
        label="Toy",
        hosted=True,
        factory=lambda config: None,
        description="a toy for this test",
        api_key_variable="TOY_API_KEY",
        base_url_variable="TOY_BASE_URL",
        suggested_models=("toy-1",),
    )
    monkeypatch.setenv("TOY_BASE_URL", "https://user:hunter2@toy.test/v1?api_key=abc")
    add_provider(toy)
    try:
        at = page()
        chosen = at.selectbox[0].set_value("toy").run()
    finally:
        remove_provider("toy")
    assert not at.exception
    assert chosen.text_input[0].value == "toy-1"  # its first suggested model
    rows = at.dataframe[0].value
    row = {k: v for k, v in zip(rows.columns, rows[rows["provider"] == "toy"].iloc[0])}
    assert row["key variable"] == "TOY_API_KEY" and row["key"] == "not set"
    assert row["base URL variable"] == "TOY_BASE_URL" and row["about"] == "a toy for this test"
    assert row["base URL"] == "https://toy.test/v1?api_key=***"
    assert "hunter2" not in everything_shown(at)


def test_a_set_key_is_reported_but_never_shown(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.secrets["DASHSCOPE_API_KEY"] = SECRET + "-dash"
    at.run()
    assert not at.exception
    keys = key_column(at)
    assert keys["openai"] == "set (environment variable)" and keys["dashscope"] == "set (st.secrets)"
    shown = everything_shown(at)
    assert "OPENAI_API_KEY" in shown and SECRET not in shown and SECRET[-8:] not in shown


def test_a_missing_key_stops_the_probe_with_what_to_do():
    at = page()
    at.selectbox[0].set_value("openai").run()
    button(at, "Run the probe").click().run()
    assert not at.exception
    errors = [shown(e.value) for e in at.error]  # the message is escaped: text, not Markdown
    assert any("OPENAI_API_KEY is not set" in e and "export OPENAI_API_KEY" in e for e in errors)
    assert list_profiles(open_store()) == []


@pytest.mark.parametrize(
    "name, expected",
    [
        (config.EMBEDDED_MODEL_FILE, "does not match the published SHA-256"),
        ("other.gguf", "SHA-256 " + hashlib.sha256(b"not a model").hexdigest()),
    ],
)
def test_verify_button_hashes_the_model_file(tmp_path, monkeypatch, name, expected):
    fake = tmp_path / name
    fake.write_bytes(b"not a model")
    monkeypatch.setenv("FLOWCALL_MODEL_PATH", str(fake))
    at = page()
    assert [m.value for m in at.metric] == ["yes", "0.0 MB", "no"]
    button(at, "Verify the SHA-256 now").click().run()
    assert not at.exception
    assert any(expected in el.value for el in [*at.error, *at.info])


def test_a_missing_model_file_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOWCALL_MODEL_PATH", str(tmp_path / "absent.gguf"))
    at = page()
    assert at.metric[0].value == "no" and button(at, "Verify the SHA-256 now").disabled
    assert any("flowcall model fetch" in w.value for w in at.warning)


@pytest.mark.model
def test_probe_of_the_embedded_model_fills_the_table_and_stores_it(model_path):
    at = page()
    assert at.selectbox[0].value == "local"
    button(at, "Run the probe").click().run(timeout=600)
    assert not at.exception and not at.error
    checks = at.dataframe[1].value
    assert list(checks["check"]) == ["native_tools", "json_schema_output", "parallel_tool_calls"]
    assert set(checks["result"]) <= {"pass", "fail"}
    # the label is Markdown: the model's name is escaped, as all outside text on the pages is
    assert at.status[0].label.startswith(f"{md('local')}/{md(Path(model_path).stem)}:")
    stored = list_profiles(open_store())
    assert [(p.provider, p.model) for p in stored] == [("local", Path(model_path).stem)]
    assert list(at.dataframe[2].value["provider"]) == ["local"]  # the stored profiles table
