"""get_weather on the bundled offline sample: every city, both modes, names, errors."""

from __future__ import annotations

import datetime as dt
import json
from zoneinfo import ZoneInfo

import pytest

from flowcall.core.config import REPO_ROOT

DATA = json.loads((REPO_ROOT / "plugins" / "data" / "weather.json").read_text(encoding="utf-8"))
CITIES = DATA["cities"]
LIVE_FIELDS = {"weather", "temperature", "humidity", "winddirection", "windpower"}
CAST_FIELDS = {
    "date",
    "week",
    "dayweather",
    "nightweather",
    "daytemp",
    "nighttemp",
    "daywind",
    "nightwind",
    "daypower",
    "nightpower",
    "precipitation_probability",
}


def local_today(city: dict) -> dt.date:
    return dt.datetime.now(ZoneInfo(city["timezone"])).date()


def test_dataset_covers_china_and_the_world() -> None:
    chinese = [c for c in CITIES if c["country"] == "中国"]
    assert len(CITIES) >= 40 and len(chinese) >= 25 and len(CITIES) - len(chinese) >= 15
    names = {c["name"] for c in CITIES} | {c["name_en"] for c in CITIES}
    for wanted in (
        "成都",
        "北京",
        "上海",
        "广州",
        "深圳",
        "杭州",
        "重庆",
        "西安",
        "武汉",
        "南京",
        "天津",
        "苏州",
        "长沙",
        "郑州",
        "青岛",
        "沈阳",
        "哈尔滨",
        "昆明",
        "厦门",
        "大连",
        "拉萨",
        "乌鲁木齐",
        "香港",
        "台北",
        "三亚",
        "London",
        "Paris",
        "New York",
        "Tokyo",
        "Seoul",
        "Singapore",
        "Sydney",
        "Berlin",
        "Moscow",
        "Dubai",
        "San Francisco",
        "Toronto",
        "Mumbai",
        "Cairo",
        "São Paulo",
    ):
        assert wanted in names


@pytest.mark.parametrize("city", CITIES, ids=[c["name_en"] for c in CITIES])
def test_city_record_is_complete(city: dict) -> None:
    assert set(city["live"]) == LIVE_FIELDS
    ZoneInfo(city["timezone"])
    assert [d["day"] for d in city["forecast"]] == [0, 1, 2]
    for day in city["forecast"]:
        assert day["daytemp"] >= day["nighttemp"]
        assert 0 <= day["precipitation_probability"] <= 100
    assert 0 <= city["live"]["humidity"] <= 100


def test_no_name_points_at_two_cities(plugin_module) -> None:
    weather = plugin_module("weather")
    owner: dict[str, str] = {}
    for city in CITIES:
        for name in (city["name"], city["name_en"], *city["aliases"]):
            key = weather.city_key(name)
            assert owner.setdefault(key, city["name"]) == city["name"], f"{name!r} is ambiguous"


@pytest.mark.parametrize("city", CITIES, ids=[c["name_en"] for c in CITIES])
def test_every_city_answers_now(call, city: dict) -> None:
    result = call("get_weather", location=city["name"], extensions="base")
    assert result["location"] == city["name"] and result["location_en"] == city["name_en"]
    assert result["source"] == "offline-sample"
    assert result["live"] == city["live"]
    now = dt.datetime.now(ZoneInfo(city["timezone"]))
    reported = dt.datetime.strptime(result["reporttime"], "%Y-%m-%d %H:%M:%S")
    assert abs(now.replace(tzinfo=None) - reported) < dt.timedelta(hours=1, minutes=1)
    json.dumps(result, ensure_ascii=False)


@pytest.mark.parametrize("city", CITIES, ids=[c["name_en"] for c in CITIES])
def test_every_city_forecasts_today_tomorrow_and_the_day_after(call, city: dict) -> None:
    before = local_today(city)
    result = call("get_weather", location=city["name_en"], extensions="all")
    after = local_today(city)
    assert result["source"] == "offline-sample" and "live" not in result
    casts = result["forecasts"]
    assert len(casts) == 3 and all(set(c) == CAST_FIELDS for c in casts)
    dates = [dt.date.fromisoformat(c["date"]) for c in casts]
    assert dates[0] in (before, after)
    assert dates == [dates[0] + dt.timedelta(days=n) for n in range(3)]
    for cast, date, day in zip(casts, dates, city["forecast"]):
        assert cast["week"].split()[1] == date.strftime("%A")
        assert cast["dayweather"] == day["dayweather"] and cast["nighttemp"] == day["nighttemp"]
        assert cast["precipitation_probability"] == f"{day['precipitation_probability']}%"


