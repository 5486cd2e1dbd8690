"""OpenAI-compatible: POST /v1/chat/completions with `model` = a flow's name runs the flow on
the last user message (after the earlier ones, for a flow with `conversation`) and answers as
a chat completion, so any OpenAI client can use a flow.
The flow's own tools run inside FlowCall; they are never returned as `tool_calls`. The run's
id comes back in the X-FlowCall-Run-Id header, to open it in the inspector.

With `stream: true` the answer comes as `chat.completion.chunk` events: a text answer from the
polish model as the model writes it, any other answer when the run ends (LiveAnswer says why).
The steps show as SSE comments, which clients skip."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, StreamingResponse

from flowcall.api.access import Caller
from flowcall.api.context import ApiContext, api_of, caller
from flowcall.api.errors import CONFLICT, INVALID_ARGUMENT, ApiError, error_body
from flowcall.api.running import Going, Written, data_line, launch, steps_then_run, wait_for
from flowcall.api.runs import _startable, take_slot
from flowcall.core.steps import ChatTurn, Run, RunStatus, Step
from flowcall.engine.final_answer import settled_text
from flowcall.service.door import start_run
from flowcall.workers.here import HereDoor

router = APIRouter(prefix="/v1", tags=["OpenAI-compatible"])
RUN_ID_HEADER = "X-FlowCall-Run-Id"
MAX_TURNS, MAX_MESSAGE_CHARS = 100, 20_000  # as a run keeps them (steps.Run.context)


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[dict[str, Any]] | None = None


class ChatRequest(BaseModel):
    """The fields FlowCall reads; others (temperature, tools, ...) are accepted and left to the flow."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(description="The name of a saved flow.")
    messages: list[ChatMessage] = Field(min_length=1, max_length=1_000)
    stream: bool = False


@router.get("/models")
def list_models(who: Caller = Depends(caller), api: ApiContext = Depends(api_of)) -> dict[str, Any]:
    """The flows this key may use, as models."""
    flows = [f for f in api.service.list_flows() if who.allows(f["name"])]
    return {
        "object": "list",
        "data": [
            {
                "id": f["name"],
                "object": "model",
                "created": int(f["updated_at"].timestamp()) if f["updated_at"] else 0,
                "owned_by": "flowcall",
            }
            for f in flows
        ],
    }


