"""What "the example flow worked" means, in one place: benchmarks/example_flows.py scores every
phrasing in benchmarks/data/example_phrasings.json with it, and tests/integration/test_local_flows.py
runs a few held-out ones in CI.

A check looks at what the run recorded (which tool ran with which arguments, what it returned)
and at the answer's facts, never at its prose: the model is small and its wording is not the
point. Each check returns the list of what failed; an empty list is a success.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from flowcall.core.spec import Flow, load_flow
from flowcall.core.steps import Run, RunStatus, Step, StepKind

ROOT = Path(__file__).resolve().parents[2]
FLOWS = ROOT / "flows"
PHRASINGS = ROOT / "benchmarks" / "data" / "example_phrasings.json"
USERS_ZONE = "Asia/Shanghai"  # where the example flows' users are: their "today" and "tomorrow"


@dataclass(frozen=True)
class Case:
    """One phrasing of one example flow's question, with what its success needs."""

    flow: str  # the key in the data file, e.g. commute_weather
    file: str  # the flow file in flows/
    id: str
    split: str  # calibration | held_out | fresh (a new held-out set, see the data file's _about)
    style: str
    question: str
    expect: dict[str, Any] = field(default_factory=dict)

    def load_flow(self, flows_dir: Path = FLOWS) -> Flow:
        return load_flow(flows_dir / self.file)


def load_cases(flows: list[str] | None = None, split: str | None = None) -> list[Case]:
    data = json.loads(PHRASINGS.read_text(encoding="utf-8"))["flows"]
    unknown = set(flows or []) - set(data)
    if unknown:
        raise ValueError(f"no example flow {sorted(unknown)}; the flows are {sorted(data)}")
    cases = []
    for key, entry in data.items():
        if flows and key not in flows:
            continue
        for item in entry["phrasings"]:
            expect = {k: v for k, v in item.items() if k not in ("id", "split", "style", "question")}
            cases.append(
                Case(key, entry["file"], item["id"], item["split"], item["style"], item["question"], expect)
            )
    return [c for c in cases if split is None or c.split == split]


def case(case_id: str) -> Case:
    return next(c for c in load_cases() if c.id == case_id)


@contextlib.contextmanager
def users_clock(zone: str = USERS_ZONE) -> Iterator[None]:
    """The process's local time zone set to the users' one for the block.

    The flows' {{today}}/{{tomorrow}} come from the local clock, the weather forecast's dates
    from the city's zone: on a UTC machine after 16:00 these disagree about which day is
    "tomorrow" in Chengdu, so without this a result would depend on the hour it ran."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()


def local_date(offset_days: int = 0) -> dt.date:
    """As the engine's fill_variables counts it: the process's local date."""
    return dt.datetime.now().astimezone().date() + dt.timedelta(days=offset_days)


def run_case(service: Any, c: Case, flows_dir: Path = FLOWS) -> tuple[Run, list[str]]:
    """Run the case's flow on its question through the service, as `flowcall run` does."""
    flow = c.load_flow(flows_dir)
    run = service.run(flow, c.question)
    return run, check(service, flow, run, c)


# --- the checks ------------------------------------------------------------------------------


def executed(run: Run) -> list[Step]:
    """The tool calls that ran and returned (not those refused or failed)."""
    return [s for s in run.steps if s.kind == StepKind.TOOL_CALL and s.error_code is None]


def check(service: Any, flow: Flow, run: Run, c: Case) -> list[str]:
    if run.status != RunStatus.SUCCEEDED:
        return [f"run {run.status}: {run.error}"]
    problems = recorded(service, flow, run)
    if not executed(run):
        return problems + ["no tool ran"]
    return problems + FLOW_CHECKS[c.flow](service, flow, run, c.expect)


def recorded(service: Any, flow: Flow, run: Run) -> list[str]:
    """What holds for any run on the embedded model: schema-valid calls, the rendered prompt
    and tokens recorded, and the steps stored."""
    problems = []
    tools = {t.name: t for t in service.registry.resolve(flow.tools)}
    for step in executed(run):
        try:
            jsonschema.validate(step.arguments, tools[step.name].parameters)
        except jsonschema.ValidationError as exc:
            problems.append(f"{step.name} ran with arguments invalid against its schema: {exc.message}")
    model_steps = [s for s in run.steps if s.kind == StepKind.MODEL_CALL]
    first_prompt = model_steps[0].rendered_prompt if model_steps else None
    if not (first_prompt and "<|im_start|>" in first_prompt):
        problems.append("the first model step has no rendered chat prompt")
    if not all(s.tokens_in > 0 for s in model_steps):
        problems.append("a model step has no input tokens")
    # scoring steps generate nothing
    generated = [s for s in model_steps if not (s.response or {}).get("scores")]
    if not (generated and all(s.tokens_out > 0 for s in generated)):
        problems.append("a generating model step has no output tokens")
    stored = service.store.get_run(run.id)
    if [s.seq for s in stored.steps] != [s.seq for s in run.steps]:
        problems.append("the stored steps differ from the run's")
    return problems


