"""Every value of an answer traced to the tool result it came from, the question, or the model."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from flowcall.core.messages import ToolCall
from flowcall.engine.provenance import trace, traced_share
from flowcall.tools.execute import CallOutcome

ROOT = Path(__file__).resolve().parents[1]


def weather_plugin():
    spec = importlib.util.spec_from_file_location("weather_plugin", ROOT / "plugins" / "weather.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def commute_outcome(city: str = "成都") -> tuple[CallOutcome, str]:
    plugin = weather_plugin()
    # tomorrow in the city's own time zone, as the plugin counts days (not this machine's date:
    # from 16:00 UTC on, UTC's tomorrow is already Chengdu's today)
    tomorrow = plugin.get_weather(city, "all")["forecasts"][1]["date"]
    result = plugin.get_day_weather(city, tomorrow)
    return CallOutcome(
        ToolCall(id="call_1", name="get_day_weather", arguments={"location": city, "date": tomorrow}),
        None,
        result=result,
    ), tomorrow


def by_path(provenance):
    return {entry["path"]: entry for entry in provenance}


def test_the_commute_card_is_traced_to_get_day_weather():
    """The card as the commute flow's polish model writes it: every value is the tool's, the
    probability written as a fraction or as a percentage; the sentences are the model's own."""
    outcome, tomorrow = commute_outcome()
    day = outcome.result["forecasts"][0]
    card = {
        "location": "成都",
        "date": tomorrow,
        "weather": {
            "condition": day["dayweather"],
            "temp_high": day["daytemp"],
            "temp_low": day["nighttemp"],
            "rain_probability": 70,
            "summary": f"明天{day['dayweather']},{day['nighttemp']}到{day['daytemp']}度",
        },
        "commute_advice": {
            "go_to_work": {"need_umbrella": day["rain_day"], "suggest_clothing": "穿厚外套,带伞出门"},
            "back_home": {"need_umbrella": day["rain_night"]},
        },
    }
    provenance = trace(card, [outcome], "明天成都通勤天气怎么样?")
    found = by_path(provenance)
    for path in (
        "/location",
        "/date",
        "/weather/condition",
        "/weather/temp_high",
        "/weather/temp_low",
        "/weather/rain_probability",
        "/commute_advice/go_to_work/need_umbrella",
        "/commute_advice/back_home/need_umbrella",
    ):
        assert found[path]["source"] == "tool" and found[path]["tool"] == "get_day_weather", (
            path,
            found[path],
        )
        assert found[path]["tool_call_id"] == "call_1"
    assert found["/weather/temp_high"]["result_path"] == "/forecasts/0/daytemp"
    assert found["/weather/temp_low"]["result_path"] == "/forecasts/0/nighttemp"
    assert found["/weather/rain_probability"]["match"] == "normalised"  # 70 for 0.7 / "70%"
    assert found["/commute_advice/go_to_work/need_umbrella"]["result_path"] == "/forecasts/0/rain_day"
    # the summary is the model's sentence, and its numbers are the tool's
    summary = found["/weather/summary"]
    assert summary["kind"] == "text" and all(p["source"] == "tool" for p in summary["parts"])
    assert found["/commute_advice/go_to_work/suggest_clothing"]["source"] == "model"
    traced, values = traced_share(provenance)
    assert (traced, values) == (values, 10)  # 8 values and the summary's two numbers


def test_an_invented_value_is_marked_as_the_models():
    outcome, tomorrow = commute_outcome()
    card = {"location": "成都", "date": tomorrow, "weather": {"condition": "晴", "temp_high": 31}}
    found = by_path(trace(card, [outcome], "成都明天天气"))
    assert (
        found["/weather/condition"]["source"] == "model" and found["/weather/temp_high"]["source"] == "model"
    )
    assert found["/location"]["source"] == "tool"
    # with no tool result at all, every value is the model's, unless the question gave it
    found = by_path(trace(card, [], "成都明天天气"))
    assert found["/location"]["source"] == "question" and found["/weather/temp_high"]["source"] == "model"


def test_a_text_answer_traces_its_numbers_and_quoted_names():
    outcome, _ = commute_outcome()
    text = "成都明天“小雨”,最高16度,最低8度,降雨概率70%,风力9级。"
    parts = trace(text, [outcome], "成都明天天气")
    assert [(p["value"], p["source"]) for p in parts] == [
        ("小雨", "tool"),
        (16, "tool"),
        (8, "tool"),
        (70, "tool"),
        (9, "model"),
    ]
    assert all(text[p["span"][0] : p["span"][1]] == str(p["value"]) for p in parts)


def test_a_failed_call_backs_nothing():
    outcome, _ = commute_outcome()
    failed = CallOutcome(
        outcome.call, None, result=outcome.result, error_code="TOOL_ERROR", error_message="boom"
    )
    assert by_path(trace({"t": 16}, [failed], "?"))["/t"]["source"] == "model"


def test_no_answer_has_no_provenance():
    assert trace(None, [], "q") is None and trace("", [], "q") is None


def test_a_time_added_to_a_tools_date_is_not_traced_to_it():
    """The polish model wrote "2026-11-28 12:00" where the tool gave only the date: the time
    is invented, so the value is the model's; a name inside a longer one still matches."""
    outcome, tomorrow = commute_outcome()
    found = by_path(
        trace({"local_time": f"{tomorrow} 12:00", "city": "成都市", "day": tomorrow}, [outcome], "?")
    )
    assert found["/local_time"]["source"] == "model"
    assert found["/city"]["source"] == "tool" and found["/city"]["match"] == "normalised"
    assert found["/day"]["match"] == "exact"
