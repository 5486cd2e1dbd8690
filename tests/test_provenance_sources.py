"""Provenance judges the source, not only the value: a value in another form (a translation, a
time inside a timestamp) is traced; a stand-in copied from the wrong tool and a value mixed from
two sources are marked, count as unbacked, and say why. Real plugin results, no model."""

from __future__ import annotations

import datetime as dt
import importlib.util
from pathlib import Path

from flowcall.core.messages import ToolCall
from flowcall.engine.provenance import trace, traced_share, unbacked_value
from flowcall.rendering import provenance_rows, provenance_summary, source_line
from flowcall.tools.execute import CallOutcome

ROOT = Path(__file__).resolve().parents[1]
OFFERED = ["get_weather", "get_current_time"]


def plugin(name: str):
    spec = importlib.util.spec_from_file_location(f"{name}_plugin", ROOT / "plugins" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def called(tool: str, result, call_id: str = "call_1", **arguments) -> CallOutcome:
    return CallOutcome(ToolCall(id=call_id, name=tool, arguments=arguments), None, result=result)


def weather(city: str, call_id: str = "call_1") -> CallOutcome:
    return called("get_weather", plugin("weather").get_weather(city), call_id, location=city)


def by_path(provenance):
    return {entry["path"]: entry for entry in provenance}


# --- 1. right values in another form are traced ---------------------------------------------


def test_an_english_weather_term_is_traced_to_the_tools_chinese_one():
    outcome = weather("北京")  # the offline sample: 晴, wind from the 西北
    live = outcome.result["live"]
    assert (live["weather"], live["winddirection"]) == ("晴", "西北")
    found = by_path(
        trace(
            {"condition": "Sunny", "wind": "NW", "wind_direction": "northwest wind"},
            [outcome],
            "Weather in Beijing?",
        )
    )
    for path, result_path in (
        ("/condition", "/live/weather"),
        ("/wind", "/live/winddirection"),
        ("/wind_direction", "/live/winddirection"),
    ):
        assert found[path]["source"] == "tool" and found[path]["match"] == "translated", found[path]
        assert found[path]["result_path"] == result_path
    # AMap's other terms, in any case; a wrong translation is still the model's own
    amap = called(
        "get_weather",
        {
            "live": {"weather": "小雨", "winddirection": "东北"},
            "forecasts": [{"dayweather": "多云", "nightweather": "雷阵雨"}],
        },
    )
    found = by_path(
        trace(
            {
                "now": "LIGHT RAIN",
                "day": "Cloudy",
                "night": "Thundershowers",
                "wind": "Northeast",
                "tomorrow": "Sunny",
            },
            [amap],
            "?",
        )
    )
    assert [found[p]["match"] for p in ("/now", "/day", "/night", "/wind")] == ["translated"] * 4
    assert found["/tomorrow"]["source"] == "model"


def test_a_short_word_is_traced_to_its_translation_not_to_a_word_it_sits_inside():
    """ "NE" sits inside the sample's "offline-sample": only a whole word is one name inside another."""
    outcome = weather("上海")
    assert outcome.result["live"]["winddirection"] == "东北" and outcome.result["source"] == "offline-sample"
    found = by_path(trace({"wind": "NE", "mode": "line"}, [outcome], "?"))
    assert found["/wind"]["result_path"] == "/live/winddirection" and found["/wind"]["match"] == "translated"
    assert found["/mode"]["source"] == "model"  # not "offline"


def test_a_chinese_answer_is_traced_to_a_tools_english_term():
    outcome = called("get_weather", {"current": {"condition": "Light Rain", "wind_dir": "NE"}})
    found = by_path(trace({"天气": "小雨", "风向": "东北风", "明天": "晴"}, [outcome], "北京天气"))
    assert found["/天气"]["result_path"] == "/current/condition" and found["/天气"]["match"] == "translated"
    assert found["/风向"]["result_path"] == "/current/wind_dir"
    assert found["/明天"]["source"] == "model"


def test_a_time_or_date_inside_a_tools_timestamp_is_traced():
    now = plugin("clock").get_current_time(
        "Asia/Shanghai"
    )  # "time": "23:30:05", "datetime": "...T23:30:05+08:00"
    clock = called("get_current_time", now, timezone="Asia/Shanghai")
    hour, minute = now["time"][:5].split(":")
    other = f"{hour}:{(int(minute) + 1) % 60:02d}"
    found = by_path(
        trace(
            {"time": now["time"][:5], "at": f"{now['date']} {now['time'][:5]}", "wrong": other},
            [clock],
            "现在几点?",
        )
    )
    assert found["/time"]["source"] == "tool" and found["/time"]["result_path"] == "/time"
    assert found["/time"]["match"] == "normalised"
    assert found["/at"]["source"] == "tool" and found["/at"]["result_path"] == "/datetime"
    assert found["/wrong"]["source"] == "model"
    stamps = called(
        "get_weather", {"reporttime": "2026-11-29 23:30:00", "updated": "2026-11-29T23:30:00+08:00"}
    )
    found = by_path(trace({"a": "23:30", "b": "2026-11-29", "c": "23:31", "d": "2026-11-30"}, [stamps], "?"))
    assert [found[p]["source"] for p in ("/a", "/b", "/c", "/d")] == ["tool", "tool", "model", "model"]
    # inside a text answer too
    [part] = trace("报告时间 23:30。", [stamps], "?")
    assert part["source"] == "tool" and part["match"] == "normalised"


# --- 2. a stand-in from the wrong source ----------------------------------------------------


def stand_in_card(outcome: CallOutcome) -> dict:
    return {
        "city": "北京",
        "weather": outcome.result["live"]["weather"],
        "local_time": outcome.result["reporttime"][:16],
    }


def test_a_time_copied_from_the_weather_tool_is_a_stand_in():
    """The product's case: the time tool was offered and never called; the card's local_time is
    the weather's reporttime. Traced to get_weather, but get_weather does not give the time."""
    outcome = weather("北京")
    provenance = trace(stand_in_card(outcome), [outcome], "北京现在几点,天气怎么样?", offered=OFFERED)
    found = by_path(provenance)
    stand_in = found["/local_time"]
    assert stand_in["source"] == "wrong_source" and stand_in["tool"] == "get_weather"
    assert stand_in["result_path"] == "/reporttime"
    assert stand_in["why"] == (
        "local_time came from get_weather's reporttime; get_current_time gives it and gave no "
        "result in this run"
    )
    assert unbacked_value(stand_in)
    assert (
        found["/weather"]["source"] == "tool" and found["/city"]["source"] == "tool"
    )  # their keys name no other tool
    assert traced_share(provenance) == (2, 3)
    # the offered tools named as a flow names them (namespace/version/name) are the same tools
    versioned = by_path(
        trace(
            stand_in_card(outcome),
            [outcome],
            "?",
            offered=["weather/v1/get_weather", "time/v1/get_current_time"],
        )
    )
    assert versioned["/local_time"]["why"] == stand_in["why"] and versioned["/weather"]["source"] == "tool"
    # without the offered tools, as before: traced to the value it matches
    assert by_path(trace(stand_in_card(outcome), [outcome], "?"))["/local_time"]["source"] == "tool"


def test_a_failed_time_call_gave_no_result():
    outcome = weather("北京")
    failed = CallOutcome(
        ToolCall(id="call_2", name="get_current_time", arguments={}),
        None,
        error_code="TOOL_ERROR",
        error_message="boom",
    )
    found = by_path(trace(stand_in_card(outcome), [outcome, failed], "?", offered=OFFERED))
    assert found["/local_time"]["why"].endswith("get_current_time gives it and gave no result in this run")


def test_the_designated_tools_result_is_preferred_and_a_disagreeing_one_is_said():
    outcome = weather("北京")
    reported = dt.datetime.fromisoformat(outcome.result["reporttime"])
    agreeing = called(
        "get_current_time",
        {"datetime": reported.isoformat() + "+08:00", "time": f"{reported:%H:%M:%S}"},
        "call_2",
    )
    found = by_path(trace(stand_in_card(outcome), [outcome, agreeing], "?", offered=OFFERED))
    assert found["/local_time"]["source"] == "tool" and found["/local_time"]["tool"] == "get_current_time"
    later = reported + dt.timedelta(minutes=47)
    disagreeing = called(
        "get_current_time", {"datetime": later.isoformat() + "+08:00", "time": f"{later:%H:%M:%S}"}, "call_2"
    )
    found = by_path(trace(stand_in_card(outcome), [outcome, disagreeing], "?", offered=OFFERED))
    assert found["/local_time"]["source"] == "wrong_source"
    assert found["/local_time"]["why"].endswith("get_current_time gives it and its result says otherwise")


def test_keys_are_read_by_their_words():
    """camelCase and snake_case keys alike; a key whose words no offered tool's name shares is
    judged as before, whichever tool gave it."""
    outcome = weather("北京")
    card = {"localTime": outcome.result["reporttime"][:16], "report_date": outcome.result["reporttime"][:10]}
    found = by_path(trace(card, [outcome], "?", offered=OFFERED))
    assert found["/localTime"]["source"] == "wrong_source"
    assert found["/report_date"]["source"] == "tool"


# --- 3. values that mix two sources --------------------------------------------------------

SHANGHAI = {
    "city": "上海市",
    "province": "上海",
    "reporttime": "2026-11-29 23:00:00",
    "live": {"weather": "晴", "temperature": 12, "winddirection": "东北"},
}


def test_a_place_from_the_question_with_another_places_weather_is_mixed():
    outcome = called("get_weather", SHANGHAI, location="上海")
    provenance = trace({"city": "Beijing", "condition": "晴"}, [outcome], "Weather in Beijing?")
    found = by_path(provenance)
    city = found["/city"]
    assert city["source"] == "question"
    assert (
        city["mixed"]
        == "the city is Beijing as the question says, but condition comes from get_weather for 上海"
    )
    assert unbacked_value(city) and traced_share(provenance) == (1, 2)
    assert "mixed" not in found["/condition"]


def test_the_offline_samples_other_city_is_mixed_too():
    outcome = weather("上海")  # location 上海, location_en Shanghai
    card = {
        "location": "Beijing",
        "temperature": outcome.result["live"]["temperature"],
        "humidity": outcome.result["live"]["humidity"],
    }
    found = by_path(trace(card, [outcome], "Weather in Beijing?"))
    assert found["/location"]["mixed"].endswith("temperature and humidity come from get_weather for 上海")


def test_the_same_place_written_another_way_is_not_mixed():
    amap = {**SHANGHAI, "city": "北京市", "province": "北京"}
    found = by_path(
        trace(
            {"city": "Beijing", "condition": "晴"},
            [called("get_weather", amap, location="北京")],
            "Weather in Beijing?",
        )
    )
    assert "mixed" not in found["/city"] and found["/city"]["source"] == "tool"
    assert found["/city"]["match"] == "translated"  # Beijing is 北京市 in pinyin
    # a result that names no place: the call's argument is compared, in pinyin or one name inside the other
    bare = {"live": {"weather": "晴", "temperature": 6}}
    for question, city, location in (
        ("Weather in Beijing?", "Beijing", "北京"),
        ("北京天气", "北京", "北京市"),
        ("北京天气", "北京", "Beijing"),
    ):
        found = by_path(
            trace(
                {"city": city, "temperature": 6}, [called("get_weather", bare, location=location)], question
            )
        )
        assert found["/city"]["source"] == "question" and "mixed" not in found["/city"], (city, location)
        assert not unbacked_value(found["/city"])


def test_only_names_are_compared():
    """A code or a value with digits is no name: a call for adcode 310000 says nothing of the city."""
    outcome = called("get_weather", {"live": {"weather": "晴"}}, location="310000")
    found = by_path(trace({"city": "Beijing", "condition": "晴"}, [outcome], "Weather in Beijing?"))
    assert "mixed" not in found["/city"]
    # nor is a value of another kind: the call's unit is not a place, and a unit is neither place nor name
    outcome = called("get_weather", {"live": {"weather": "晴"}}, units="metric")
    found = by_path(
        trace({"city": "Beijing", "unit": "Celsius", "condition": "晴"}, [outcome], "Beijing in Celsius?")
    )
    assert "mixed" not in found["/city"] and "mixed" not in found["/unit"]


def test_a_name_from_the_question_with_another_persons_record_is_mixed():
    outcome = called("lookup_employee", {"name": "Bob Li", "email": "bob@example.com"}, name="Bob")
    found = by_path(trace({"name": "Alice", "email": "bob@example.com"}, [outcome], "What is Alice's email?"))
    assert found["/name"]["mixed"] == (
        "the name is Alice as the question says, but email comes from lookup_employee for Bob"
    )


# --- 4. rendering ------------------------------------------------------------------------------


def test_rows_and_summary_show_stand_ins_and_mixed_values():
    shanghai = called("get_weather", SHANGHAI, location="上海")
    card = {"city": "Beijing", "local_time": "2026-11-29 23:00", "temperature": 12, "rain": 0.9}
    provenance = trace(card, [shanghai], "Weather in Beijing?", offered=OFFERED)
    rows = {row["field"]: row for row in provenance_rows(provenance)}
    assert rows["/local_time"]["source"] == "wrong source"
    assert rows["/local_time"]["where"].startswith("local_time came from get_weather's reporttime")
    assert rows["/city"]["source"] == "mixed" and "get_weather for 上海" in rows["/city"]["where"]
    assert rows["/temperature"]["source"] == "tool" and rows["/rain"]["source"] == "model"
    assert provenance_summary(provenance) == (
        "1 of 4 values traced to tool results or the question; 1 from the "
        "model; 1 stand-in from the wrong tool; 1 mixing two sources"
    )
    entries = by_path(provenance)
    assert source_line(entries["/local_time"]).startswith("⚠ local_time came from")
    assert source_line(entries["/city"]).startswith("⚠ the city is Beijing")


def test_a_translated_value_says_so_where_it_came_from():
    found = trace({"condition": "Sunny"}, [weather("北京")], "?")
    assert provenance_rows(found)[0]["where"] == "get_weather → /live/weather (translated)"