@router.post("/chat/completions")
async def chat_completions(
    body: ChatRequest, who: Caller = Depends(caller), api: ApiContext = Depends(api_of)
) -> Any:
    question = last_user_text(body.messages)
    flow = await run_in_threadpool(_startable, api, who, body.model, None)
    context = earlier_turns(body.messages) if flow.conversation else None
    run_id = str(uuid.uuid4())
    headers = {RUN_ID_HEADER: run_id}
    slot = await run_in_threadpool(take_slot, api, who)
    service = api.service
    going = launch(
        lambda on_step: start_run(
            service,
            HereDoor(service, on_step=on_step),
            flow,
            question,
            run_id=run_id,
            context=context,
            api_key=who.api_key,
        ),
        slot,
        watched=body.stream,
    )
    if body.stream:
        live = LiveAnswer(flow.polish is not None and not flow.polish.output_schema)
        return StreamingResponse(
            _chunks(going, body.model, run_id, live),
            media_type="text/event-stream",
            headers={**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    run = await wait_for(going, api.settings.wait_s)
    if run is None:
        raise ApiError(
            504,
            "TIMEOUT",
            f"the run takes longer than {api.settings.wait_s:g} s; it goes on: GET /v1/runs/{run_id}",
            headers=headers,
            run_id=run_id,
        )
    _check_answered(run, headers)
    return JSONResponse(completion(run, body.model), headers=headers)


def _text(message: ChatMessage) -> str:
    content = message.content
    if isinstance(content, list):
        content = "\n".join(str(part.get("text", "")) for part in content if part.get("type") == "text")
    return content or ""


def _last_question(messages: list[ChatMessage]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user" and _text(messages[index]).strip():
            return index
    raise ApiError(
        400, INVALID_ARGUMENT, "the messages hold no user message with text; the last one is the question"
    )


def last_user_text(messages: list[ChatMessage]) -> str:
    """The question: the last user message, its text parts joined."""
    return _text(messages[_last_question(messages)])[:MAX_MESSAGE_CHARS]


def earlier_turns(messages: list[ChatMessage]) -> list[ChatTurn]:
    """The chat before the question, for a flow with `conversation`: the user's and the
    assistant's text, the last MAX_TURNS of it. System messages are left out (the flow's own
    prompt governs), and so are tool messages (the flow's tools are its own)."""
    earlier = [
        m
        for m in messages[: _last_question(messages)]
        if m.role in ("user", "assistant") and _text(m).strip()
    ]
    turns = []
    for message in earlier[-MAX_TURNS:]:
        text = _text(message)
        if len(text) > MAX_MESSAGE_CHARS:
            raise ApiError(
                400,
                INVALID_ARGUMENT,
                f"an earlier {message.role} message is over {MAX_MESSAGE_CHARS} "
                "characters; shorten it or leave it out",
            )
        turns.append(ChatTurn(role=message.role, content=text))
    return turns


def answer_text(run: Run) -> str:
    answer = run.final_answer
    return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)


def completion(run: Run, model: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{run.id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer_text(run)},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": run.tokens_in,
            "completion_tokens": run.tokens_out,
            "total_tokens": run.tokens_in + run.tokens_out,
        },
    }


def _check_answered(run: Run, headers: dict[str, str]) -> None:
    """A run that gave no answer is an error to an OpenAI client, with the run's code."""
    if run.status == RunStatus.SUCCEEDED:
        return
    if run.status == RunStatus.WAITING_APPROVAL:
        raise ApiError(
            409,
            "WAITING_APPROVAL",
            f"a call waits for a person; decide it with POST /v1/runs/{run.id}/resume",
            headers=headers,
            run_id=run.id,
        )
    if run.status == RunStatus.CANCELLED:
        raise ApiError(
            409, CONFLICT, f"the run was cancelled: {run.error or ''}".strip(), headers=headers, run_id=run.id
        )
    code = (run.error or "RUN_FAILED").split(":", 1)[0].strip() or "RUN_FAILED"
    raise ApiError(
        502,
        code,
        f"the flow's run failed: {run.error or 'no reason recorded'}",
        headers=headers,
        run_id=run.id,
    )


def _chunk(run_id: str, model: str, delta: dict[str, Any], finish: str | None = None) -> str:
    body = {
        "id": f"chatcmpl-{run_id}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return data_line(body)


class LiveAnswer:
    """Which of the text a run's models write is its answer, sent as content as it comes.

    Only a text answer from the polish model (`live`) is sent while it is written: that text
    becomes the answer with FlowCall's internal labels taken out and maybe a line added at its
    end, and final_answer.settled_text says how much of it is sure so far. All else waits for
    the run's end: a decision model's text may turn out to be a call (the embedded model's
    <tool_call> markup, or words before a native call) and, with no polish model, is the
    answer only once the run ends without another tool call; a structured answer is parsed,
    checked against its schema (asked again if it fails) and written out anew. What was not
    sent by the run's end is sent then, so the content sent adds up to the answer exactly."""

    def __init__(self, live: bool) -> None:
        self.live, self.sent, self.written, self.step = live, "", "", 0

    def piece(self, item: Written) -> str:
        """The content to send now for this piece of text ("" for none yet)."""
        if not self.live or item.kind != "polish":
            return ""
        if item.again or item.step != self.step:  # a call that started over, or another step
            self.written, self.step = "", item.step
        self.written += item.text
        settled = settled_text(self.written)
        if len(settled) <= len(self.sent) or not settled.startswith(self.sent):
            return ""
        new, self.sent = settled[len(self.sent) :], settled
        return new

    def rest(self, answer: str) -> str | None:
        """What is left to send of the run's answer; None if what was sent is not how it
        begins (a call that started over and wrote something else: it cannot be taken back)."""
        return answer[len(self.sent) :] if answer.startswith(self.sent) else None


async def _chunks(going: Going, model: str, run_id: str, live: LiveAnswer) -> Any:
    try:
        yield _chunk(run_id, model, {"role": "assistant", "content": ""})
        run = None
        async for item in steps_then_run(going):
            if isinstance(item, Written):
                if content := live.piece(item):
                    yield _chunk(run_id, model, {"content": content})
            elif item is None or isinstance(item, Step):
                yield f": {'step ' + str(item.seq) + ' ' + str(item.kind) if item else 'keep-alive'}\n\n"
            else:
                run = item
        try:
            _check_answered(run, {})
        except ApiError as exc:
            yield data_line(error_body(exc.code, exc.message, run_id=run_id))
            return
        rest = live.rest(answer_text(run))
        if rest is None:
            message = (
                "the model started its answer over after part of it was sent, and wrote it "
                f"otherwise; read the whole answer with GET /v1/runs/{run_id}"
            )
            yield data_line(error_body("STREAM_DIVERGED", message, run_id=run_id))
            return
        for start in range(0, len(rest), 200):
            yield _chunk(run_id, model, {"content": rest[start : start + 200]})
        yield _chunk(run_id, model, {}, "stop")
        yield "data: [DONE]\n\n"
    except Exception as exc:  # noqa: BLE001 - the stream has started: the error goes in it
        failed = error_body("INTERNAL", f"the run could not go on ({type(exc).__name__})")
        yield data_line(failed)
