"""get_weather against AMap (高德). The real API is out of reach here, so httpx.MockTransport serves
replies shaped like AMap's recorded ones; everything else (mapping, errors) is the real code."""

from __future__ import annotations

import httpx
import pytest

KEY = "test-amap-key-0123"

LIVE_REPLY = {
    "status": "1",
    "count": "1",
    "info": "OK",
    "infocode": "10000",
    "lives": [
        {
            "province": "四川",
            "city": "成都市",
            "adcode": "510100",
            "weather": "阴",
            "temperature": "15",
            "winddirection": "北",
            "windpower": "≤3",
            "humidity": "80",
            "reporttime": "2025-11-21 20:00:00",
            "temperature_float": "15.0",
            "humidity_float": "80.0",
        }
    ],
}
FORECAST_REPLY = {
    "status": "1",
    "count": "1",
    "info": "OK",
    "infocode": "10000",
    "forecasts": [
        {
            "city": "成都市",
            "adcode": "510100",
            "province": "四川",
            "reporttime": "2025-11-21 20:00:00",
            "casts": [
                {
                    "date": "2025-11-21",
                    "week": "5",
                    "dayweather": "阴",
                    "nightweather": "阴",
                    "daytemp": "17",
                    "nighttemp": "11",
                    "daywind": "北",
                    "nightwind": "北",
                    "daypower": "1-3",
                    "nightpower": "1-3",
                    "daytemp_float": "17.0",
                    "nighttemp_float": "11.0",
                },
                {
                    "date": "2025-11-22",
                    "week": "6",
                    "dayweather": "阴",
                    "nightweather": "小雨",
                    "daytemp": "16",
                    "nighttemp": "8",
                    "daywind": "北",
                    "nightwind": "北",
                    "daypower": "1-3",
                    "nightpower": "1-3",
                    "daytemp_float": "16.0",
                    "nighttemp_float": "8.0",
                },
                {
                    "date": "2025-11-23",
                    "week": "7",
                    "dayweather": "小雨",
                    "nightweather": "阴",
                    "daytemp": "14",
                    "nighttemp": "9",
                    "daywind": "东北",
                    "nightwind": "东北",
                    "daypower": "1-3",
                    "nightpower": "1-3",
                    "daytemp_float": "14.0",
                    "nighttemp_float": "9.0",
                },
                {
                    "date": "2025-11-24",
                    "week": "1",
                    "dayweather": "多云",
                    "nightweather": "阴",
                    "daytemp": "15",
                    "nighttemp": "9",
                    "daywind": "北",
                    "nightwind": "北",
                    "daypower": "1-3",
                    "nightpower": "1-3",
                    "daytemp_float": "15.0",
                    "nighttemp_float": "9.0",
                },
            ],
        }
    ],
}


class FakeAmap:
    """Answers every request with one reply and remembers the requests."""

    def __init__(
        self, reply=None, *, status: int = 200, raw: bytes | None = None, error: Exception | None = None
    ):
        self.reply, self.status, self.raw, self.error = reply, status, raw, error
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.error:
            raise self.error
        if self.raw is not None:
            return httpx.Response(self.status, content=self.raw)
        return httpx.Response(self.status, json=self.reply)


@pytest.fixture
def amap(monkeypatch, plugin_module):
    """Set AMAP_API_KEY and route the weather plugin's AMap requests to a FakeAmap."""

    def serve(fake: FakeAmap) -> FakeAmap:
        monkeypatch.setenv("AMAP_API_KEY", KEY)
        monkeypatch.setattr(plugin_module("weather"), "AMAP_TRANSPORT", httpx.MockTransport(fake))
        return fake

    return serve


def test_live_weather_from_amap(call, amap) -> None:
    fake = amap(FakeAmap(LIVE_REPLY))
    result = call("get_weather", location="成都", extensions="base")
    assert result == {
        "location": "成都市",
        "province": "四川",
        "adcode": "510100",
        "source": "amap",
        "unit": "℃",
        "reporttime": "2025-11-21 20:00:00",
        "live": {
            "weather": "阴",
            "temperature": 15,
            "humidity": 80,
            "winddirection": "北",
            "windpower": "≤3",
        },
    }
    (request,) = fake.requests
    assert request.url.host == "restapi.amap.com" and request.url.path == "/v3/weather/weatherInfo"
    assert dict(request.url.params) == {"city": "510100", "key": KEY, "extensions": "base", "output": "JSON"}
    assert request.extensions["timeout"]["read"] == 10.0


