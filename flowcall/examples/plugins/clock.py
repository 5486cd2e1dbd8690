"""Clock: the current date, time and weekday in a time zone."""

from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo, available_timezones

from flowcall.tools.python_plugins import tool

WEEKDAYS = (
    "星期一 Monday",
    "星期二 Tuesday",
    "星期三 Wednesday",
    "星期四 Thursday",
    "星期五 Friday",
    "星期六 Saturday",
    "星期日 Sunday",
)
# Names small models often pass instead of an IANA zone; Beijing time has no zone of its own.
CHINA_NAMES = {"beijing", "北京", "北京时间", "china", "中国", "cst"}
# A bare city matches only geographic zones (Asia/Tokyo), not legacy aliases (Japan, US/Pacific).
CONTINENTS = {
    "africa",
    "america",
    "antarctica",
    "asia",
    "atlantic",
    "australia",
    "europe",
    "indian",
    "pacific",
}


@tool("time/v1/get_current_time", read_only=True)
def get_current_time(timezone: str = "Asia/Shanghai") -> dict[str, Any]:
    """获取当前日期、时间和星期。用户问现在几点、今天几号、星期几时使用。
    Get the current date, time and weekday.

    Args:
        timezone: IANA 时区,例如 Asia/Shanghai(北京时间)、Europe/London、America/New_York
    """
    zone = resolve_zone(timezone)
    now = dt.datetime.now(ZoneInfo(zone)).replace(microsecond=0)
    return {
        "timezone": zone,
        "datetime": now.isoformat(),
        "date": now.date().isoformat(),
        "weekday": WEEKDAYS[now.weekday()],
        "time": now.strftime("%H:%M:%S"),
        # the answer written out: a small model turns "05:43" into "5:43 PM" or 下午 if left to convert
        "text_zh": f"{_place_zh(zone)}{now.year}年{now.month}月{now.day}日 "
        f"{WEEKDAYS[now.weekday()].split()[0]} {now:%H:%M}({_day_part_zh(now.hour)})",
        "text_en": f"{WEEKDAYS[now.weekday()].split()[1]}, {now:%B} {now.day}, {now.year}, {now:%H:%M} "
        f"({now:%I:%M %p}) in {zone}",
    }


def _place_zh(zone: str) -> str:
    return "北京时间 " if zone == "Asia/Shanghai" else f"{zone} 当地时间 "


def _day_part_zh(hour: int) -> str:
    return (
        "凌晨"
        if hour < 6
        else "上午"
        if hour < 12
        else "中午"
        if hour < 13
        else "下午"
        if hour < 18
        else "晚上"
    )


def resolve_zone(name: str) -> str:
    """An IANA name in any case, or a zone's city ("Tokyo", "new york"); else ValueError."""
    wanted = name.strip()
    if wanted.casefold() in CHINA_NAMES:
        return "Asia/Shanghai"
    zones = available_timezones()
    if wanted in zones:
        return wanted
    folded = wanted.casefold().replace(" ", "_")
    for zone in sorted(zones):
        area, _, city = zone.casefold().rpartition("/")
        if zone.casefold() == folded or (city == folded and area.split("/")[0] in CONTINENTS):
            return zone
    raise ValueError(
        f"unknown time zone '{name}'; use an IANA name such as Asia/Shanghai, Europe/London, "
        "America/New_York, Asia/Tokyo or UTC"
    )
