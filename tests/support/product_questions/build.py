"""Writes questions.jsonl: requests a FlowCall user makes of the bundled tools and example flows,
with every call a correct model may rightly write for each (issue 34, point 1).

The items are kept here as compact tables, so that the variants of a call (the user's spelling,
the other script, the canonical form; an optional argument left out or set to its default) are
spelled once and multiplied out. Edit this file, then run it:

    python tests/support/product_questions/build.py

Dates a correct call must hold depend on the day the check runs, so they are written as
placeholders that `resolve_dates` in __init__.py resolves (see README.md): {{today}},
{{tomorrow}}, {{today+N}}, {{next:mon}}, {{date:MM-DD}}, {{month_end}}.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OMIT = None  # an option value meaning "the argument is left out"

# --- tool sets, as a flow attaches them ------------------------------------------------------
W = ["weather/v1/get_weather"]
WD = ["weather/v1/get_day_weather"]
T = ["time/v1/get_current_time"]
AT = ["task/v1/add_task"]
CT = ["task/v1/create_task"]
TASKS = ["task/v1/add_task", "task/v1/list_tasks"]
H = ["hr/v1/lookup_employee"]
D = ["data/v1/read_csv", "data/v1/drop_missing", "data/v1/describe_data"]
# a general assistant: several unrelated tools attached to one flow
GA = [
    "weather/v1/get_weather",
    "time/v1/get_current_time",
    "task/v1/add_task",
    "task/v1/list_tasks",
    "hr/v1/lookup_employee",
]
DATE_PROMPT = "今天是 {{today}},明天是 {{tomorrow}}。Today is {{today}}."

# --- argument options --------------------------------------------------------------------------
NOW = (OMIT, "base")  # current conditions: the default, said or not
TODAY = (OMIT, "base", "all")  # "today's weather": the live reading or the forecast both answer it
FORECAST = ("all",)
BEIJING_TIME = (OMIT, "Asia/Shanghai")
NORMAL = (OMIT, "normal")
NORMAL_N = (OMIT, 2)


def calls(tool: str, /, **options: Any) -> list[dict[str, Any]]:
    """Every call of `tool` with one value per argument from its options: a tuple holds the
    options, anything else (a str, a number, a list, OMIT) is the one value."""
    keys = list(options)
    values = [v if isinstance(v, tuple) else (v,) for v in options.values()]
    out = []
    for combo in itertools.product(*values):
        arguments = {k: v for k, v in zip(keys, combo) if v is not OMIT}
        out.append({"name": tool, "arguments": arguments})
    return out


def one(tool: str, /, **options: Any) -> list[list[dict[str, Any]]]:
    """The correct call lists of an item that needs one call."""
    return [[c] for c in calls(tool, **options)]


def both(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The correct call lists of an item that needs two calls (any variant of each)."""
    return [[a, b] for a, b in itertools.product(first, second)]


def weather(location: Any, extensions: Any = NOW) -> list[list[dict[str, Any]]]:
    return one("get_weather", location=location, extensions=extensions)


def day(location: Any, date: str) -> list[list[dict[str, Any]]]:
    return one("get_day_weather", location=location, date=date)


def clock(timezone: Any = BEIJING_TIME) -> list[list[dict[str, Any]]]:
    return one("get_current_time", timezone=timezone)


def task(title: Any, priority: Any = NORMAL, due_date: Any = OMIT) -> list[list[dict[str, Any]]]:
    return one("add_task", title=title, priority=priority, due_date=due_date)


def numbered_task(title: Any, priority: Any = NORMAL_N, due_date: Any = OMIT) -> list[list[dict[str, Any]]]:
    return one("create_task", title=title, priority=priority, due_date=due_date)


def who(name: Any) -> list[list[dict[str, Any]]]:
    return one("lookup_employee", name=name)


LIST_TASKS = one("list_tasks")
NONE: list[list[dict[str, Any]]] = []


