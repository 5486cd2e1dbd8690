"""The embedded model's prompt, whose only special tokens are its chat template's own markers.

A chat template joins role markers (`<|im_start|>`, `<|im_end|>`) and the messages' text into
one string. Read with special tokens on, text that merely spells a marker (a question, a tool
result, a document, a tool's description) would become that marker: a user could close their
turn and open a system turn of their own. So every marker spelled anywhere in the messages or
the tools is swapped for a random placeholder before the template runs, and put back after
it as a piece of its own that is read as plain text (special=False): the model reads the
characters `<|im_start|>`, as written, never the role marker. A prompt with no spelled marker
is one piece, read exactly as before (the prompt cache and every answer are unchanged).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any

from flowcall.core.errors import ProviderError
from flowcall.core.messages import Message, ModelRequest


@dataclass(frozen=True)
class ChatPrompt:
    """A rendered prompt as pieces: (text, spelled). Template text may hold the template's
    markers and never a marker from a message; a spelled piece is one marker a message wrote."""

    pieces: tuple[tuple[str, bool], ...]
    markers: re.Pattern[str] | None = None  # the model's marker strings; None: it has none

    @property
    def text(self) -> str:
        """What the model reads, as one string (the step's rendered prompt)."""
        return "".join(text for text, _ in self.pieces)

    def __add__(self, more: str) -> ChatPrompt:
        """The prompt with text written after the template (an assistant prefix, a scored
        option): a message's text, so any marker in it is spelled."""
        return ChatPrompt(_joined(self.pieces, _split(more, self.markers)), self.markers)

    def tokens(self, llm: Any) -> list[int]:
        """The prompt's tokens, without a BOS (prefix_cache.PrefixCache.tokens adds it)."""
        out: list[int] = []
        for text, spelled in self.pieces:
            if text:
                out += llm.tokenize(text.encode("utf-8"), add_bos=False, special=not spelled)
        return out


class PromptRenderer:
    """A GGUF's chat template, rendering prompts whose markers are its own (module docstring)."""

    def __init__(self, llm: Any, source: str = "the model file"):
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ProviderError(f"{source} has no chat template in its metadata; use a chat/instruct GGUF")
        detok = lambda tid: llm.detokenize([tid], special=True).decode("utf-8", "replace")
        self.formatter = Jinja2ChatFormatter(
            template=template, eos_token=detok(llm.token_eos()), bos_token=detok(llm.token_bos())
        )
        self.markers = marker_pattern(llm)

    def render(self, request: ModelRequest) -> ChatPrompt:
        """The request's messages and tools (none with tool_choice "none") in the template."""
        tools = None
        if request.tools and request.tool_choice != "none":
            tools = [{"type": "function", "function": t.model_dump()} for t in request.tools]
        messages, markers = template_messages(request.messages), self.markers
        if markers is None:
            return ChatPrompt(((self.formatter(messages=messages, tools=tools).prompt, False),))
        nonce, spelled = secrets.token_hex(8), []  # a placeholder no text can guess

        def hide(found: re.Match[str]) -> str:
            spelled.append(found.group())
            return f"fc{nonce}n{len(spelled) - 1}n"

        hidden = _each_text([messages, tools], lambda text: markers.sub(hide, text))
        text = self.formatter(messages=hidden[0], tools=hidden[1]).prompt
        parts = re.split(f"fc{nonce}n(\\d+)n", text)  # text, index, text, index, ..., text
        pieces = [(part, False) if n % 2 == 0 else (spelled[int(part)], True) for n, part in enumerate(parts)]
        return ChatPrompt(_joined((), pieces), markers)


def template_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Neutral messages in the shape HF chat templates expect (arguments as objects)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        item: dict[str, Any] = {"role": m.role, "content": m.content or ""}
        if m.tool_calls:
            item["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": c.arguments if c.arguments is not None else c.raw_arguments,
                    },
                }
                for c in m.tool_calls
            ]
        if m.role == "tool":
            item["tool_call_id"] = m.tool_call_id
            item["name"] = m.name
        out.append(item)
    return out


def marker_pattern(llm: Any) -> re.Pattern[str] | None:
    """Every string the model reads as a control token when special tokens are on, longest
    first; None when the vocabulary has none."""
    import llama_cpp

    vocab = llama_cpp.llama_model_get_vocab(llm._model.model)
    control = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_UNKNOWN
    texts = {
        llm.detokenize([token], special=True).decode("utf-8", "replace")
        for token in range(llm.n_vocab())
        if llama_cpp.llama_vocab_get_attr(vocab, token) & control
    }
    texts.discard("")
    if not texts:
        return None
    return re.compile("|".join(re.escape(t) for t in sorted(texts, key=len, reverse=True)))


def _each_text(value: Any, change: Any) -> Any:
    """`value` with `change` applied to every string in it, dict keys included."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {_each_text(k, change): _each_text(v, change) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_each_text(v, change) for v in value]
    return value


def _split(text: str, markers: re.Pattern[str] | None) -> list[tuple[str, bool]]:
    """A message's text as pieces: the markers it spells apart, read as plain text."""
    if markers is None:
        return [(text, False)]
    pieces, at = [], 0
    for found in markers.finditer(text):
        pieces += [(text[at : found.start()], False), (found.group(), True)]
        at = found.end()
    return pieces + [(text[at:], False)]


def _joined(head: tuple[tuple[str, bool], ...], more: list[tuple[str, bool]]) -> tuple[tuple[str, bool], ...]:
    """Pieces with adjacent template text joined: it is read in one go, as before."""
    out = list(head)
    for text, spelled in more:
        if not text:
            continue
        if not spelled and out and not out[-1][1]:
            out[-1] = (out[-1][0] + text, False)
        else:
            out.append((text, spelled))
    return tuple(out)
