"""Greedy decoding that spends a forward pass only where the model has a choice.

Plain decoding runs the model once per written token. Here each pass reads, in one batch:
the token just picked, the tokens the JSON Schema forces after it (json_constraint.py), and a
draft of what may follow, copied from the context (drafting.py). The model's picks at the
draft's positions are compared with the draft: kept as far as they agree, the rest of the
batch is dropped from the context. A pass thus writes at least one token and often many.

The picks are the model's own greedy picks under the same constraint, so a draft is kept only
where the model agrees with it; but reading tokens in a batch instead of one by one moves the
logits a little (up to 0.6 on the embedded 1.5B: llama.cpp computes a batch another way), which
can turn a near tie the other way. So drafts are asked for (FLOWCALL_DECODING=draft), not the
default, and where a schema forces tokens the answer is the same JSON, not always the same text.
"""

from __future__ import annotations

import ctypes
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from flowcall.providers.drafting import lookup_draft
from flowcall.providers.json_constraint import JsonConstraint

# called with every token of the context so far (prompt and answer); True stops the answer
Watch = Callable[[Sequence[int], Any], bool]


@dataclass
class Counts:
    """Where the written tokens came from, for the step's record and the benchmark."""

    passes: int = 0  # forward passes over the answer (the prompt's tail is one of them)
    picked: int = 0  # tokens the model chose at a pass of its own
    forced: int = 0  # tokens the schema decided, appended without a choice
    drafted: int = 0  # tokens guessed from the context and checked
    accepted: int = 0  # guessed tokens the model's own picks agreed with

    def as_record(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class Decoded:
    tokens: list[int] = field(default_factory=list)
    finish_reason: str = "length"
    counts: Counts = field(default_factory=Counts)
    stopped_by_watch: bool = False


class FastDecoder:
    """One answer of a llama_cpp.Llama whose context already holds the prompt up to some point
    (prefix_cache.PrefixCache.prepare). Not thread-safe: the provider's lock holds the model."""

    def __init__(self, llm: Any, *, constraint: JsonConstraint | None, draft: bool = True):
        import llama_cpp

        self.llm = llm
        self.lib = llama_cpp
        self.constraint = constraint
        self.draft = draft
        self.vocab = llm._model.vocab
        self.n_vocab = llm.n_vocab()
        self.room = llm.n_batch  # the batch the context was made with holds this many tokens
        # when a dict: how far each picked token's logit led the next allowed one, by its place
        # in the answer (tests/providers/test_fast_decoding.py: drafts change only near ties)
        self.margins: dict[int, float] | None = None

    def _read(self, tokens: list[int], first_output: int) -> list[np.ndarray]:
        """Read `tokens` after the context; the logits at each position from `first_output` on."""
        llm, n_past = self.llm, self.llm.n_tokens
        llm._ctx.kv_cache_seq_rm(-1, n_past, -1)
        llm._batch.set_batch(batch=tokens, n_past=n_past, logits_all=False)
        for i in range(len(tokens)):
            llm._batch.batch.logits[i] = i >= first_output
        llm._ctx.decode(llm._batch)
        llm.input_ids[n_past : n_past + len(tokens)] = tokens
        llm.n_tokens = n_past + len(tokens)
        rows = []
        for k in range(len(tokens) - first_output):
            pointer = llm._ctx.get_logits_ith(first_output + k)
            rows.append(
                np.ctypeslib.as_array(
                    ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), (self.n_vocab,)
                ).copy()
            )
        return rows

    def _pick(self, logits: np.ndarray) -> int | None:
        if self.constraint is None:
            return int(np.argmax(logits))
        return self.constraint.allowed_best(logits)

    def _margin(self, logits: np.ndarray) -> float:
        allowed = logits if self.constraint is None else np.where(self.constraint.allowed(), logits, -np.inf)
        top = np.partition(allowed, -2)[-2:]
        return float(top[1] - top[0])

    def _ends(self, token: int) -> bool:
        return bool(self.lib.llama_vocab_is_eog(self.vocab, token))

    def decode(self, prompt: list[int], max_tokens: int | None, watch: Watch) -> Decoded:
        """Write the answer to `prompt` (the whole prompt; the context holds a prefix of it)."""
        llm, out = self.llm, Decoded()
        limit = max_tokens if max_tokens and max_tokens > 0 else llm.n_ctx() - len(prompt)
        llm.n_tokens = min(llm.n_tokens, len(prompt) - 1)
        while len(prompt) - llm.n_tokens > self.room:  # only when the caller read no prefix
            self._read(prompt[llm.n_tokens : llm.n_tokens + self.room], self.room - 1)
        tail = prompt[llm.n_tokens :]
        logits = self._read(tail, len(tail) - 1)[0]  # one batch, as plain decoding reads it
        out.counts.passes += 1
        while len(out.tokens) < limit:
            token = self._pick(logits)
            if self.margins is not None:
                self.margins[len(out.tokens)] = self._margin(logits)
            if token is None or self._ends(token):
                out.finish_reason = "stop"
                return out
            out.counts.picked += 1
            if self._take(out, [token], prompt, watch):
                return out
            ahead = self._forced(limit - len(out.tokens))
            if ahead and self._take(out, ahead, prompt, watch, forced=True):
                return out
            if len(out.tokens) >= limit:
                return out
            room = min(limit - len(out.tokens), self.room - 1 - len(ahead))
            guess = self._guess(prompt + out.tokens, room) if room > 0 else []
            rows = self._read([token, *ahead, *guess], len(ahead))
            out.counts.passes += 1
            logits = self._check(out, guess, rows, prompt, watch)
            if logits is None:
                return out
        return out

    def _forced(self, room: int) -> list[int]:
        if self.constraint is None:
            return []
        return self.constraint.forced()[: min(room, self.room - 1)]

    def _guess(self, context: list[int], room: int) -> list[int]:
        """A draft of at most `room` tokens, cut where the schema would refuse it."""
        if not self.draft:
            return []
        guess = lookup_draft(np.asarray(context, dtype=np.intc))[:room]
        if self.constraint is not None and guess:
            guess = guess[: self.constraint.valid_prefix(guess)]
        return guess

    def _check(
        self, out: Decoded, guess: list[int], rows: list[np.ndarray], prompt: list[int], watch: Watch
    ) -> np.ndarray | None:
        """Keep the guessed tokens the model's own picks agree with; drop the rest from the
        context. Returns the logits the next pick reads, or None when the answer ended."""
        out.counts.drafted += len(guess)
        kept = 0
        for i, token in enumerate(guess):
            if self._pick(rows[i]) != token:
                break
            kept += 1
            out.counts.accepted += 1
            if self._take(out, [token], prompt, watch):
                self._drop(len(guess) - kept)
                return None
        self._drop(len(guess) - kept)
        return rows[kept]

    def _drop(self, count: int) -> None:
        if count:
            self.llm.n_tokens -= count
            self.llm._ctx.kv_cache_seq_rm(-1, self.llm.n_tokens, -1)

    def _take(
        self, out: Decoded, tokens: list[int], prompt: list[int], watch: Watch, forced: bool = False
    ) -> bool:
        """Add written tokens; True when the answer is over (the schema's value is complete,
        or a watcher stopped it)."""
        for token in tokens:
            out.tokens.append(token)
            if forced:
                out.counts.forced += 1
            if self.constraint is not None and not self.constraint.accept(token):
                raise RuntimeError(f"the JSON constraint refused a token it offered: {self.constraint.error}")
            if watch(prompt + out.tokens, None):
                out.stopped_by_watch = True
                return True
            if self.constraint is not None and self.constraint.finished:
                out.finish_reason = "stop"
                return True
        return False


def completion(llm: Any, prompt: list[int], decoded: Decoded, model: str) -> dict[str, Any]:
    """The answer in the shape llama-cpp-python's create_completion returns."""
    text = llm.detokenize(decoded.tokens, prev_tokens=prompt).decode("utf-8", errors="replace")
    return {
        "id": f"cmpl-{uuid.uuid4()}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": decoded.finish_reason}],
        "usage": {
            "prompt_tokens": len(prompt),
            "completion_tokens": len(decoded.tokens),
            "total_tokens": len(prompt) + len(decoded.tokens),
        },
    }