def parts(*call_variants: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The correct call lists of a request with several needs: one variant of each part's call,
    every combination (both() for any number of parts)."""
    return [list(combo) for combo in itertools.product(*call_variants)]


# one part's call, every variant of it (for parts())
def weather_call(location: Any, extensions: Any = NOW) -> list[dict[str, Any]]:
    return calls("get_weather", location=location, extensions=extensions)


def time_call(timezone: Any = BEIJING_TIME) -> list[dict[str, Any]]:
    return calls("get_current_time", timezone=timezone)


def task_call(title: Any, priority: Any = NORMAL, due_date: Any = OMIT) -> list[dict[str, Any]]:
    return calls("add_task", title=title, priority=priority, due_date=due_date)


def who_call(name: Any) -> list[dict[str, Any]]:
    return calls("lookup_employee", name=name)


LIST_CALL = calls("list_tasks")

# (prefix, tools or {"flow": ...} or {"tools": ..., "system_prompt": ...}, question, correct calls, notes)
Item = tuple[str, Any, str, list[list[dict[str, Any]]], str]

ITEMS: list[Item] = [
    # --- get_weather, attached alone (docs: 成都、北京、London) ---------------------------------
    (
        "wx",
        W,
        "What's the weather like in Beijing right now?",
        weather(("Beijing", "北京")),
        "English city, the docs' example 北京 in the other script",
    ),
    ("wx", W, "Is it raining in Shanghai?", weather(("Shanghai", "上海")), "not a docs example either way"),
    (
        "wx",
        W,
        "weather in chengdu",
        weather(("chengdu", "Chengdu", "成都")),
        "lower-case pinyin; 成都 is the docs' first example",
    ),
    (
        "wx",
        W,
        "Will it rain in Guangzhou tomorrow?",
        weather(("Guangzhou", "广州"), FORECAST),
        "tomorrow needs the forecast (extensions all), never said as such",
    ),
    (
        "wx",
        W,
        "Give me the 3-day forecast for Shenzhen",
        weather(("Shenzhen", "深圳"), FORECAST),
        "'3-day forecast' is the docs' own phrase for all",
    ),
    ("wx", W, "How hot is it in Hong Kong today?", weather(("Hong Kong", "香港"), TODAY), "two-word city"),
    ("wx", W, "What's the weather in London?", weather(("London", "伦敦")), "the docs' example, said as is"),
    (
        "wx",
        W,
        "Weather forecast for Tokyo over the next three days, please",
        weather(("Tokyo", "东京"), FORECAST),
        "'three days' in words",
    ),
    (
        "wx",
        W,
        "Do I need an umbrella in Hangzhou the day after tomorrow?",
        weather(("Hangzhou", "杭州"), FORECAST),
        "rain asked as an umbrella, the day after tomorrow",
    ),
    (
        "wx",
        W,
        "Current temperature in Chengdu City?",
        weather(("Chengdu City", "Chengdu", "成都市", "成都")),
        "a trailing 'City' the tool folds away",
    ),
    (
        "wx",
        W,
        "what's it like outside in Xi'an",
        weather(("Xi'an", "Xian", "西安")),
        "an apostrophe in the name",
    ),
    ("wx", W, "How windy is it in Qingdao now?", weather(("Qingdao", "青岛")), "wind, not rain"),
    (
        "wx",
        W,
        "Is it going to snow in Harbin in the next couple of days?",
        weather(("Harbin", "哈尔滨"), FORECAST),
        "'couple of days' for the forecast",
    ),
    ("wx", W, "weather in New York", weather(("New York", "纽约", "NYC")), "two words, English"),
    ("wx", W, "Paris weather tomorrow", weather(("Paris", "巴黎"), FORECAST), "telegraphic"),
    ("wx", W, "Is it sunny in Sydney at the moment?", weather(("Sydney", "悉尼")), "southern hemisphere"),
    ("wx", W, "What is the humidity in Wuhan right now?", weather(("Wuhan", "武汉")), "humidity"),
    (
        "wx",
        W,
        "Peking weather please",
        weather(("Peking", "Beijing", "北京")),
        "the old name; the canonical forms are the docs' example 北京 or Beijing",
    ),
    (
        "wx",
        W,
        "How cold will it get in Beijing tonight?",
        weather(("Beijing", "北京"), FORECAST),
        "tonight's low is in the forecast",
    ),
    (
        "wx",
        W,
        "Canton weather for the next few days",
        weather(("Canton", "Guangzhou", "广州"), FORECAST),
        "an old English name for 广州",
    ),
    ("wx", W, "What's the weather in SF?", weather(("SF", "San Francisco", "旧金山")), "an abbreviation"),
    (
        "wx",
        W,
        "Sao Paulo weather right now",
        weather(("Sao Paulo", "São Paulo", "圣保罗")),
        "accent left off",
    ),
    ("wx", W, "北京现在天气怎么样?", weather(("北京", "Beijing")), "the docs' example, said as is"),
    ("wx", W, "成都今天下雨吗", weather(("成都", "Chengdu"), TODAY), "the docs' example, said as is"),
    ("wx", W, "上海明天天气", weather(("上海", "Shanghai"), FORECAST), "明天 needs the forecast"),
    ("wx", W, "广州未来三天的天气预报", weather(("广州", "Guangzhou"), FORECAST), "三天 in characters"),
    ("wx", W, "深圳市现在多少度", weather(("深圳市", "深圳", "Shenzhen")), "trailing 市"),
    ("wx", W, "伦敦天气如何", weather(("伦敦", "London")), "Chinese name of the docs' example London"),
    ("wx", W, "东京这两天会下雨吗", weather(("东京", "Tokyo"), FORECAST), "这两天: the next days"),
    ("wx", W, "杭州后天冷不冷", weather(("杭州", "Hangzhou"), FORECAST), "后天: the day after tomorrow"),
    ("wx", W, "查一下纽约的天气", weather(("纽约", "New York")), "a foreign city in Chinese"),
    ("wx", W, "重庆现在湿度多少", weather(("重庆", "Chongqing"))),
    (
        "wx",
        W,
        "成都市武侯区今天天气",
        weather(("成都市武侯区", "成都市", "成都", "Chengdu"), TODAY),
        "a district inside the docs' example city",
    ),
    ("wx", W, "四川成都明天要带伞吗", weather(("四川成都", "成都", "Chengdu"), FORECAST), "province + city"),
    ("wx", W, "帮我看看南京接下来几天的天气", weather(("南京", "Nanjing"), FORECAST), "接下来几天"),
    ("wx", W, "西安现在刮风吗", weather(("西安", "Xi'an", "Xian"))),
    ("wx", W, "巴黎今天气温多少度", weather(("巴黎", "Paris"), TODAY)),
    ("wx", W, "香港明後天天氣如何", weather(("香港", "Hong Kong"), FORECAST), "traditional characters"),
    ("wx", W, "台北现在天气", weather(("台北", "臺北", "Taipei"))),
    ("wx", W, "蓉城今天热不热", weather(("蓉城", "成都", "Chengdu"), TODAY), "a nickname of 成都"),
    ("wx", W, "武汉现在热吗", weather(("武汉", "Wuhan"))),
    ("wx", W, "旧金山天气怎么样", weather(("旧金山", "San Francisco", "SF"))),
    (
        "wx",
        W,
        "北京市今天空气湿度多少?",
        weather(("北京市", "北京", "Beijing"), TODAY),
        "北京市: the docs' example with 市",
    ),
    ("wx", W, "帮我查一下 Shanghai 明天的天气", weather(("Shanghai", "上海"), FORECAST), "mixed"),
    (
        "wx",
        W,
        "Chengdu 今天天气怎么样",
        weather(("Chengdu", "成都"), TODAY),
        "mixed; pinyin of the docs' 成都",
    ),
    ("wx", W, "What's the weather in 北京 tomorrow?", weather(("北京", "Beijing"), FORECAST), "mixed"),
    ("wx", W, "London 现在冷吗", weather(("London", "伦敦")), "mixed; the docs' London"),
    ("wx", W, "广州 weather forecast for the next 3 days", weather(("广州", "Guangzhou"), FORECAST), "mixed"),
    ("wx", W, "Beijing 下雨了吗", weather(("Beijing", "北京")), "mixed; 北京 is the docs' example"),
    # --- get_day_weather, with a prompt that gives the date -------------------------------------
    (
        "day",
        {"tools": WD, "system_prompt": DATE_PROMPT},
        "成都后天的天气",
        day(("成都", "Chengdu"), "{{today+2}}"),
        "后天 as a date two days on",
    ),
    (
        "day",
        {"tools": WD, "system_prompt": DATE_PROMPT},
        "What's the weather in Beijing today?",
        day(("Beijing", "北京"), "{{today}}"),
        "today's date from the prompt",
    ),
    (
        "day",
        {"tools": WD, "system_prompt": DATE_PROMPT},
        "上海明天下雨吗",
        day(("上海", "Shanghai"), "{{tomorrow}}"),
    ),
    (
        "day",
        {"tools": WD, "system_prompt": DATE_PROMPT},
        "Weather in Guangzhou the day after tomorrow",
        day(("Guangzhou", "广州"), "{{today+2}}"),
    ),
    (
        "day",
        {"tools": WD, "system_prompt": DATE_PROMPT},
        "London tomorrow: rain or not?",
        day(("London", "伦敦"), "{{tomorrow}}"),
        "the docs' London",
    ),
    (
        "day",
        {"tools": WD, "system_prompt": DATE_PROMPT},
        "伦敦今天的天气",
        day(("伦敦", "London"), "{{today}}"),
    ),
    # --- commute_weather flow: get_day_weather for tomorrow -------------------------------------
    (
        "cw",
        {"flow": "commute_weather"},
        "我明天要在成都上下班通勤,会下雨吗?",
        day(("成都", "Chengdu"), "{{tomorrow}}"),
        "the seeds' own question",
    ),
    ("cw", {"flow": "commute_weather"}, "明天北京通勤要带伞吗", day(("北京", "Beijing"), "{{tomorrow}}")),
    (
        "cw",
        {"flow": "commute_weather"},
        "上海明天冷不冷,上班要穿多少",
        day(("上海", "Shanghai"), "{{tomorrow}}"),
    ),
    (
        "cw",
        {"flow": "commute_weather"},
        "明天广州下班的时候会下雨吗",
        day(("广州", "Guangzhou"), "{{tomorrow}}"),
    ),
    ("cw", {"flow": "commute_weather"}, "深圳明天通勤天气", day(("深圳", "Shenzhen"), "{{tomorrow}}")),
    (
        "cw",
        {"flow": "commute_weather"},
        "杭州明天早上出门要带伞吗",
        day(("杭州", "Hangzhou"), "{{tomorrow}}"),
    ),
    ("cw", {"flow": "commute_weather"}, "明天去武汉上班,天气怎么样", day(("武汉", "Wuhan"), "{{tomorrow}}")),
    (
        "cw",
        {"flow": "commute_weather"},
        "帮我看下南京明天通勤的天气",
        day(("南京", "Nanjing"), "{{tomorrow}}"),
    ),
    (
        "cw",
        {"flow": "commute_weather"},
        "明早在成都市区坐地铁上班,会不会淋雨?",
        day(("成都", "成都市", "Chengdu"), "{{tomorrow}}"),
        "明早; 成都市区",
    ),
    (
        "cw",
        {"flow": "commute_weather"},
        "Will I need an umbrella for my commute in Beijing tomorrow?",
        day(("Beijing", "北京"), "{{tomorrow}}"),
        "English; the prompt is Chinese; 北京 is the docs' example",
    ),
    (
        "cw",
        {"flow": "commute_weather"},
        "Commute weather for Shanghai tomorrow please",
        day(("Shanghai", "上海"), "{{tomorrow}}"),
    ),
    (
        "cw",
        {"flow": "commute_weather"},
        "Is tomorrow's commute in Chengdu going to be wet?",
        day(("Chengdu", "成都"), "{{tomorrow}}"),
        "pinyin of the docs' 成都",
    ),
    (
        "cw",
        {"flow": "commute_weather"},
        "I'm commuting in Guangzhou tomorrow, will it rain?",
        day(("Guangzhou", "广州"), "{{tomorrow}}"),
    ),
    (
        "cw",
        {"flow": "commute_weather"},
        "Tomorrow's weather for my commute in Hong Kong",
        day(("Hong Kong", "香港"), "{{tomorrow}}"),
    ),
    (
        "cw",
        {"flow": "commute_weather"},
        "Tokyo commute tomorrow, rain or shine?",
        day(("Tokyo", "东京"), "{{tomorrow}}"),
    ),
    (
        "cw",
        {"flow": "commute_weather"},
        "London commute tomorrow: do I need a coat?",
        day(("London", "伦敦"), "{{tomorrow}}"),
        "the docs' London",
    ),
    (
        "cw",
        {"flow": "commute_weather"},
        "明天 Shenzhen 通勤会下雨吗",
        day(("Shenzhen", "深圳"), "{{tomorrow}}"),
        "mixed",
    ),
    (
        "cw",
        {"flow": "commute_weather"},
        "Commute in 杭州 tomorrow, umbrella?",
        day(("杭州", "Hangzhou"), "{{tomorrow}}"),
        "mixed",
    ),
    (
        "cw",
        {"flow": "commute_weather"},
        "tomorrow commute Beijing 下雨吗",
        day(("Beijing", "北京"), "{{tomorrow}}"),
        "mixed; 北京 is the docs' example",
    ),
    # --- get_current_time, attached alone (docs: Asia/Shanghai(北京时间)、Europe/London、America/New_York)
    ("time", T, "几点了", clock(), "no place: Beijing time, the default"),
    (
        "time",
        T,
        "What time is it in London?",
        clock("Europe/London"),
        "the docs' example zone, the city said",
    ),
    (
        "time",
        T,
        "纽约现在几点?",
        clock("America/New_York"),
        "the docs' example zone, the city said in Chinese",
    ),
    ("time", T, "伦敦现在几点", clock("Europe/London"), "the docs' example zone, the city in Chinese"),
    ("time", T, "北京时间几点了", clock(), "北京时间 is the docs' gloss of the default"),
    ("time", T, "What's the time in Shanghai?", clock(), "the default zone named by its city"),
    ("time", T, "东京时间现在几点", clock("Asia/Tokyo"), "a zone not in the docs, city in Chinese"),
    ("time", T, "What time is it in New York?", clock("America/New_York"), "the docs' example, said"),
    ("time", T, "What time is it in Beijing?", clock(), "Beijing time is Asia/Shanghai"),
    ("time", T, "Is it morning in Los Angeles yet?", clock("America/Los_Angeles"), "a two-word city"),
    ("time", T, "what time is it in LA", clock("America/Los_Angeles"), "an abbreviation"),
    ("time", T, "What time is it in Mumbai?", clock("Asia/Kolkata"), "the zone is named after another city"),
    ("time", T, "UTC time now?", clock("UTC"), "a zone said as is"),
    ("time", T, "现在是几号?", clock(), "the date"),
    ("time", T, "今天星期几", clock(), "the weekday"),
    ("time", T, "悉尼现在是晚上吗", clock("Australia/Sydney")),
    ("time", T, "巴黎几点了", clock("Europe/Paris")),
    ("time", T, "莫斯科现在几点", clock("Europe/Moscow")),
    ("time", T, "Time in 东京?", clock("Asia/Tokyo"), "mixed"),
    ("time", T, "现在 New York 几点", clock("America/New_York"), "mixed; the docs' example zone"),
    # --- current_time flow (its prompt names Tokyo, Paris, Sydney, Los Angeles, Asia/Shanghai) --
    ("ct", {"flow": "current_time"}, "现在几点了?", clock()),
    ("ct", {"flow": "current_time"}, "今天几号", clock()),
    ("ct", {"flow": "current_time"}, "今天星期几?", clock()),
    ("ct", {"flow": "current_time"}, "东京现在几点", clock("Asia/Tokyo"), "the prompt's own example place"),
    (
        "ct",
        {"flow": "current_time"},
        "纽约现在是几点",
        clock("America/New_York"),
        "the docs' example, city in Chinese",
    ),
    (
        "ct",
        {"flow": "current_time"},
        "伦敦现在几点了",
        clock("Europe/London"),
        "the docs' example, city in Chinese",
    ),
    ("ct", {"flow": "current_time"}, "洛杉矶现在几点", clock("America/Los_Angeles")),
    ("ct", {"flow": "current_time"}, "悉尼今天星期几", clock("Australia/Sydney")),
    ("ct", {"flow": "current_time"}, "北京时间现在几点", clock()),
    ("ct", {"flow": "current_time"}, "巴黎现在是白天还是晚上?", clock("Europe/Paris")),
    ("ct", {"flow": "current_time"}, "新加坡现在几点", clock("Asia/Singapore")),
    ("ct", {"flow": "current_time"}, "柏林那边几点了", clock("Europe/Berlin")),
    ("ct", {"flow": "current_time"}, "迪拜现在几点", clock("Asia/Dubai")),
    ("ct", {"flow": "current_time"}, "首尔今天几号", clock("Asia/Seoul")),
    (
        "ct",
        {"flow": "current_time"},
        "孟买现在几点",
        clock("Asia/Kolkata"),
        "the zone is named after another city",
    ),
    ("ct", {"flow": "current_time"}, "What time is it?", clock()),
    ("ct", {"flow": "current_time"}, "What's the date today?", clock()),
    ("ct", {"flow": "current_time"}, "What day of the week is it?", clock()),
    ("ct", {"flow": "current_time"}, "What time is it in Tokyo right now?", clock("Asia/Tokyo")),
    ("ct", {"flow": "current_time"}, "Current time in New York?", clock("America/New_York")),
    ("ct", {"flow": "current_time"}, "Is it morning in London now?", clock("Europe/London")),
    ("ct", {"flow": "current_time"}, "Time in Paris please", clock("Europe/Paris")),
    ("ct", {"flow": "current_time"}, "Is it already Friday in Auckland?", clock("Pacific/Auckland")),
    ("ct", {"flow": "current_time"}, "What time is it in Chicago?", clock("America/Chicago")),
    ("ct", {"flow": "current_time"}, "Vancouver time now", clock("America/Vancouver")),
    ("ct", {"flow": "current_time"}, "Beijing time now?", clock()),
    ("ct", {"flow": "current_time"}, "What time is it in Bangkok?", clock("Asia/Bangkok")),
    ("ct", {"flow": "current_time"}, "东京 what time now", clock("Asia/Tokyo"), "mixed"),
    ("ct", {"flow": "current_time"}, "What's the time in 伦敦?", clock("Europe/London"), "mixed"),
    # --- create_task flow: add_task, words for priority, {{today}}/{{tomorrow}} in the prompt ---
    ("ctask", {"flow": "create_task"}, "记一下买菜", task("买菜"), "the prompt's own example"),
    (
        "ctask",
        {"flow": "create_task"},
        "提醒我明天给客户打电话",
        task("给客户打电话", NORMAL, "{{tomorrow}}"),
        "明天 as tomorrow's date",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "后天之前交房租,很重要",
        task("交房租", "high", "{{today+2}}"),
        "后天 as a date the prompt does not spell out; 很重要 as high",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "添加任务:写周报,优先级高",
        task("写周报", "high"),
        "the docs' example title",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "帮我记下:下周一前准备季度汇报材料",
        task(("准备季度汇报材料", "准备季度汇报"), NORMAL, "{{next:mon}}"),
        "下周一 as a date",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "记得三天后去取快递",
        task(("取快递", "去取快递"), NORMAL, "{{today+3}}"),
        "三天后: a number in characters",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "12月5日前续签护照",
        task("续签护照", NORMAL, "{{date:12-05}}"),
        "a date without a year",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "不急,有空的时候整理一下书架",
        task(("整理书架", "整理一下书架"), "low"),
        "不急 as low",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "紧急!修复登录页的 bug",
        task(("修复登录页的 bug", "修复登录页的bug", "修复登录页 bug"), "high"),
        "紧急 as high",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "明天下午3点开会前把PPT改好",
        task(("把PPT改好", "改好PPT", "修改PPT"), NORMAL, "{{tomorrow}}"),
        "a 12-hour time in the text",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "帮我建个待办:联系两个供应商要报价",
        task(("联系两个供应商要报价", "联系两个供应商", "联系2个供应商要报价")),
        "两个 in the title",
    ),
    ("ctask", {"flow": "create_task"}, "优先级低:清理邮箱", task("清理邮箱", "low")),
    (
        "ctask",
        {"flow": "create_task"},
        "把报销发票加到待办里,月底前完成",
        task("报销发票", NORMAL, "{{month_end}}"),
        "月底 as the month's last day",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "今天之内必须把合同发给张三,非常紧急",
        task(("把合同发给张三", "发合同给张三", "给张三发合同"), "high", "{{today}}"),
        "今天 as a date; a staff name",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "记一下:2026年12月1日交年度总结",
        task("交年度总结", NORMAL, "2026-12-01"),
        "a full date in Chinese",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "两周后提醒我去体检",
        task(("去体检", "体检"), NORMAL, "{{today+14}}"),
        "两周后 as a date",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "明晚6点半前订好餐厅",
        task(("订好餐厅", "订餐厅"), NORMAL, "{{tomorrow}}"),
        "明晚 with a 12-hour time",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "提醒我给王五转账五百块",
        task(("给王五转账五百块", "给王五转账500块", "给王五转账500元")),
        "a number in characters in the title",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "这个不着急:把旧衣服捐了",
        task(("把旧衣服捐了", "捐旧衣服"), "low"),
        "不着急",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "重要:明天上午十点前提交预算表",
        task(("提交预算表",), "high", "{{tomorrow}}"),
        "上午十点 in characters",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "Call the bank, it's important",
        task("Call the bank", "high"),
        "the prompt's own example",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "Book a haircut, low priority",
        task("Book a haircut", "low"),
        "the prompt's own example",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "Remind me to call Alice tomorrow",
        task("Call Alice", NORMAL, "{{tomorrow}}"),
        "the docs' example title, said",
    ),
    ("ctask", {"flow": "create_task"}, "Add a task: buy milk", task(("Buy milk", "buy milk"))),
    (
        "ctask",
        {"flow": "create_task"},
        "I need to renew my passport by December 1st",
        task(("Renew my passport", "Renew passport"), NORMAL, "{{date:12-01}}"),
        "a month name and an ordinal",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "Submit the expense report in three days, it's urgent",
        task(("Submit the expense report", "Submit expense report"), "high", "{{today+3}}"),
        "'three days' in words",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "Put 'pay rent' on my list for the day after tomorrow",
        task(("pay rent", "Pay rent"), NORMAL, "{{today+2}}"),
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "Email the quarterly numbers to Zhang San by next Monday",
        task(("Email the quarterly numbers to Zhang San",), NORMAL, "{{next:mon}}"),
        "next Monday",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "Low priority: clean up the garage",
        task(("Clean up the garage",), "low"),
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "Please add a high-priority task to fix the production outage",
        task(("Fix the production outage",), "high"),
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "Pick up the dry cleaning before half past six tomorrow evening",
        task(("Pick up the dry cleaning",), NORMAL, "{{tomorrow}}"),
        "a time in words",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "Schedule a dentist appointment for the 15th of December",
        task(("Schedule a dentist appointment", "Dentist appointment"), NORMAL, "{{date:12-15}}"),
        "the 15th of December",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "Don't let me forget to water the plants. No rush.",
        task(("Water the plants",), "low"),
        "'no rush' as low",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "Add 'write weekly report' to my tasks",
        task(
            ("Write weekly report", "write weekly report"),
        ),
        "English for the docs' 写周报",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "Create a to-do to book two tickets to Shanghai, it's urgent",
        task(("Book two tickets to Shanghai", "Book 2 tickets to Shanghai"), "high"),
        "'two' in the title",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "Remind me to send the contract to Li Si today, top priority",
        task(("Send the contract to Li Si",), "high", "{{today}}"),
        "'top priority' as high",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "Task: review Alice Chen's pull request by 2026-12-10",
        task(("Review Alice Chen's pull request",), NORMAL, "2026-12-10"),
        "the docs' Alice Chen in a title",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "Get the car serviced within two weeks",
        task(("Get the car serviced",), NORMAL, "{{today+14}}"),
        "'within two weeks' as a date",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "add task: 给 Alice 发周报, high priority",
        task(("给 Alice 发周报", "给Alice发周报"), "high"),
        "mixed",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "记一下 call the dentist, 不急",
        task(("call the dentist", "Call the dentist"), "low"),
        "mixed",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "明天之前 finish the budget review, 很重要",
        task(("finish the budget review", "Finish the budget review"), "high", "{{tomorrow}}"),
        "mixed",
    ),
    (
        "ctask",
        {"flow": "create_task"},
        "Remind me 后天 to pick up the kids' passports",
        task(("Pick up the kids' passports",), NORMAL, "{{today+2}}"),
        "mixed; 后天 as a date",
    ),
    # --- add_task attached alone, no date in any prompt ------------------------------------------
    ("task", AT, "Add a task to buy groceries", task(("Buy groceries",))),
    (
        "task",
        AT,
        "Urgent: call the landlord about the leak",
        task(("Call the landlord about the leak",), "high"),
        "urgent as high, the word high never said",
    ),
    ("task", AT, "新建任务:写周报", task("写周报"), "the docs' example title"),
    ("task", AT, "帮我加一个重要的待办:准备面试", task("准备面试", "high"), "重要 as high"),
    ("task", AT, "记一下买牛奶,不着急", task("买牛奶", "low"), "不着急 as low"),
    ("task", AT, "Add 'Call Alice' to my list", task("Call Alice"), "the docs' example title, said"),
    (
        "task",
        AT,
        "Add a low priority task: sort the holiday photos",
        task(("Sort the holiday photos",), "low"),
    ),
    (
        "task",
        AT,
        "任务:给客户发报价单,截止2026年12月20日",
        task("给客户发报价单", NORMAL, "2026-12-20"),
        "a full date in Chinese",
    ),
    (
        "task",
        AT,
        "Create a task 'finish the report' due December 20, 2026",
        task(("finish the report", "Finish the report"), NORMAL, "2026-12-20"),
        "the month as a name",
    ),
    ("task", AT, "把交水电费加入待办,优先级普通", task(("交水电费",), NORMAL), "普通 as normal"),
    (
        "task",
        AT,
        "Remind me to renew the car insurance, high priority, due 2026-12-31",
        task(("Renew the car insurance",), "high", "2026-12-31"),
    ),
    ("task", AT, "添加待办:提交三份申请表,优先级最高", task(("提交三份申请表",), "high"), "最高 as high"),
    (
        "task",
        AT,
        "待办:二〇二六年十二月三十一日前交房租",
        task(("交房租",), NORMAL, "2026-12-31"),
        "a full date in Chinese numerals",
    ),
    (
        "task",
        AT,
        "Note down: call Zhang San back, whenever",
        task(("Call Zhang San back",), "low"),
        "'whenever' as low",
    ),
    (
        "task",
        AT,
        "加个任务 prepare the onboarding doc,重要",
        task(("prepare the onboarding doc", "Prepare the onboarding doc"), "high"),
        "mixed",
    ),
    # --- create_task attached alone: priority as 1/2/3 ----------------------------------------
    (
        "ntask",
        CT,
        "Create a task: write the weekly report, priority 1",
        numbered_task(("Write the weekly report",), 1),
        "the number said",
    ),
    ("ntask", CT, "创建任务:写周报,优先级高", numbered_task("写周报", 1), "高 as 1; the docs' example title"),
    ("ntask", CT, "新建一个紧急任务:修服务器", numbered_task("修服务器", 1), "紧急 as 1"),
    (
        "ntask",
        CT,
        "Make a low-priority task to archive old emails",
        numbered_task(("Archive old emails",), 3),
        "low as 3",
    ),
    (
        "ntask",
        CT,
        "Create task 'Call Alice', normal priority",
        numbered_task("Call Alice"),
        "the docs' example title; normal is the default 2",
    ),
    ("ntask", CT, "创建任务:整理会议纪要,不急", numbered_task("整理会议纪要", 3), "不急 as 3"),
    ("ntask", CT, "创建任务:报销差旅费,截止 2026-12-15", numbered_task("报销差旅费", NORMAL_N, "2026-12-15")),
    (
        "ntask",
        CT,
        "Create a task to pay the invoice by 2025-08-15",
        numbered_task(("Pay the invoice",), NORMAL_N, "2025-08-15"),
        "the docs' example date, said",
    ),
    (
        "ntask",
        CT,
        "Create a to-do: prepare the demo, top priority",
        numbered_task(("Prepare the demo",), 1),
        "'top priority' as 1",
    ),
    (
        "ntask",
        CT,
        "创建任务:给李四回邮件,优先级二",
        numbered_task("给李四回邮件", NORMAL_N),
        "二 in characters",
    ),
    (
        "ntask",
        CT,
        "Create a task, priority three: tidy the desk",
        numbered_task(("Tidy the desk",), 3),
        "'three' as a word",
    ),
    (
        "ntask",
        CT,
        "创建待办「准备年会节目」,优先级一,2026年12月28日截止",
        numbered_task("准备年会节目", 1, "2026-12-28"),
        "一 in characters",
    ),
    ("ntask", CT, "新建任务 Call Alice,高优先级", numbered_task("Call Alice", 1), "mixed; the docs' title"),
    # --- the task list ---------------------------------------------------------------------------
    ("list", TASKS, "我有哪些待办?", LIST_TASKS),
    ("list", TASKS, "Show me my to-do list", LIST_TASKS),
    ("list", TASKS, "What tasks do I have?", LIST_TASKS),
    ("list", TASKS, "列出所有任务", LIST_TASKS),
    ("list", TASKS, "还有什么事没做完?", LIST_TASKS, "no task word at all"),
    ("list", TASKS, "What's on my plate?", LIST_TASKS, "an idiom"),
    ("list", TASKS, "帮我看看 todo list", LIST_TASKS, "mixed"),
    (
        "list",
        TASKS,
        "Add 'buy a birthday cake' to my to-dos",
        task(("Buy a birthday cake", "buy a birthday cake")),
        "two task tools attached; this one adds",
    ),
    ("list", TASKS, "帮我添加一个任务:买生日蛋糕", task(("买生日蛋糕",)), "two task tools attached"),
    # --- employee_lookup flow: the name as the user wrote it (docs: 张三、Alice Chen、E1001) ------
    (
        "emp",
        {"flow": "employee_lookup"},
        "张三多大了?",
        who(("张三", "Zhang San")),
        "the docs' example, said",
    ),
    ("emp", {"flow": "employee_lookup"}, "李四在哪个部门?", who(("李四", "Li Si"))),
    ("emp", {"flow": "employee_lookup"}, "帮我查一下王五的邮箱", who(("王五", "Wang Wu"))),
    ("emp", {"flow": "employee_lookup"}, "赵敏的分机号是多少", who(("赵敏", "Zhao Min"))),
    ("emp", {"flow": "employee_lookup"}, "陈静是做什么的", who(("陈静", "Jing Chen"))),
    ("emp", {"flow": "employee_lookup"}, "刘洋在哪个城市办公", who(("刘洋", "Yang Liu"))),
    ("emp", {"flow": "employee_lookup"}, "周杰什么时候入职的", who(("周杰", "Jie Zhou"))),
    ("emp", {"flow": "employee_lookup"}, "张伟是什么职位", who(("张伟", "Wei Zhang"))),
    (
        "emp",
        {"flow": "employee_lookup"},
        "陈爱丽的电话分机",
        who(("陈爱丽", "Alice Chen")),
        "the Chinese name of the docs' example Alice Chen",
    ),
    ("emp", {"flow": "employee_lookup"}, "工号E1001是谁?", who("E1001"), "the docs' example id, said"),
    ("emp", {"flow": "employee_lookup"}, "查一下E1014的办公地点", who("E1014")),
    ("emp", {"flow": "employee_lookup"}, "黄磊今年几岁", who(("黄磊", "Lei Huang"))),
    ("emp", {"flow": "employee_lookup"}, "林小雨是哪个部门的", who(("林小雨", "Xiaoyu Lin"))),
    ("emp", {"flow": "employee_lookup"}, "吴敏的入职日期是哪天", who(("吴敏", "Min Wu"))),
    ("emp", {"flow": "employee_lookup"}, "王芳的分机多少", who(("王芳", "Fang Wang"))),
    ("emp", {"flow": "employee_lookup"}, "孙丽是法务部的吗", who(("孙丽", "Li Sun"))),
    ("emp", {"flow": "employee_lookup"}, "何强的邮箱地址", who(("何强", "Qiang He"))),
    ("emp", {"flow": "employee_lookup"}, "郑晓是做什么的?", who(("郑晓", "Xiao Zheng"))),
    (
        "emp",
        {"flow": "employee_lookup"},
        "张三的同事王丽在哪办公",
        who(("王丽", "Alice Wang")),
        "the docs' 张三 said but not the one asked about",
    ),
    (
        "emp",
        {"flow": "employee_lookup"},
        "How old is Zhang San?",
        who(("Zhang San", "张三")),
        "pinyin of the docs' example 张三",
    ),
    ("emp", {"flow": "employee_lookup"}, "What's Li Si's email?", who(("Li Si", "李四"))),
    (
        "emp",
        {"flow": "employee_lookup"},
        "Which department is Alice Chen in?",
        who(("Alice Chen", "陈爱丽")),
        "the docs' example, said",
    ),
    ("emp", {"flow": "employee_lookup"}, "Where does Sarah Johnson work?", who("Sarah Johnson")),
    ("emp", {"flow": "employee_lookup"}, "What is David Miller's extension?", who("David Miller")),
    ("emp", {"flow": "employee_lookup"}, "When did Wang Wu join the company?", who(("Wang Wu", "王五"))),
    ("emp", {"flow": "employee_lookup"}, "Who is employee E1001?", who("E1001"), "the docs' example id"),
    ("emp", {"flow": "employee_lookup"}, "Find Jie Zhou's job title", who(("Jie Zhou", "周杰"))),
    ("emp", {"flow": "employee_lookup"}, "What does Xiaoyu Lin do?", who(("Xiaoyu Lin", "林小雨"))),
    (
        "emp",
        {"flow": "employee_lookup"},
        "phone extension for kenji tanaka",
        who(("kenji tanaka", "Kenji Tanaka")),
        "lower case",
    ),
    ("emp", {"flow": "employee_lookup"}, "Look up Alice Wang", who(("Alice Wang", "王丽"))),
    ("emp", {"flow": "employee_lookup"}, "Is Min Wu in Finance?", who(("Min Wu", "吴敏"))),
    (
        "emp",
        {"flow": "employee_lookup"},
        "How long has Zhang Wei been with us?",
        who(("Zhang Wei", "Wei Zhang", "张伟")),
        "surname first, as Chinese names are said",
    ),
    (
        "emp",
        {"flow": "employee_lookup"},
        "Alice Chen 的邮箱是什么",
        who(("Alice Chen", "陈爱丽")),
        "mixed; the docs' example",
    ),
    ("emp", {"flow": "employee_lookup"}, "帮我找一下 David Miller 的分机", who("David Miller"), "mixed"),
    ("emp", {"flow": "employee_lookup"}, "Kenji Tanaka 在东京办公吗", who("Kenji Tanaka"), "mixed"),
    (
        "emp",
        {"flow": "employee_lookup"},
        "What's 张三's phone extension?",
        who(("张三", "Zhang San")),
        "mixed; the docs' example",
    ),
    # --- lookup_employee attached alone -----------------------------------------------------------
    ("hr", H, "张三的邮箱", who(("张三", "Zhang San")), "the docs' example, said"),
    ("hr", H, "What's Zhang San's age?", who(("Zhang San", "张三")), "pinyin of the docs' 张三"),
    ("hr", H, "查一下 Alice Chen", who(("Alice Chen", "陈爱丽")), "mixed; the docs' example"),
    ("hr", H, "Where is Lei Huang's office?", who(("Lei Huang", "黄磊"))),
    ("hr", H, "陈晨的职位是什么", who(("陈晨", "Chen Chen"))),
    ("hr", H, "Jing Chen's phone extension", who(("Jing Chen", "陈静"))),
    ("hr", H, "陈爱丽是哪个部门的?", who(("陈爱丽", "Alice Chen")), "Chinese name of the docs' Alice Chen"),
    ("hr", H, "Who has employee number E1001?", who("E1001"), "the docs' example id"),
    ("hr", H, "How old is Zhang San in the staff directory?", who(("Zhang San", "张三"))),
    ("hr", H, "帮我查查工号 E1020", who("E1020")),
    # --- clean_data flow: tool_choice read_csv (docs: orders_sample.csv) -------------------------
    (
        "clean",
        {"flow": "clean_data"},
        "Clean orders_sample.csv",
        one("read_csv", path="orders_sample.csv"),
        "the docs' example file, said",
    ),
    (
        "clean",
        {"flow": "clean_data"},
        "清洗一下 orders_sample.csv 这个文件",
        one("read_csv", path="orders_sample.csv"),
        "mixed; the docs' file",
    ),
    (
        "clean",
        {"flow": "clean_data"},
        "Please drop the rows with missing values from the orders sample file",
        one("read_csv", path="orders_sample.csv"),
        "the file named in words",
    ),
    (
        "clean",
        {"flow": "clean_data"},
        "clean the file orders_sample",
        one("read_csv", path="orders_sample.csv"),
        "without its extension",
    ),
    (
        "clean",
        {"flow": "clean_data"},
        "orders_sample.csv 有缺失值,帮我清理一下",
        one("read_csv", path="orders_sample.csv"),
        "mixed",
    ),
    (
        "clean",
        {"flow": "clean_data"},
        "Load staff.csv and remove incomplete rows",
        one("read_csv", path="staff.csv"),
    ),
    (
        "clean",
        {"flow": "clean_data"},
        "加载 staff.csv 然后去掉有空值的行",
        one("read_csv", path="staff.csv"),
        "mixed",
    ),
    (
        "clean",
        {"flow": "clean_data"},
        "帮我把订单样例表 orders_sample 里缺数据的行删掉",
        one("read_csv", path="orders_sample.csv"),
        "mixed",
    ),
    (
        "clean",
        {"flow": "clean_data"},
        "清洗 orders_sample.csv,只看 quantity 列的缺失值",
        one("read_csv", path="orders_sample.csv"),
        "first round is read_csv whatever the column",
    ),
    # --- the data tools attached alone ---------------------------------------------------------
    (
        "data",
        D,
        "Load orders_sample.csv",
        one("read_csv", path="orders_sample.csv"),
        "the docs' example file",
    ),
    ("data", D, "读取 staff.csv", one("read_csv", path="staff.csv"), "mixed"),
    ("data", D, "Give me summary statistics of the loaded table", one("describe_data")),
    ("data", D, "统计一下已加载表格的数值列", one("describe_data")),
    ("data", D, "Drop the rows where quantity is missing", one("drop_missing", columns=(["quantity"],))),
    (
        "data",
        D,
        "Drop rows with a missing customer_rating or quantity",
        one("drop_missing", columns=(["customer_rating", "quantity"], ["quantity", "customer_rating"])),
    ),
    ("data", D, "删掉所有有缺失值的行", one("drop_missing")),
    ("data", D, "去掉 city 列为空的行", one("drop_missing", columns=(["city"],)), "mixed"),
    ("data", D, "Remove every row that has an empty cell", one("drop_missing")),
    ("data", D, "表格的平均值、最大值、最小值是多少?", one("describe_data")),
    # --- a general assistant with several tools ------------------------------------------------
    ("ga", GA, "北京明天会下雨吗", weather(("北京", "Beijing"), FORECAST), "five tools attached"),
    ("ga", GA, "What time is it in Tokyo?", clock("Asia/Tokyo")),
    ("ga", GA, "张三的分机号", who(("张三", "Zhang San"))),
    ("ga", GA, "remind me to buy flowers, it's important", task(("Buy flowers",), "high")),
    ("ga", GA, "我的待办清单上还有什么", LIST_TASKS),
    ("ga", GA, "What's the weather in Chengdu right now?", weather(("Chengdu", "成都"))),
    ("ga", GA, "What's Alice Chen's email address?", who(("Alice Chen", "陈爱丽"))),
    ("ga", GA, "伦敦现在几点了", clock("Europe/London"), "the docs' example zone, city in Chinese"),
    (
        "ga",
        GA,
        "Weather in Chengdu and the time in London",
        both(
            calls("get_weather", location=("Chengdu", "成都"), extensions=NOW),
            calls("get_current_time", timezone="Europe/London"),
        ),
        "two calls",
    ),
    (
        "ga",
        GA,
        "上海天气怎么样,顺便告诉我现在几点",
        both(
            calls("get_weather", location=("上海", "Shanghai"), extensions=NOW),
            calls("get_current_time", timezone=BEIJING_TIME),
        ),
        "two calls",
    ),
    (
        "ga",
        GA,
        "Look up Li Si and tell me the weather in Beijing",
        both(
            calls("lookup_employee", name=("Li Si", "李四")),
            calls("get_weather", location=("Beijing", "北京"), extensions=NOW),
        ),
        "two calls",
    ),
    ("ga", GA, "Add a task to email Kenji Tanaka, low priority", task(("Email Kenji Tanaka",), "low")),
    # --- multi-part requests: one message, two or three needs, against the general assistant ---
    # Every part a tool can do is in each correct list (any variant of each call); a part no tool
    # can do (a poem, a flight) has no call. No relative due dates: GA items have no prompt with
    # today's date, so a task's due date is given only where the user says a full date.
    # weather + time, in one place or two
    (
        "mp",
        GA,
        "What's the weather in Beijing today, and what time is it there?",
        parts(weather_call(("Beijing", "北京"), TODAY), time_call()),
        "weather + time; 'there' is Beijing: Asia/Shanghai",
    ),
    (
        "mp",
        GA,
        "Tokyo weather right now and the local time there",
        parts(weather_call(("Tokyo", "东京")), time_call("Asia/Tokyo")),
        "weather + time, telegraphic",
    ),
    (
        "mp",
        GA,
        "Is it raining in London? Also, what time is it in London?",
        parts(weather_call(("London", "伦敦")), time_call("Europe/London")),
        "weather + time, two sentences",
    ),
    (
        "mp",
        GA,
        "weather in Shanghai + current time in New York",
        parts(weather_call(("Shanghai", "上海")), time_call("America/New_York")),
        "weather + time, two places",
    ),
    (
        "mp",
        GA,
        "What's tomorrow's forecast for Paris, and what's the time there now?",
        parts(weather_call(("Paris", "巴黎"), FORECAST), time_call("Europe/Paris")),
        "weather + time; forecast",
    ),
    (
        "mp",
        GA,
        "I'm calling a friend in Sydney. What time is it there and how's the weather?",
        parts(time_call("Australia/Sydney"), weather_call(("Sydney", "悉尼"))),
        "weather + time, time asked first",
    ),
    (
        "mp",
        GA,
        "How hot is it in Guangzhou today, and what's the date today?",
        parts(weather_call(("Guangzhou", "广州"), TODAY), time_call()),
        "weather + time; the date, Beijing time",
    ),
    (
        "mp",
        GA,
        "成都天气怎么样?顺便告诉我现在几点",
        parts(weather_call(("成都", "Chengdu")), time_call()),
        "weather + time; no place for the time: Beijing time",
    ),
    (
        "mp",
        GA,
        "东京今天天气如何,那边现在几点了",
        parts(weather_call(("东京", "Tokyo"), TODAY), time_call("Asia/Tokyo")),
        "weather + time; 那边 is Tokyo",
    ),
    (
        "mp",
        GA,
        "纽约现在下雨吗?另外纽约现在是几点",
        parts(weather_call(("纽约", "New York")), time_call("America/New_York")),
        "weather + time, 另外",
    ),
    (
        "mp",
        GA,
        "北京明天天气,还有伦敦现在几点",
        parts(weather_call(("北京", "Beijing"), FORECAST), time_call("Europe/London")),
        "weather + time, two places",
    ),
    (
        "mp",
        GA,
        "查下杭州天气,再看看今天星期几",
        parts(weather_call(("杭州", "Hangzhou")), time_call()),
        "weather + time; the weekday, Beijing time",
    ),
    (
        "mp",
        GA,
        "巴黎这几天天气怎么样?那边现在几点?",
        parts(weather_call(("巴黎", "Paris"), FORECAST), time_call("Europe/Paris")),
        "weather + time; 这几天: forecast",
    ),
    (
        "mp",
        GA,
        "首尔冷不冷,现在首尔几点了",
        parts(weather_call(("首尔", "Seoul")), time_call("Asia/Seoul")),
        "weather + time, comma",
    ),
    # two cities' weather
    (
        "mp",
        GA,
        "Weather in Beijing and Shanghai?",
        parts(weather_call(("Beijing", "北京")), weather_call(("Shanghai", "上海"))),
        "two cities",
    ),
    (
        "mp",
        GA,
        "Compare tomorrow's weather in Chengdu and Chongqing",
        parts(weather_call(("Chengdu", "成都"), FORECAST), weather_call(("Chongqing", "重庆"), FORECAST)),
        "two cities; forecast for both",
    ),
    (
        "mp",
        GA,
        "Is it colder in Harbin or in Shenyang right now?",
        parts(weather_call(("Harbin", "哈尔滨")), weather_call(("Shenyang", "沈阳"))),
        "two cities, a comparison",
    ),
    (
        "mp",
        GA,
        "What's the weather like today in Hong Kong? Also check Shenzhen.",
        parts(weather_call(("Hong Kong", "香港"), TODAY), weather_call(("Shenzhen", "深圳"), TODAY)),
        "two cities; the second without a verb of its own",
    ),
    (
        "mp",
        GA,
        "London and Paris forecast for the next three days",
        parts(weather_call(("London", "伦敦"), FORECAST), weather_call(("Paris", "巴黎"), FORECAST)),
        "two cities, telegraphic",
    ),
    (
        "mp",
        GA,
        "北京和上海今天天气怎么样",
        parts(weather_call(("北京", "Beijing"), TODAY), weather_call(("上海", "Shanghai"), TODAY)),
        "two cities",
    ),
    (
        "mp",
        GA,
        "广州明天下雨吗?深圳呢?",
        parts(weather_call(("广州", "Guangzhou"), FORECAST), weather_call(("深圳", "Shenzhen"), FORECAST)),
        "two cities; 深圳呢 takes 明天 from the first",
    ),
    (
        "mp",
        GA,
        "帮我查一下南京的天气,另外苏州的也查一下",
        parts(weather_call(("南京", "Nanjing")), weather_call(("苏州", "Suzhou"))),
        "two cities, 另外",
    ),
    (
        "mp",
        GA,
        "成都、重庆现在多少度",
        parts(weather_call(("成都", "Chengdu")), weather_call(("重庆", "Chongqing"))),
        "two cities, an enumeration comma",
    ),
    (
        "mp",
        GA,
        "东京和首尔未来三天的天气",
        parts(weather_call(("东京", "Tokyo"), FORECAST), weather_call(("首尔", "Seoul"), FORECAST)),
        "two cities",
    ),
    # a lookup and an action that does not need the lookup's result
    (
        "mp",
        GA,
        "What's the weather in Chengdu tomorrow? Also add a task to buy an umbrella",
        parts(weather_call(("Chengdu", "成都"), FORECAST), task_call(("Buy an umbrella", "buy an umbrella"))),
        "lookup + action",
    ),
    (
        "mp",
        GA,
        "Look up Wang Wu's email, and add a task to send him the budget, it's urgent",
        parts(
            who_call(("Wang Wu", "王五")),
            task_call(("Send Wang Wu the budget", "Send him the budget"), "high"),
        ),
        "lookup + action; urgent as high",
    ),
    (
        "mp",
        GA,
        "Check the weather in Xiamen now, then put 'book a hotel in Xiamen' on my to-do list",
        parts(
            weather_call(("Xiamen", "厦门")), task_call(("Book a hotel in Xiamen", "book a hotel in Xiamen"))
        ),
        "lookup + action",
    ),
    (
        "mp",
        GA,
        "Find Sarah Johnson's extension and add a low priority task: schedule a call with Sarah",
        parts(who_call("Sarah Johnson"), task_call(("Schedule a call with Sarah",), "low")),
        "lookup + action",
    ),
    (
        "mp",
        GA,
        "What time is it in New York? Add a task to call the New York office, due 2026-12-03",
        parts(time_call("America/New_York"), task_call(("Call the New York office",), NORMAL, "2026-12-03")),
        "lookup + action; a full due date",
    ),
    (
        "mp",
        GA,
        "查一下张三的电话,再帮我记个待办:给他回电话",
        parts(who_call(("张三", "Zhang San")), task_call(("给张三回电话", "给他回电话"))),
        "lookup + action",
    ),
    (
        "mp",
        GA,
        "明天上海下雨吗?顺便加个待办:带伞",
        parts(weather_call(("上海", "Shanghai"), FORECAST), task_call(("带伞",))),
        "lookup + action, 顺便",
    ),
    (
        "mp",
        GA,
        "李四在哪个部门?另外帮我加个重要的任务:准备季度汇报",
        parts(who_call(("李四", "Li Si")), task_call(("准备季度汇报",), "high")),
        "lookup + action; 重要 as high",
    ),
    (
        "mp",
        GA,
        "看看现在几点,然后添加任务:2026年12月10日前交报告",
        parts(time_call(), task_call(("交报告",), NORMAL, "2026-12-10")),
        "lookup + action; a full date in Chinese",
    ),
    (
        "mp",
        GA,
        "查下陈静的邮箱,再记个不急的待办:约她吃饭",
        parts(who_call(("陈静", "Jing Chen")), task_call(("约陈静吃饭", "约她吃饭"), "low")),
        "lookup + action; 不急 as low",
    ),
    # an employee lookup and the weather or the time
    (
        "mp",
        GA,
        "Look up Zhang San, and what's the weather in Chengdu?",
        parts(who_call(("Zhang San", "张三")), weather_call(("Chengdu", "成都"))),
        "lookup + weather",
    ),
    (
        "mp",
        GA,
        "Kenji Tanaka's email, and the time in Tokyo",
        parts(who_call("Kenji Tanaka"), time_call("Asia/Tokyo")),
        "lookup + time, telegraphic",
    ),
    (
        "mp",
        GA,
        "Which office is David Miller in? Also how's the weather in Shanghai today?",
        parts(who_call("David Miller"), weather_call(("Shanghai", "上海"), TODAY)),
        "lookup + weather",
    ),
    (
        "mp",
        GA,
        "Get me Alice Chen's phone extension and tell me the time in London",
        parts(who_call(("Alice Chen", "陈爱丽")), time_call("Europe/London")),
        "lookup + time",
    ),
    (
        "mp",
        GA,
        "王芳的分机是多少?武汉现在天气怎么样?",
        parts(who_call(("王芳", "Fang Wang")), weather_call(("武汉", "Wuhan"))),
        "lookup + weather, two questions",
    ),
    (
        "mp",
        GA,
        "查下赵敏的入职日期,顺便看看成都明天天气",
        parts(who_call(("赵敏", "Zhao Min")), weather_call(("成都", "Chengdu"), FORECAST)),
        "lookup + weather, 顺便",
    ),
    (
        "mp",
        GA,
        "刘洋在哪办公?另外深圳今天热不热",
        parts(who_call(("刘洋", "Yang Liu")), weather_call(("深圳", "Shenzhen"), TODAY)),
        "lookup + weather",
    ),
    (
        "mp",
        GA,
        "帮我查一下何强的邮箱,再告诉我现在几点",
        parts(who_call(("何强", "Qiang He")), time_call()),
        "lookup + time; Beijing time",
    ),
    # add a task and list the tasks
    (
        "mp",
        GA,
        "Add 'renew gym membership' to my to-dos and show me everything on the list",
        parts(task_call(("Renew gym membership", "renew gym membership")), LIST_CALL),
        "task + list",
    ),
    (
        "mp",
        GA,
        "Remind me to pay the electricity bill, then list my tasks",
        parts(task_call(("Pay the electricity bill",)), LIST_CALL),
        "task + list",
    ),
    (
        "mp",
        GA,
        "What's on my to-do list? Also add: buy printer ink, urgent",
        parts(LIST_CALL, task_call(("Buy printer ink",), "high")),
        "task + list; the list asked first",
    ),
    (
        "mp",
        GA,
        "帮我加个待办:取快递,然后列出我所有的任务",
        parts(task_call(("取快递",)), LIST_CALL),
        "task + list",
    ),
    (
        "mp",
        GA,
        "我现在有哪些待办?再加一个:交物业费,不急",
        parts(LIST_CALL, task_call(("交物业费",), "low")),
        "task + list; 不急 as low",
    ),
    (
        "mp",
        GA,
        "新建任务:整理周报,截止2026年12月18日;另外把任务清单给我看看",
        parts(task_call(("整理周报",), NORMAL, "2026-12-18"), LIST_CALL),
        "task + list; a full date",
    ),
    # three needs in one message
    (
        "mp",
        GA,
        "What's the weather in Beijing, what time is it, and add a task to buy a scarf",
        parts(weather_call(("Beijing", "北京")), time_call(), task_call(("Buy a scarf",))),
        "three needs: weather + time + a task",
    ),
    (
        "mp",
        GA,
        "Look up Li Si and Zhang Wei, and tell me the weather in Beijing today",
        parts(
            who_call(("Li Si", "李四")),
            who_call(("Zhang Wei", "Wei Zhang", "张伟")),
            weather_call(("Beijing", "北京"), TODAY),
        ),
        "three needs: two employees + weather",
    ),
    (
        "mp",
        GA,
        "Weather in Tokyo, Seoul and Singapore right now?",
        parts(
            weather_call(("Tokyo", "东京")),
            weather_call(("Seoul", "首尔")),
            weather_call(("Singapore", "新加坡")),
        ),
        "three needs: three cities",
    ),
    (
        "mp",
        GA,
        "Time in London and New York, plus London's forecast for tomorrow",
        parts(
            time_call("Europe/London"),
            time_call("America/New_York"),
            weather_call(("London", "伦敦"), FORECAST),
        ),
        "three needs: two times + weather",
    ),
    (
        "mp",
        GA,
        "Add two tasks: call the plumber (urgent) and return the library books, then show my list",
        parts(task_call(("Call the plumber",), "high"), task_call(("Return the library books",)), LIST_CALL),
        "three needs: two tasks + the list",
    ),
    (
        "mp",
        GA,
        "成都现在天气怎么样,现在几点,再帮我记个待办:买火锅底料",
        parts(weather_call(("成都", "Chengdu")), time_call(), task_call(("买火锅底料",))),
        "three needs: weather + time + a task",
    ),
    (
        "mp",
        GA,
        "查一下张三和李四的邮箱,顺便看看北京明天的天气",
        parts(
            who_call(("张三", "Zhang San")),
            who_call(("李四", "Li Si")),
            weather_call(("北京", "Beijing"), FORECAST),
        ),
        "three needs: two employees + weather",
    ),
    (
        "mp",
        GA,
        "北京、上海、广州今天天气分别怎么样",
        parts(
            weather_call(("北京", "Beijing"), TODAY),
            weather_call(("上海", "Shanghai"), TODAY),
            weather_call(("广州", "Guangzhou"), TODAY),
        ),
        "three needs: three cities",
    ),
    (
        "mp",
        GA,
        "帮我看看纽约和伦敦现在几点,另外纽约现在天气如何",
        parts(time_call("America/New_York"), time_call("Europe/London"), weather_call(("纽约", "New York"))),
        "three needs: two times + weather",
    ),
    (
        "mp",
        GA,
        "查下王五在哪办公,加个待办给他寄资料,再列出我的所有待办",
        parts(who_call(("王五", "Wang Wu")), task_call(("给王五寄资料", "给他寄资料")), LIST_CALL),
        "three needs: lookup + a task + the list",
    ),
    # one part has no tool: only the other parts' calls are correct
    (
        "mp",
        GA,
        "What's the weather in Beijing, and write me a poem about it",
        parts(weather_call(("Beijing", "北京"))),
        "one part has no tool: a poem",
    ),
    (
        "mp",
        GA,
        "Check the forecast for Sanya for the next few days and book me a flight there",
        parts(weather_call(("Sanya", "三亚"), FORECAST)),
        "one part has no tool: booking a flight",
    ),
    (
        "mp",
        GA,
        "What time is it in Dubai? Also translate 'good morning' into Arabic",
        parts(time_call("Asia/Dubai")),
        "one part has no tool: a translation",
    ),
    (
        "mp",
        GA,
        "Look up Alice Wang's email and send her a message saying I'll be late",
        parts(who_call(("Alice Wang", "王丽"))),
        "one part has no tool: sending a message",
    ),
    (
        "mp",
        GA,
        "Add a task to prepare slides and recommend a good restaurant nearby",
        parts(task_call(("Prepare slides",))),
        "one part has no tool: a recommendation",
    ),
    (
        "mp",
        GA,
        "查下北京天气,再帮我订张机票",
        parts(weather_call(("北京", "Beijing"))),
        "one part has no tool: booking a flight",
    ),
    (
        "mp",
        GA,
        "上海明天天气怎么样?顺便推荐几个好玩的地方",
        parts(weather_call(("上海", "Shanghai"), FORECAST)),
        "one part has no tool: a recommendation",
    ),
    ("mp", GA, "现在几点了?再给我讲个笑话", parts(time_call()), "one part has no tool: a joke"),
    (
        "mp",
        GA,
        "帮我查一下周杰的分机,然后给他发个邮件说会议改期了",
        parts(who_call(("周杰", "Jie Zhou"))),
        "one part has no tool: sending an email",
    ),
    (
        "mp",
        GA,
        "记个待办:买牛奶。另外帮我算一下 15 乘以 23",
        parts(task_call(("买牛奶",))),
        "one part has no tool: arithmetic",
    ),
    # mixed English and Chinese
    (
        "mp",
        GA,
        "查一下 Tokyo 的天气,顺便告诉我 Tokyo 现在几点",
        parts(weather_call(("Tokyo", "东京")), time_call("Asia/Tokyo")),
        "weather + time, mixed",
    ),
    (
        "mp",
        GA,
        "What's the weather in 成都 tomorrow, and 帮我加个待办:带伞",
        parts(weather_call(("成都", "Chengdu"), FORECAST), task_call(("带伞", "Bring an umbrella"))),
        "lookup + action, mixed",
    ),
    (
        "mp",
        GA,
        "Alice Chen 的邮箱是什么?另外 Shanghai 今天天气怎么样",
        parts(who_call(("Alice Chen", "陈爱丽")), weather_call(("Shanghai", "上海"), TODAY)),
        "lookup + weather, mixed",
    ),
    (
        "mp",
        GA,
        "add task: 给 David Miller 回邮件, then list my tasks",
        parts(task_call(("给 David Miller 回邮件", "给David Miller回邮件")), LIST_CALL),
        "task + list, mixed",
    ),
    (
        "mp",
        GA,
        "查一下 Beijing 的天气 and the time in New York, 再列出我的待办",
        parts(weather_call(("Beijing", "北京")), time_call("America/New_York"), LIST_CALL),
        "three needs: weather + time + the list, mixed",
    ),
    # --- no tool needed: the gate should let these answer ---------------------------------------
    ("none", W, "你好", NONE, "a greeting"),
    ("none", W, "北京有什么好玩的景点?", NONE, "near miss: a city, not the weather"),
    (
        "none",
        W,
        "Translate 'it will rain tomorrow' into Chinese",
        NONE,
        "near miss: weather words, a translation",
    ),
    ("none", W, "Write a haiku about rain", NONE, "near miss: rain"),
    ("none", W, "What's the population of Shanghai?", NONE, "near miss: a city"),
    ("none", W, "帮我订一张明天去上海的机票", NONE, "near miss: a city and tomorrow, no such tool"),
    ("none", T, "Hello, who are you?", NONE),
    ("none", T, "什么是时区?", NONE, "near miss: about time zones"),
    ("none", T, "Who won the 2022 World Cup?", NONE),
    ("none", T, "How many days are there in February 2028?", NONE, "near miss: a date question"),
    ("none", {"flow": "current_time"}, "2+2 等于几?", NONE),
    ("none", {"flow": "current_time"}, "Tell me a joke", NONE),
    ("none", AT, "给我讲个笑话", NONE),
    ("none", AT, "How do I change my password?", NONE),
    ("none", AT, "给老板写一封请假邮件", NONE, "near miss: something to do, not a task to keep"),
    ("none", TASKS, "删除我所有的任务", NONE, "near miss: no delete tool"),
    ("none", {"flow": "create_task"}, "谢谢,没有别的了", NONE),
    ("none", {"flow": "create_task"}, "What is the meaning of life?", NONE),
    ("none", H, "What is the capital of France?", NONE),
    ("none", H, "张三这个名字很常见吗?", NONE, "near miss: the docs' example name, no lookup asked"),
    ("none", H, "How do I write a good performance review?", NONE, "near miss: HR topic"),
    ("none", D, "Explain what a CSV file is", NONE, "near miss: CSV"),
    ("none", D, "Python 怎么读取 CSV 文件?", NONE, "near miss: CSV"),
    ("none", GA, "帮我写一首关于秋天的诗", NONE),
    ("none", GA, "How do I boil an egg?", NONE),
    ("none", GA, "Thanks, that's all", NONE),
    ("none", GA, "推荐几本好看的小说", NONE),
    ("none", GA, "What's 15% of 80?", NONE),
    ("none", GA, "你能做什么?", NONE, "about the assistant itself"),
    ("none", GA, "把这句话翻译成英文:明天北京会下雨", NONE, "near miss: a weather sentence to translate"),
    ("none", GA, "Hi there, how's your day going?", NONE),
    ("none", GA, "周末去哪里玩比较好?", NONE),
    (
        "none",
        W,
        "What's the weather usually like in Chengdu in April?",
        NONE,
        "near miss: climate, not a reading or a 3-day forecast; the docs' city",
    ),
    ("none", W, "Convert 30 degrees Celsius to Fahrenheit", NONE, "near miss: temperatures"),
    ("none", H, "Who is the CEO of Apple?", NONE, "near miss: a person, not an employee"),
    ("none", GA, "What's a good name for a cat?", NONE),
    ("none", GA, "我想学做红烧肉,步骤是什么?", NONE),
    ("none", T, "一天有多少秒?", NONE, "near miss: time, nothing to look up"),
]

_CJK = re.compile(r"[\u3400-\u9fff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")


def language(text: str) -> str:
    """zh with Chinese and no Latin word (an id like E1001 does not count), en with no Chinese."""
    if not _CJK.search(text):
        return "en"
    return "mixed" if _LATIN_WORD.search(text) else "zh"


def half(item_id: str) -> str:
    """Deterministic and stable under additions: the parity of the id's hash."""
    return "calibration" if hashlib.sha256(item_id.encode()).digest()[0] % 2 == 0 else "report"


def build() -> list[dict[str, Any]]:
    counters: dict[str, int] = {}
    out = []
    for entry in ITEMS:
        prefix, where, question, correct, *rest = entry
        lang = language(question)
        key = f"{prefix}-{lang}"
        counters[key] = counters.get(key, 0) + 1
        item_id = f"{key}-{counters[key]:03d}"
        record: dict[str, Any] = {"id": item_id, "lang": lang}
        if isinstance(where, list):
            record["tools"] = where
        elif "flow" in where:
            record["flow"] = where["flow"]
        else:
            record.update(where)
        record.update(
            {
                "question": question,
                "correct_calls": correct,
                "notes": rest[0] if rest else ("no tool needed" if not correct else ""),
                "half": half(item_id),
            }
        )
        out.append(record)
    ids = [r["id"] for r in out]
    assert len(ids) == len(set(ids))
    return out


def main() -> None:
    items = build()
    path = HERE / "questions.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for item in items:
            f.write(json.dumps(item, ensure_ascii=False) + "\n")
    print(f"wrote {len(items)} items to {path}")


if __name__ == "__main__":
    main()
