"""Weather: current conditions or a 3-day forecast for a city.

Answers from the bundled offline sample (data/weather.json, invented values) unless AMAP_API_KEY
is set; then it asks AMap (高德) and fails loudly when AMap cannot answer, so sample data is never
passed off as real weather. Both sources return the same shape, modelled on AMap's reply.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import unicodedata
from typing import Any, Literal
from zoneinfo import ZoneInfo

import httpx

from flowcall.core.config import data_dir
from flowcall.tools.python_plugins import tool

AMAP_URL = "https://restapi.amap.com/v3/weather/weatherInfo"
AMAP_TIMEOUT_S = 10.0
# The transport AMap requests go through; None means the real network. Tests set an
# httpx.MockTransport here, since the real API is out of their reach.
AMAP_TRANSPORT: httpx.BaseTransport | None = None

WEEKDAYS = (
    "星期一 Monday",
    "星期二 Tuesday",
    "星期三 Wednesday",
    "星期四 Thursday",
    "星期五 Friday",
    "星期六 Saturday",
    "星期日 Sunday",
)
SAMPLE_NOTE = "离线示例数据,非实时天气 / offline sample data, not live weather"


class WeatherServiceError(RuntimeError):
    """The real weather API (AMap) could not answer."""


@tool(
    "weather/v1/get_weather",
    read_only=True,
    open_world=bool(os.environ.get("AMAP_API_KEY")),  # only the AMap path leaves the machine
    timeout_s=AMAP_TIMEOUT_S + 5,  # let AMap's own timeout fire first, with its clear message
)
def get_weather(location: str, extensions: Literal["base", "all"] = "base") -> dict[str, Any]:
    """获取城市天气:实况或未来3天预报。用户问天气、下雨、气温、风时使用。
    Get a city's current weather or 3-day forecast.

    Args:
        location: 城市名称,例如:成都、北京、London
        extensions: 气象类型:
            - base: 返回实况天气,适用于查询"现在"、"当前"、"实时"的天气
            - all: 返回预报天气(今天起3天),适用于查询"明天"、"后天"、"未来几天"的天气
    """
    key = os.environ.get("AMAP_API_KEY", "").strip()
    if key:
        return amap_weather(location, extensions, key)
    cities = load_cities()
    city = find_city(location, cities)
    if city is None:
        raise ValueError(unknown_city_message(location, cities))
    return sample_live(city) if extensions == "base" else sample_forecast(city)


@tool(
    "weather/v1/get_day_weather",
    read_only=True,
    open_world=bool(os.environ.get("AMAP_API_KEY")),
    timeout_s=AMAP_TIMEOUT_S + 5,
)
def get_day_weather(location: str, date: str) -> dict[str, Any]:
    """获取城市某一天的天气预报(今天起3天内),今天的还带实况。用户问天气、下雨、气温、风时使用。
    Get a city's weather for one day (today or the next two); today's includes the current conditions.

    Args:
        location: 城市名称,例如:成都、北京、London
        date: 哪一天,YYYY-MM-DD,例如 2026-03-01;问现在或今天的天气写今天的日期
    """
    # get_weather gives three days at once: a small model writing tomorrow's card copied the first (today)
    # on 10 of 10 questions. One day, with what a card needs said outright (rain by day and by
    # night, the probability as a fraction), leaves nothing to pick or convert.
    try:
        wanted = dt.date.fromisoformat(date.strip())
    except ValueError:
        raise ValueError(f"date must be a day written YYYY-MM-DD, such as 2026-03-01, not {date!r}") from None
    forecast = get_weather(location, "all")
    days = [d for d in forecast.get("forecasts", []) if d.get("date") == wanted.isoformat()]
    if not days:
        known = ", ".join(str(d.get("date")) for d in forecast.get("forecasts", []))
        raise ValueError(
            f"no forecast for {wanted.isoformat()} in {forecast.get('location')}: the forecast covers "
            f"{known}; ask for one of these days"
        )
    result = {**forecast, "forecasts": [_with_rain(days[0])]}
    if days[0] is forecast["forecasts"][0]:  # today: the current conditions too
        result["live"] = get_weather(location, "base").get("live")
    return result


def _with_rain(day: dict[str, Any]) -> dict[str, Any]:
    probability = str(day.get("precipitation_probability") or "").rstrip("%")
    extra: dict[str, Any] = {
        "rain_day": "雨" in str(day.get("dayweather") or ""),
        "rain_night": "雨" in str(day.get("nightweather") or ""),
    }
    if probability.replace(".", "", 1).isdigit():
        extra["rain_probability"] = round(float(probability) / 100, 2)
    return {**day, **extra}


# --- the offline sample -------------------------------------------------------------------


def load_cities() -> list[dict[str, Any]]:
    path = data_dir() / "weather.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"weather data {path} is missing; restore plugins/data or fix FLOWCALL_DATA_DIR"
        )
    return json.loads(path.read_text(encoding="utf-8"))["cities"]


def city_key(text: str) -> str:
    """Fold a place name for matching: case, accents, spaces, punctuation, a trailing 市/city."""
    folded = "".join(
        ch for ch in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(ch)
    )
    folded = re.sub(r"[\s'’.\-·,]+", "", folded)
    return re.sub(r"(市|city)$", "", folded) or folded


def _is_cjk(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def find_city(location: str, cities: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Exact name, English name or alias; else the one city whose name sits inside the text
    (so "四川成都" or "成都市武侯区" find 成都). None when nothing or several match."""
    wanted = city_key(location)
    if not wanted:
        return None
    keys = {id(c): {city_key(n) for n in (c["name"], c["name_en"], *c["aliases"])} for c in cities}
    for city in cities:
        if wanted in keys[id(city)]:
            return city
    inside = [
        city
        for city in cities
        if any(k in wanted for k in keys[id(city)] if len(k) >= (2 if _is_cjk(k) else 4))
    ]
    return inside[0] if len(inside) == 1 else None