def test_chengdu_rains_tomorrow(call) -> None:
    """The seeds' commute question: 我明天要在成都上下班通勤,会下雨吗?"""
    chengdu = next(c for c in CITIES if c["name"] == "成都")
    before = local_today(chengdu)
    tomorrow = call("get_weather", location="成都", extensions="all")["forecasts"][1]
    after = local_today(chengdu)
    assert tomorrow["dayweather"] == "小雨"
    assert dt.date.fromisoformat(tomorrow["date"]) - dt.timedelta(days=1) in (before, after)
    assert int(tomorrow["precipitation_probability"].rstrip("%")) >= 60


def test_extensions_defaults_to_now(call) -> None:
    assert "live" in call("get_weather", location="北京")


@pytest.mark.parametrize(
    ("spoken", "city"),
    [
        ("成都市", "成都"),
        ("Chengdu", "成都"),
        ("chengdu", "成都"),
        ("  CHENGDU city ", "成都"),
        ("蓉城", "成都"),
        ("四川成都", "成都"),
        ("成都市武侯区", "成都"),
        ("北京市", "北京"),
        ("peking", "北京"),
        ("new york", "纽约"),
        ("NYC", "纽约"),
        ("New York City", "纽约"),
        ("newyork", "纽约"),
        ("Sao Paulo", "圣保罗"),
        ("são paulo", "圣保罗"),
        ("xian", "西安"),
        ("Xi'an", "西安"),
        ("Ürümqi", "乌鲁木齐"),
        ("hong kong", "香港"),
        ("HK", "香港"),
        ("東京", "东京"),
        ("LA", "洛杉矶"),
        ("san francisco", "旧金山"),
        ("London City", "伦敦"),
    ],
)
def test_names_aliases_case_and_spacing(call, spoken: str, city: str) -> None:
    assert call("get_weather", location=spoken)["location"] == city


@pytest.mark.parametrize("spoken", ["Atlantis", "火星", "", "   ", "市", "Springfield"])
def test_unknown_city_names_known_ones(call, spoken: str) -> None:
    with pytest.raises(ValueError, match=r"unknown city .*known cities include: .*成都.*London"):
        call("get_weather", location=spoken)


def test_two_cities_in_one_text_is_not_guessed(call) -> None:
    with pytest.raises(ValueError, match="unknown city"):
        call("get_weather", location="北京到上海")


def test_bad_extensions_is_rejected_before_the_tool_runs(call) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        call("get_weather", location="成都", extensions="tomorrow")


def test_data_dir_setting_is_honoured(call, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("FLOWCALL_DATA_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="FLOWCALL_DATA_DIR"):
        call("get_weather", location="成都")
    one = {"cities": [CITIES[0] | {"live": CITIES[0]["live"] | {"temperature": 99}}]}
    (tmp_path / "weather.json").write_text(json.dumps(one), encoding="utf-8")
    assert call("get_weather", location=CITIES[0]["name"])["live"]["temperature"] == 99


@pytest.mark.parametrize("city", CITIES[:3] + CITIES[-3:], ids=lambda c: c["name_en"])
def test_get_day_weather_gives_one_day_with_rain_said_outright(call, city: dict) -> None:
    for offset, day in enumerate(city["forecast"]):
        date = (local_today(city) + dt.timedelta(days=offset)).isoformat()
        result = call("get_day_weather", location=city["name"], date=date)
        [cast] = result["forecasts"]
        assert cast["date"] == date and cast["daytemp"] == day["daytemp"]
        assert cast["rain_day"] == ("雨" in day["dayweather"]) and cast["rain_night"] == (
            "雨" in day["nightweather"]
        )
        assert cast["rain_probability"] == round(day["precipitation_probability"] / 100, 2)
        assert ("live" in result) == (offset == 0)  # today's comes with the current conditions


@pytest.mark.parametrize("date", ["tomorrow", "2026-13-01", "1999-01-01"])
def test_get_day_weather_refuses_a_day_it_cannot_give_and_says_which_it_can(call, date: str) -> None:
    with pytest.raises(Exception, match="YYYY-MM-DD|the forecast covers"):
        call("get_day_weather", location="成都", date=date)
