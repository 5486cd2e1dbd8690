"""The base URL the Models page names for provider dashscope is the one a dashscope flow's
requests go to: the page's variable is set to a local server, a completion is asked for through
`provider_for` (as a run builds it), and the request must arrive there."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from flowcall.core.errors import ConfigError
from flowcall.core.spec import ModelConfig
from flowcall.providers import provider_for

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "models.py")
KEY = "sk-dashscope-SECRET-42"
OTHER_VARIABLES = ("DASHSCOPE_BASE_URL", "DASHSCOPE_HTTP_BASE_URL")


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for name in OTHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DASHSCOPE_API_KEY", KEY)


def base_url_variable_on_the_page(provider: str) -> str:
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    rows = at.dataframe[0].value
    return dict(zip(rows["provider"], rows["base URL variable"]))[provider]


def test_the_variable_the_models_page_names_is_where_dashscope_sends(
    fake_server, recorded, weather_request, monkeypatch
) -> None:
    variable = base_url_variable_on_the_page("dashscope")
    ok = recorded("dashscope_tool_calls")
    fake_server.answer((ok["http_status"], ok["body"]))
    monkeypatch.setenv(variable, f"{fake_server.base_url}/api/v1")

    turn = provider_for(ModelConfig(provider="dashscope", model="qwen-plus")).complete(weather_request)

    assert [c.name for c in turn.tool_calls] == ["get_weather", "get_traffic"]
    assert [r["path"] for r in fake_server.requests] == ["/api/v1/services/aigc/text-generation/generation"]
    assert fake_server.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
    assert turn.wire_request["base_url"] == f"{fake_server.base_url}/api/v1"


def test_the_compatible_mode_variable_alone_is_refused_with_what_to_set(monkeypatch) -> None:
    """DASHSCOPE_BASE_URL (the OpenAI-compatible mode's, .../compatible-mode/v1) was once named for
    this provider: set alone, a run would go to the default region instead of the one meant."""
    monkeypatch.setenv("DASHSCOPE_BASE_URL", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1")
    with pytest.raises(ConfigError) as caught:
        provider_for(ModelConfig(provider="dashscope", model="qwen-plus"))
    message = str(caught.value)
    assert "DASHSCOPE_HTTP_BASE_URL" in message and "/api/v1" in message and KEY not in message


def test_both_set_the_native_one_wins(fake_server, recorded, weather_request, monkeypatch) -> None:
    ok = recorded("dashscope_tool_calls")
    fake_server.answer((ok["http_status"], ok["body"]))
    monkeypatch.setenv("DASHSCOPE_BASE_URL", "http://127.0.0.1:9/compatible-mode/v1")
    monkeypatch.setenv("DASHSCOPE_HTTP_BASE_URL", f"{fake_server.base_url}/api/v1")
    provider_for(ModelConfig(provider="dashscope", model="qwen-plus")).complete(weather_request)
    assert len(fake_server.requests) == 1