def unknown_city_message(location: str, cities: list[dict[str, Any]]) -> str:
    chinese = [c["name"] for c in cities if c["country"] == "中国"][:12]
    world = [c["name_en"] for c in cities if c["country"] != "中国"][:8]
    return (
        f"unknown city '{location}'; known cities include: {', '.join(chinese + world)} "
        f"({len(cities)} cities in the offline sample). Give one of these city names."
    )


def _local_now(city: dict[str, Any]) -> dt.datetime:
    return dt.datetime.now(ZoneInfo(city["timezone"]))


def _header(city: dict[str, Any]) -> dict[str, Any]:
    return {
        "location": city["name"],
        "location_en": city["name_en"],
        "source": "offline-sample",
        "note": SAMPLE_NOTE,
        "unit": "℃",
    }


def sample_live(city: dict[str, Any]) -> dict[str, Any]:
    now = _local_now(city)
    return {**_header(city), "reporttime": now.strftime("%Y-%m-%d %H:00:00"), "live": dict(city["live"])}


def sample_forecast(city: dict[str, Any]) -> dict[str, Any]:
    """Forecast day offsets become dates counted from today in the city's own time zone."""
    today = _local_now(city).date()
    forecasts = []
    for day in city["forecast"]:
        date = today + dt.timedelta(days=day["day"])
        cast = {k: v for k, v in day.items() if k not in ("day", "precipitation_probability")}
        forecasts.append(
            {
                "date": date.isoformat(),
                "week": WEEKDAYS[date.weekday()],
                **cast,
                "precipitation_probability": f"{day['precipitation_probability']}%",
            }
        )
    return {**_header(city), "forecasts": forecasts}


# --- the real API: AMap (高德) ---------------------------------------------------------------


def amap_weather(
    location: str,
    extensions: Literal["base", "all"],
    key: str,
    transport: httpx.BaseTransport | None = None,
) -> dict[str, Any]:
    """Ask AMap and map its reply to this tool's shape. AMap wants an adcode; a city the
    sample knows is sent by its adcode, anything else as the text given."""
    known = find_city(location, load_cities())
    query = (known or {}).get("adcode") or location.strip()
    params = {"city": query, "key": key, "extensions": extensions, "output": "JSON"}
    reply = _amap_get(params, key, transport)
    if not isinstance(reply, dict) or reply.get("status") != "1":
        info = reply.get("info", "no info") if isinstance(reply, dict) else "not a JSON object"
        code = reply.get("infocode", "?") if isinstance(reply, dict) else "?"
        raise WeatherServiceError(
            f"AMap refused the weather request: {info} (infocode {code}); check AMAP_API_KEY"
        )
    rows = reply.get("lives" if extensions == "base" else "forecasts") or []
    if not rows:
        raise WeatherServiceError(
            f"AMap has no weather for '{location}'; AMap covers "
            "China only, give a Chinese city such as 成都 or 北京"
        )
    return _amap_shape(rows[0], extensions)


def _amap_get(params: dict[str, str], key: str, transport: httpx.BaseTransport | None) -> Any:
    """AMap's reply as JSON; a failed request says so without the key in it."""
    try:
        with httpx.Client(timeout=AMAP_TIMEOUT_S, transport=transport or AMAP_TRANSPORT) as client:
            response = client.get(AMAP_URL, params=params)
        if response.status_code != 200:
            raise WeatherServiceError(
                f"AMap weather API answered HTTP {response.status_code}; try again later"
            )
        return response.json()
    except (httpx.HTTPError, ValueError) as exc:
        detail = str(exc).replace(key, "***") or type(exc).__name__
        raise WeatherServiceError(
            f"AMap weather request failed ({detail}); check the network, or unset AMAP_API_KEY "
            "to use the offline sample"
        ) from exc


def _amap_shape(row: dict[str, Any], extensions: str) -> dict[str, Any]:
    """One row of AMap's reply in this tool's shape: the weather now, or the coming days."""
    header = {
        "location": _text(row.get("city")),
        "province": _text(row.get("province")),
        "adcode": _text(row.get("adcode")),
        "source": "amap",
        "unit": "℃",
    }
    if extensions == "base":
        live = {
            "weather": _text(row.get("weather")),
            "temperature": _number(row.get("temperature")),
            "humidity": _number(row.get("humidity")),
            "winddirection": _text(row.get("winddirection")),
            "windpower": _text(row.get("windpower")),
        }
        return {**header, "reporttime": _text(row.get("reporttime")), "live": live}
    return {
        **header,
        "reporttime": _text(row.get("reporttime")),
        "forecasts": [_amap_cast(cast) for cast in row.get("casts") or []],
    }


def _amap_cast(cast: dict[str, Any]) -> dict[str, Any]:
    week = _number(cast.get("week"))
    return {
        "date": _text(cast.get("date")),
        "week": WEEKDAYS[week - 1] if isinstance(week, int) and 1 <= week <= 7 else _text(cast.get("week")),
        **{k: _text(cast.get(k)) for k in ("dayweather", "nightweather")},
        **{k: _number(cast.get(k)) for k in ("daytemp", "nighttemp")},
        **{k: _text(cast.get(k)) for k in ("daywind", "nightwind", "daypower", "nightpower")},
    }


def _text(value: Any) -> str | None:
    """AMap sends an empty list for a missing field; everything else arrives as a string."""
    return value if isinstance(value, str) and value else None


def _number(value: Any) -> int | float | str | None:
    text = _text(value)
    if text is None:
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
