"""The runs waiting for a person (flowcall/studio/waiting.py): listed through the store from a
real SQLite database holding a run paused on a call that needs approval (scripted model), and
shown in the studio's sidebar on every page with a link that opens the run on the Run page."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs

import pytest
from streamlit.testing.v1 import AppTest

from flowcall.core.spec import DecisionConfig, Flow
from flowcall.core.steps import RunStatus, utcnow
from flowcall.engine.approval import approve_all
from flowcall.providers.scripted import ScriptedProvider
from flowcall.service.front import FlowCall
from flowcall.studio.waiting import waiting_for, waiting_runs
from tests.test_page_models import walk
from tests.test_studio import ROOT, page, shown

FLOW = Flow(
    name="tasks",
    tools=["task/v1/create_task"],
    needs_approval=["create_task"],
    max_rounds=1,
    decision=DecisionConfig(provider="scripted"),
)


def paused(question: str, tool_calls=None) -> str:
    """A run of FLOW paused on its create_task call, recorded in the test's database: its id."""
    app = FlowCall(
        store=FlowCall.open().store,
        provider_factory=lambda cfg: ScriptedProvider([tool_calls or [("create_task", {"title": "写周报"})]]),
    )
    run = app.run(FLOW, question)
    assert run.status == RunStatus.WAITING_APPROVAL
    return run.id


def walk_links(node) -> list:
    """The page links under `node` (AppTest has no accessor of its own for them)."""
    return [n for n in walk(node) if getattr(n, "type", None) == "page_link"]


def sidebar_links(app: AppTest) -> list[dict]:
    """The page links drawn in the sidebar: label, page and query parameters."""
    return [
        {
            "label": link.proto.label,
            "page": link.proto.page,
            "query": parse_qs(link.proto.query_string),
            "help": link.proto.help,
        }
        for link in walk_links(app.sidebar)
    ]


def sidebar_text(app: AppTest) -> str:
    return "\n".join(shown(m.value) for m in app.sidebar.markdown)


def test_waiting_runs_lists_each_paused_run_newest_first_with_its_call():
    first = paused("记一下:写周报")
    second = paused("两个任务", [("create_task", {"title": "a"}), ("create_task", {"title": "b"})])
    app = FlowCall.open()
    waiting = waiting_runs(app)
    assert [w["run_id"] for w in waiting] == [second, first]
    newest = waiting[0]
    assert (
        newest["flow_name"] == "tasks"
        and newest["question"] == "两个任务"
        and newest["tool"] == "create_task"
    )
    assert [c["arguments"] for c in newest["calls"]] == [{"title": "a"}, {"title": "b"}]
    assert newest["since"].tzinfo is not None and utcnow() - newest["since"] < timedelta(minutes=5)
    # answered, it no longer waits
    resumed = FlowCall(store=app.store, provider_factory=lambda cfg: ScriptedProvider(["记好了"]))
    assert resumed.resume(first, approver=approve_all).status == RunStatus.SUCCEEDED
    assert [w["run_id"] for w in waiting_runs(app)] == [second]


def test_the_sidebar_shows_a_paused_run_with_a_link_to_the_run_page():
    run_id = paused("记一下:写周报")
    app = page("app.py")
    assert "Waiting for you (1)" in sidebar_text(app)
    [link] = sidebar_links(app)
    assert link["page"] == "ask" and link["query"] == {
        "run": [run_id]
    }  # /ask?run=ID, the Run page's deep link
    assert shown(link["label"]) == "tasks · create_task" and shown(link["help"]).startswith(
        "记一下:写周报 (waiting "
    )
    for other in ("pages/runs.py", "pages/plugins.py"):  # on every page
        app.switch_page(other)
        app.run()
        assert not app.exception, app.exception
        assert [link["query"] for link in sidebar_links(app)] == [{"run": [run_id]}]


def test_with_no_paused_run_the_sidebar_shows_nothing():
    app = page("app.py")
    assert "Waiting for you" not in sidebar_text(app) and sidebar_links(app) == []


def test_untrusted_text_in_the_sidebar_is_escaped(monkeypatch: pytest.MonkeyPatch):
    """A flow name and a question are anyone's text: a link in them is not made."""
    app = FlowCall(
        store=FlowCall.open().store,
        provider_factory=lambda cfg: ScriptedProvider([[("create_task", {"title": "x"})]]),
    )
    run = app.run(FLOW, "[click](http://evil.example) **now**")
    assert run.status == RunStatus.WAITING_APPROVAL
    studio = page("app.py")
    [link] = sidebar_links(studio)
    assert "\\[click\\]\\(http\\:\\/\\/\u2060evil\\.example\\)" in link["help"]  # no link made
    assert "\\*\\*now\\*\\*" in link["help"] and shown(link["help"]).startswith(
        "[click](http://evil.example) **now**"
    )


def test_the_page_variant_lists_every_run_with_an_open_link_and_can_skip_one():
    keep, skipped = paused("one"), paused("two")

    def studio(root: str, skip: str) -> None:
        """A studio of two pages: one that draws the box, and the Run page its links open."""
        import streamlit as st

        from flowcall.service.front import FlowCall
        from flowcall.studio.waiting import show_waiting

        run_page = st.Page(f"{root}/pages/run.py", title="Run", url_path="ask")
        box = st.Page(
            lambda: show_waiting(FlowCall.open(), "page", skip=skip, run_page=run_page),
            title="Box",
            url_path="box",
            default=True,
        )
        st.navigation([box, run_page]).run()

    app = AppTest.from_function(studio, args=(str(ROOT), skipped), default_timeout=60)
    app.run()
    assert not app.exception, app.exception
    links = walk_links(app.main)
    assert [(link.proto.page, parse_qs(link.proto.query_string)) for link in links] == [
        ("ask", {"run": [keep]})
    ]
    said = [shown(m.value) for m in app.markdown]
    assert said[0].startswith(
        "**Waiting for you (1)**: these runs are paused until you approve, deny or edit"
    )
    assert said[1] == "**tasks** · create_task · waiting under a minute\none", said


def test_how_long_a_run_has_waited_in_words():
    now = utcnow()
    assert waiting_for(now - timedelta(seconds=5), now) == "under a minute"
    assert waiting_for(now - timedelta(minutes=12), now) == "12 min"
    assert waiting_for(now - timedelta(hours=3), now) == "3 h"
    assert waiting_for(now - timedelta(days=3), now).startswith("since ")
