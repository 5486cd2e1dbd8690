"""Values a flow's prompts may name: {{today}}, {{tomorrow}}, {{now}}, {{weekday}}.

Small models cannot know the date, and "明天" means nothing without it."""

from __future__ import annotations

from datetime import datetime, timedelta


def fill_variables(text: str) -> str:
    now = datetime.now().astimezone()
    values = {
        "today": now.date().isoformat(),
        "tomorrow": (now.date() + timedelta(days=1)).isoformat(),
        "now": now.isoformat(timespec="minutes"),
        "weekday": now.strftime("%A"),
    }
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    return text
