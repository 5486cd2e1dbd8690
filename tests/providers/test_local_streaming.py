"""The embedded model as the studio and `mcp serve` use it (issue 12, points 4 and 6): one model
per process, shared by threads without one call corrupting another, and its text passed on to a
watcher token by token without changing a word of it."""

from __future__ import annotations

import threading

import pytest

from flowcall.core import progress
from flowcall.core.messages import Message, ModelRequest, ResponseFormat
from flowcall.core.spec import ModelConfig
from flowcall.providers import provider_for
from flowcall.providers.local import LocalProvider

pytestmark = pytest.mark.model


class Collect:
    def __init__(self) -> None:
        self.pieces: list[str] = []

    def started(self, kind: str, label: str) -> None:
        pass

    def text(self, piece: str) -> None:
        self.pieces.append(piece)

    def ended(self) -> None:
        pass


def _request(question: str, schema: dict | None = None) -> ModelRequest:
    return ModelRequest(
        messages=[Message(role="system", content="Answer briefly."), Message(role="user", content=question)],
        response_format=ResponseFormat(name="answer", json_schema=schema) if schema else None,
        max_tokens=48,
    )


def test_one_model_per_process(model_path):
    a = provider_for(ModelConfig(provider="local"))
    b = provider_for(ModelConfig(provider="local"))
    assert a is b is LocalProvider.shared()


def test_the_streamed_text_is_the_answer_as_it_was_written(model_path):
    provider = LocalProvider.shared()
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "rain": {"type": "boolean"}},
        "required": ["city", "rain"],
        "additionalProperties": False,
    }
    for request in (_request("用一句话介绍成都。"), _request("Will it rain in Chengdu? Guess.", schema)):
        quiet = provider.complete(request)
        seen = Collect()
        with progress.watching(seen):
            watched = provider.complete(request)
        assert watched.content == quiet.content  # watching changes nothing
        streamed = "".join(seen.pieces)
        assert len(seen.pieces) > 3 and streamed and quiet.content.startswith(streamed)
        assert "<|im_end|>" not in streamed


def test_threads_sharing_the_model_get_what_each_would_get_alone(model_path):
    provider = LocalProvider.shared()
    questions = ["What is the capital of France? One word.", "北京在哪个国家?", "Name a colour.", "2+2=?"]
    alone = {q: provider.complete(_request(q)).content for q in questions}
    together: dict[str, list[str]] = {q: [] for q in questions}

    def ask(q: str) -> None:
        together[q].append(provider.complete(_request(q)).content)

    threads = [threading.Thread(target=ask, args=(q,)) for q in questions for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert all(together[q] == [alone[q], alone[q]] for q in questions)
