"""Text as it is written, over HTTP (issue 49, point 3): a real `flowcall serve` process whose
flows run on a hosted model, the fake OpenAI-compatible server on 127.0.0.1, which streams its
answers a word at a time. /v1/chat/completions with `stream: true` sends the polish model's
text while it is written, and only the answer's text; the REST stream adds `text` events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import httpx
import openai
import pytest

from flowcall.testing.fake_server import FakeModelServer
from tests.api.server import Server, api_server
from tests.api.test_api import events

FAKE = {"provider": "openai-compatible", "model": "fake"}
CARD = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "department": {"type": "string"}},
    "required": ["name", "department"],
}
FLOWS = {
    "staff": {"name": "staff", "tools": ["hr/v1/lookup_employee"], "decision": FAKE, "polish": FAKE},
    "staff-card": {
        "name": "staff-card",
        "tools": ["hr/v1/lookup_employee"],
        "decision": FAKE,
        "polish": {**FAKE, "output_schema": CARD},
    },
    "direct": {"name": "direct", "tools": [], "decision": FAKE},
}
PREAMBLE = "Let me look that up."  # what the decision model writes beside its call


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with FakeModelServer(delay_s=0.0, piece_delay_s=0.01, preamble=PREAMBLE) as model:
        env = {"OPENAI_COMPATIBLE_BASE_URL": model.base_url, "NO_PROXY": "127.0.0.1,localhost"}
        with api_server(tmp_path_factory.mktemp("api-stream"), env=env, flows=FLOWS) as running:
            yield running


def chat_stream(server: Server, flow: str, question: str) -> tuple[list[tuple[str, object]], str]:
    """What a streamed chat completion sends, in order: ("step", "4 polish") for each comment,
    ("content", piece) for each chunk with content, ("finish", reason), ("done", None); and the
    run's id."""
    body = {"model": flow, "stream": True, "messages": [{"role": "user", "content": question}]}
    sent: list[tuple[str, object]] = []
    with httpx.Client(base_url=server.base, headers=server.headers(), timeout=60) as http:
        with http.stream("POST", "/v1/chat/completions", json=body) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if line.startswith(": step "):
                    sent.append(("step", line[len(": step ") :]))
                elif line == "data: [DONE]":
                    sent.append(("done", None))
                elif line.startswith("data: "):
                    chunk = json.loads(line[len("data: ") :])
                    assert "error" not in chunk, chunk
                    choice = chunk["choices"][0]
                    if choice["delta"].get("content"):
                        sent.append(("content", choice["delta"]["content"]))
                    if choice["finish_reason"]:
                        sent.append(("finish", choice["finish_reason"]))
    return sent, response.headers["x-flowcall-run-id"]


def unstreamed(server: Server, flow: str, question: str) -> str:
    client = openai.OpenAI(base_url=f"{server.base}/v1", api_key=server.keys["all"], max_retries=0)
    reply = client.chat.completions.create(model=flow, messages=[{"role": "user", "content": question}])
    return reply.choices[0].message.content


def content(sent: list[tuple[str, object]]) -> str:
    return "".join(str(value) for kind, value in sent if kind == "content")


def test_the_polish_models_text_is_sent_as_it_is_written(server: Server) -> None:
    sent, run_id = chat_stream(server, "staff", "张伟")
    run = server.app.store.get_run(run_id)
    polish = next(s for s in run.steps if s.kind == "polish")

    polish_done = sent.index(("step", f"{polish.seq} polish"))
    assert [kind for kind, _ in sent[:polish_done]].count("content") >= 5  # before the step ended
    assert sent[-2:] == [("finish", "stop"), ("done", None)]
    # the whole answer, and only the answer: not what the decision model wrote beside its call
    assert content(sent) == run.final_answer == unstreamed(server, "staff", "张伟")
    assert run.steps[0].result == PREAMBLE and PREAMBLE not in content(sent)
    # the model's text had FlowCall's labels in it (it echoes its brief): they never went out
    assert "Tool results:" in polish.result and "Tool results:" not in content(sent)


def test_a_structured_answer_is_sent_as_the_run_gives_it(server: Server) -> None:
    sent, run_id = chat_stream(server, "staff-card", "张伟")
    run = server.app.store.get_run(run_id)
    answer = content(sent)
    assert json.loads(answer) == run.final_answer and answer == unstreamed(server, "staff-card", "张伟")
    last_step = max(i for i, (kind, _) in enumerate(sent) if kind == "step")
    assert all(kind != "content" for kind, _ in sent[:last_step])  # parsed and checked first


def test_a_decision_that_answers_directly_is_sent_once_the_run_shows_it(server: Server) -> None:
    sent, run_id = chat_stream(server, "direct", "What is FlowCall?")
    assert content(sent) == "answer to: What is FlowCall?" == server.app.store.get_run(run_id).final_answer
    first_content = next(i for i, (kind, _) in enumerate(sent) if kind == "content")
    assert first_content > sent.index(("step", "1 model_call"))


def test_the_run_stream_sends_the_text_of_each_model_step(server: Server) -> None:
    with httpx.Client(base_url=server.base, headers=server.headers(), timeout=60) as http:
        body = http.post("/v1/flows/staff/runs", json={"question": "张伟", "stream": True}).text
    found = events(body)
    steps = {data["seq"]: data for name, data in found if name == "step"}
    texts = [(i, data) for i, (name, data) in enumerate(found) if name == "text"]
    assert texts and all(set(data) == {"step", "kind", "text"} for _, data in texts)
    for seq, step in steps.items():
        written = [data for _, data in texts if data["step"] == seq]
        if step["kind"] in ("model_call", "polish") and step["result"]:
            assert "".join(d["text"] for d in written) == step["result"]
            assert {d["kind"] for d in written} == {step["kind"]}
        else:
            assert written == []  # tools write no text; the decision's calls are not text
    polish = next(seq for seq, step in steps.items() if step["kind"] == "polish")
    step_index = next(i for i, (name, data) in enumerate(found) if name == "step" and data["seq"] == polish)
    assert sum(1 for i, data in texts if data["step"] == polish and i < step_index) > 5
    assert [name for name, _ in found][-1] == "run"


def test_the_server_logged_no_traceback(server: Server) -> None:
    assert "Traceback" not in Path(server.log).read_text(encoding="utf-8")