def test_forecast_from_amap(call, amap) -> None:
    fake = amap(FakeAmap(FORECAST_REPLY))
    result = call("get_weather", location="Chengdu", extensions="all")
    assert result["source"] == "amap" and result["location"] == "成都市"
    casts = result["forecasts"]
    assert [c["date"] for c in casts] == ["2025-11-21", "2025-11-22", "2025-11-23", "2025-11-24"]
    assert [c["week"] for c in casts] == [
        "星期五 Friday",
        "星期六 Saturday",
        "星期日 Sunday",
        "星期一 Monday",
    ]
    assert casts[1] == {
        "date": "2025-11-22",
        "week": "星期六 Saturday",
        "dayweather": "阴",
        "nightweather": "小雨",
        "daytemp": 16,
        "nighttemp": 8,
        "daywind": "北",
        "nightwind": "北",
        "daypower": "1-3",
        "nightpower": "1-3",
    }
    assert fake.requests[0].url.params["extensions"] == "all"


def test_a_place_the_sample_does_not_know_is_sent_as_written(call, amap) -> None:
    fake = amap(FakeAmap(LIVE_REPLY))
    call("get_weather", location=" 双流区 ")
    assert fake.requests[0].url.params["city"] == "双流区"


def test_missing_fields_arrive_as_empty_lists(call, amap) -> None:
    reply = {**LIVE_REPLY, "lives": [{**LIVE_REPLY["lives"][0], "humidity": [], "windpower": []}]}
    amap(FakeAmap(reply))
    live = call("get_weather", location="成都")["live"]
    assert live["humidity"] is None and live["windpower"] is None


def test_transport_can_be_passed_directly(plugin_module) -> None:
    weather = plugin_module("weather")
    fake = FakeAmap(LIVE_REPLY)
    result = weather.amap_weather("北京", "base", KEY, transport=httpx.MockTransport(fake))
    assert result["source"] == "amap"
    assert fake.requests[0].url.params["city"] == "110000"


@pytest.mark.parametrize(
    ("fake", "message"),
    [
        (
            FakeAmap({"status": "0", "info": "INVALID_USER_KEY", "infocode": "10001"}),
            r"AMap refused the weather request: INVALID_USER_KEY \(infocode 10001\); check AMAP_API_KEY",
        ),
        (
            FakeAmap({"status": "0", "info": "DAILY_QUERY_OVER_LIMIT", "infocode": "10044"}),
            "DAILY_QUERY_OVER_LIMIT",
        ),
        (
            FakeAmap({"status": "1", "count": "0", "info": "OK", "infocode": "10000", "lives": []}),
            "AMap has no weather for '成都'; AMap covers China only",
        ),
        (FakeAmap(status=500, raw=b"upstream down"), "AMap weather API answered HTTP 500"),
        (FakeAmap(raw=b"<html>not json</html>"), "AMap weather request failed"),
        (FakeAmap(["not", "an", "object"]), "not a JSON object"),
        (
            FakeAmap(error=httpx.ConnectError(f"cannot reach https://restapi.amap.com/?key={KEY}")),
            r"AMap weather request failed \(cannot reach .*key=\*\*\*\); "
            r"check the network, or unset AMAP_API_KEY",
        ),
        (FakeAmap(error=httpx.ReadTimeout("timed out")), "timed out"),
    ],
    ids=["bad-key", "quota", "no-city", "http-500", "not-json", "not-object", "connect", "timeout"],
)
def test_amap_failures_raise_and_never_fall_back(
    call, amap, fake: FakeAmap, message: str, plugin_module
) -> None:
    amap(fake)
    with pytest.raises(plugin_module("weather").WeatherServiceError, match=message) as raised:
        call("get_weather", location="成都")
    assert KEY not in str(raised.value)


def test_no_key_means_no_network(call, monkeypatch, plugin_module) -> None:
    fake = FakeAmap(LIVE_REPLY)
    monkeypatch.setattr(plugin_module("weather"), "AMAP_TRANSPORT", httpx.MockTransport(fake))
    assert call("get_weather", location="成都")["source"] == "offline-sample"
    assert fake.requests == []
