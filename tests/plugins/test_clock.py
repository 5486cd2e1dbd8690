"""get_current_time: time zones and the answer's shape."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest


def test_default_is_beijing_time(call) -> None:
    result = call("get_current_time")
    assert set(result) == {"timezone", "datetime", "date", "weekday", "time", "text_zh", "text_en"}
    assert result["timezone"] == "Asia/Shanghai"
    moment = dt.datetime.fromisoformat(result["datetime"])
    assert moment.utcoffset() == dt.timedelta(hours=8)
    assert abs(dt.datetime.now(dt.timezone.utc) - moment) < dt.timedelta(seconds=5)
    assert result["date"] == moment.date().isoformat()
    assert result["time"] == moment.strftime("%H:%M:%S")
    chinese, english = result["weekday"].split()
    assert english == moment.strftime("%A") and chinese.startswith("星期")
    # the written-out answers hold the 24-hour time as it is, and the right half of the day
    assert f"{moment:%H:%M}" in result["text_zh"] and result["text_zh"].startswith("北京时间")
    assert f"{moment:%H:%M} ({moment:%I:%M %p})" in result["text_en"] and english in result["text_en"]


@pytest.mark.parametrize(
    ("given", "zone"),
    [
        ("Europe/London", "Europe/London"),
        ("America/New_York", "America/New_York"),
        ("UTC", "UTC"),
        ("asia/tokyo", "Asia/Tokyo"),
        ("Tokyo", "Asia/Tokyo"),
        ("new york", "America/New_York"),
        ("Indianapolis", "America/Indiana/Indianapolis"),
        ("北京", "Asia/Shanghai"),
        ("Beijing", "Asia/Shanghai"),
        ("北京时间", "Asia/Shanghai"),
        (" Asia/Kolkata ", "Asia/Kolkata"),
    ],
)
def test_time_zones(call, given: str, zone: str) -> None:
    result = call("get_current_time", timezone=given)
    assert result["timezone"] == zone
    offset = dt.datetime.fromisoformat(result["datetime"]).utcoffset()
    assert offset == dt.datetime.now(ZoneInfo(zone)).utcoffset()


@pytest.mark.parametrize("given", ["Mars/Olympus", "", "GMT+8 please", "Asia"])
def test_unknown_time_zone_names_valid_ones(call, given: str) -> None:
    with pytest.raises(ValueError, match=r"unknown time zone .*Asia/Shanghai.*Europe/London"):
        call("get_current_time", timezone=given)