def _calls(run: Run, name: str) -> list[Step]:
    return [s for s in executed(run) if s.name == name]


def _text(answer: Any) -> str:
    return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)


def _has_number(text: str, number: int, chinese: str) -> bool:
    return bool(re.search(rf"(?<![\d.]){number}(?![\d])", text)) or chinese in text


def _has_any(text: str, options: list[str]) -> bool:
    return any(o.casefold() in text.casefold() for o in options)


def _due(value: str | None) -> str | None:
    """'2026-11-27' as it is; 'today+N' N days after the local today; None for none."""
    if value is None or not value.startswith("today"):
        return value
    return local_date(int(value[len("today") :] or 0)).isoformat()


def check_commute_weather(
    service: Any, flow: Flow, run: Run, expect: dict[str, Any], *, facts: bool = True
) -> list[str]:
    """The lookup and the card's shape (valid, this city, tomorrow), then with `facts` what the
    card says against tomorrow's forecast."""
    calls = _calls(run, "get_weather") or _calls(run, "get_day_weather")  # three days, or one
    if not calls:
        return [f"get_weather did not run (ran: {[s.name for s in executed(run)]})"]
    call, problems = calls[0], []
    result = call.result or {}
    if result.get("location") != expect["city"]:
        problems.append(
            f"get_weather looked up {call.arguments.get('location')!r} "
            f"({result.get('location')}), not {expect['city']}"
        )
    # the forecast was asked for (get_weather: extensions "all"; get_day_weather: a date): checked
    # below, where the result must hold tomorrow's forecast
    card = run.final_answer
    assert flow.polish is not None and flow.polish.output_schema is not None
    try:
        jsonschema.validate(card, flow.polish.output_schema)
    except jsonschema.ValidationError as exc:
        return problems + [f"the card is not valid against the polish schema: {exc.message}"]
    names = [n for n in (result.get("location"), result.get("location_en")) if n]
    if not _has_any(card["location"], names):
        problems.append(f"the card's location {card['location']!r} is not {' / '.join(names)}")
    tomorrow = local_date(1).isoformat()
    if card["date"] != tomorrow:
        problems.append(f"the card's date {card['date']} is not tomorrow ({tomorrow})")
    day = next((f for f in result.get("forecasts", []) if f.get("date") == tomorrow), None)
    if day is None:
        return problems + [f"the weather result has no forecast for {tomorrow}"]
    if not facts:
        return problems
    weather = card["weather"]
    if (weather["temp_high"], weather["temp_low"]) != (float(day["daytemp"]), float(day["nighttemp"])):
        problems.append(
            f"the card's temperatures {weather['temp_high']}/{weather['temp_low']} are not "
            f"tomorrow's {day['daytemp']}/{day['nighttemp']}"
        )
    probability = int(str(day["precipitation_probability"]).rstrip("%")) / 100
    if "rain_probability" in weather and abs(weather["rain_probability"] - probability) > 0.011:
        problems.append(f"the card's rain_probability {weather['rain_probability']} is not {probability}")
    for leg, part in (("go_to_work", "dayweather"), ("back_home", "nightweather")):
        rain = "雨" in day[part]
        if not rain and probability >= 0.3:
            continue  # dry but likely enough to rain: either advice is defensible
        said = card["commute_advice"][leg]["need_umbrella"]
        if said != rain:
            problems.append(
                f"{leg}.need_umbrella is {said}, but tomorrow's {part} is {day[part]} "
                f"({day['precipitation_probability']})"
            )
    return problems


def check_create_task(service: Any, flow: Flow, run: Run, expect: dict[str, Any]) -> list[str]:
    calls = _calls(run, "create_task") + _calls(run, "add_task")  # the priority as 1/2/3, or as a word
    if len(calls) != 1:
        return [f"create_task ran {len(calls)} times, not once"]
    task, problems = calls[0].result or {}, []
    stored = [t for t in service.store.list_tasks() if t["id"] == task.get("id")]
    if not stored or stored[0]["title"] != task.get("title"):
        problems.append("the created task is not in the run's store")
    if not _has_any(task.get("title", ""), expect["title_any"]):
        problems.append(f"the title {task.get('title')!r} has none of {expect['title_any']}")
    if task.get("priority") != expect["priority"]:
        problems.append(f"priority {task.get('priority')}, not {expect['priority']}")
    due = _due(expect["due_date"])
    if task.get("due_date") != due:
        problems.append(f"due_date {task.get('due_date')}, not {due}")
    if not _has_any(_text(run.final_answer), expect["title_any"]):
        problems.append(f"the answer does not name the task: {_text(run.final_answer)[:120]!r}")
    return problems


MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def says_time(text: str, clock: str) -> bool:
    """HH:MM:SS said as 03:12, 3:12, 15:12 / 3:12 PM or 3点12分 (an AM or PM after it must be right)."""
    hour, minute = int(clock[:2]), int(clock[3:5])
    for h in {hour, hour % 12 or 12}:
        said_as = (
            rf"(?<!\d)0?{h}\s*([:：]\s*{minute:02d}(?!\d)|[点點時时]\s*(0?{minute}\s*分|{minute:02d}))"
            rf"(:\d\d)?\s*(?P<half>[AaPp]\.?[Mm]\b)?"
        )
        for said in re.finditer(said_as, text):
            half = (said.group("half") or "").replace(".", "").upper()
            before = text[max(0, said.start() - 3) : said.start()]
            if re.search("下午|晚上", before):
                half = half or "PM"
            elif re.search("上午|早上|凌晨", before):
                half = half or "AM"
            if not half or half == ("PM" if hour >= 12 else "AM"):
                return True
    return False


def says_date(text: str, iso: str) -> bool:
    """2026-11-24, 11月24日/号, November 24 / 24 Nov, 11/24."""
    date = dt.date.fromisoformat(iso)
    if iso in text or re.search(rf"(?<!\d)0?{date.month}\s*月\s*0?{date.day}(?!\d)", text):
        return True
    if re.search(rf"(?<!\d)0?{date.month}/0?{date.day}(?!\d)", text):
        return True
    month = MONTHS[date.month - 1]
    day = rf"(?<!\d)0?{date.day}(?!\d)"
    names = rf"({month}|{month[:3]})"
    return bool(re.search(rf"{names}\.?\s*{day}|{day}(st|nd|rd|th)?\s*(of\s*)?{names}", text, re.IGNORECASE))


def says_weekday(text: str, weekday: str) -> bool:
    """The tool's '星期二 Tuesday' said as 星期二, 周二, 礼拜二 or Tuesday."""
    chinese, english = weekday.split()
    digit = chinese[-1]
    return (
        any(f"{p}{digit}" in text for p in ("星期", "周", "礼拜"))
        or (digit == "日" and any(f"{p}天" in text for p in ("星期", "礼拜")))
        or english.casefold() in text.casefold()
    )


def check_current_time(service: Any, flow: Flow, run: Run, expect: dict[str, Any]) -> list[str]:
    calls = _calls(run, "get_current_time")
    if not calls:
        return [f"get_current_time did not run (ran: {[s.name for s in executed(run)]})"]
    result, problems = calls[-1].result or {}, []
    if result.get("timezone") != expect["timezone"]:
        problems.append(
            f"the time was read in {result.get('timezone')} "
            f"(timezone={calls[-1].arguments.get('timezone')!r}), not {expect['timezone']}"
        )
    answer = _text(run.final_answer)
    wanted = {
        "time": (says_time, result.get("time", "")),
        "date": (says_date, result.get("date", "")),
        "weekday": (says_weekday, result.get("weekday", "")),
    }
    for what in expect["answer"]:
        said, value = wanted[what]
        if not value or not said(answer, value):
            problems.append(f"the answer does not give the {what} ({value}): {answer[:120]!r}")
    return problems


def check_employee_lookup(service: Any, flow: Flow, run: Run, expect: dict[str, Any]) -> list[str]:
    calls = _calls(run, "lookup_employee")
    if not calls:
        return [f"lookup_employee did not run (ran: {[s.name for s in executed(run)]})"]
    call, problems = calls[-1], []
    found = (call.result or {}).get("employee_id")
    if found != expect["employee_id"]:
        problems.append(
            f"lookup_employee({call.arguments.get('name')!r}) found "
            f"{found or 'no single employee'}, not {expect['employee_id']}"
        )
    answer = _text(run.final_answer)
    for group in expect["answer_all"]:
        if not _has_any(answer, group):
            problems.append(f"the answer has none of {group}: {answer[:120]!r}")
    return problems


def check_clean_data(service: Any, flow: Flow, run: Run, expect: dict[str, Any]) -> list[str]:
    steps = executed(run)
    names = [s.name for s in steps]
    if names[:2] != ["read_csv", "drop_missing"]:
        return [f"the tools that ran were {names}, not read_csv then drop_missing"]
    read, dropped = steps[0].result or {}, steps[1].result or {}
    problems = []
    if read.get("rows") != 12 or read.get("source") != "orders_sample.csv":
        problems.append(
            f"read_csv loaded {read.get('source')!r} with {read.get('rows')} rows, "
            "not orders_sample.csv with 12"
        )
    if dropped.get("rows") != 6 or dropped.get("rows_dropped") != 6:
        left, gone = dropped.get("rows"), dropped.get("rows_dropped")
        problems.append(
            f"drop_missing left {left} rows (dropped {gone}), not 6 (6); "
            f"columns={steps[1].arguments.get('columns')!r}"
        )
    answer = _text(run.final_answer)
    for number, chinese in ((12, "十二"), (6, "六")):
        if not _has_number(answer, number, chinese):
            problems.append(f"the answer does not say {number}: {answer[:120]!r}")
    return problems


FLOW_CHECKS = {
    "commute_weather": check_commute_weather,
    "create_task": check_create_task,
    "current_time": check_current_time,
    "employee_lookup": check_employee_lookup,
    "clean_data": check_clean_data,
}
