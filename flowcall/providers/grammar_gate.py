"""A grammar held to greedy decoding at the cost of checking one token, not the whole vocabulary.

llama-cpp-python puts the grammar in the sampler chain, where it tests every one of the
vocabulary's tokens (151,936 for Qwen) against the grammar before each pick, which about halves
the embedded model's writing speed under a JSON schema (docs/research/speed.md, "Writing under
a grammar"). Greedy decoding only needs to know whether the model's own best token
is allowed: if it is, it is the pick, exactly as with the full test. When it is not (a JSON
grammar often refuses the newline or indent the model would write), the next best 64 are
tested in one go and the best allowed one is the pick, again exactly as with the full test;
only when none of those is allowed is the whole vocabulary tested. llama.cpp's own sampler
also tests the best token first (common_sampler_sample).

Used as a logits processor, so llama-cpp-python's completion loop (stops, streaming, usage)
stays as it is. Only for temperature 0: with sampling, "resample when rejected" would change
the distribution.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

FEW = 64


class GreedyGrammar:
    """Logits processor: leaves the logits alone when the best token is allowed, else masks
    every token the grammar rejects. Call close() when the completion ends."""

    def __init__(self, llm: Any, grammar: Any):
        import llama_cpp

        self._lib = llama_cpp
        self._sampler = llama_cpp.llama_sampler_init_grammar(
            llm._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not self._sampler:
            raise ValueError("llama.cpp could not parse the grammar built from the JSON schema")
        self._seen: int | None = None  # tokens of the prompt and the answer the grammar has taken
        self._one = llama_cpp.llama_token_data()
        self._one_array = llama_cpp.llama_token_data_array(
            data=ctypes.pointer(self._one), size=1, selected=-1, sorted=False
        )
        n_vocab = llm.n_vocab()
        self._all = (llama_cpp.llama_token_data * n_vocab)()
        self._all_view = np.ctypeslib.as_array(self._all)
        self._all_view["id"] = np.arange(n_vocab, dtype=np.int32)
        self._all_array = llama_cpp.llama_token_data_array(
            data=ctypes.cast(self._all, llama_cpp.llama_token_data_p), size=n_vocab, selected=-1, sorted=False
        )
        self._few = (llama_cpp.llama_token_data * FEW)()
        self._few_view = np.ctypeslib.as_array(self._few)
        self._few_array = llama_cpp.llama_token_data_array(
            data=ctypes.cast(self._few, llama_cpp.llama_token_data_p), size=FEW, selected=-1, sorted=False
        )
        self.checks = {"best": 0, "few": 0, "all": 0}  # which test decided each token (for the benchmark)

    def _take(self, input_ids: np.ndarray) -> None:
        """Advance the grammar over the tokens written since the last call."""
        if self._seen is None:
            self._seen = len(input_ids)  # the first call sees the prompt only
            return
        for token in input_ids[self._seen :]:
            self._lib.llama_sampler_accept(self._sampler, int(token))
        self._seen = len(input_ids)

    def _apply(self, array: Any, size: int) -> None:
        array.size, array.selected, array.sorted = size, -1, False
        self._lib.llama_sampler_apply(self._sampler, ctypes.byref(array))

    def allows(self, token: int) -> bool:
        self._one.id, self._one.logit, self._one.p = token, 0.0, 0.0
        self._apply(self._one_array, 1)
        return bool(np.isfinite(self._one.logit))

    def __call__(self, input_ids: np.ndarray, logits: np.ndarray) -> np.ndarray:
        self._take(input_ids)
        best = int(np.argmax(logits))
        if self.allows(best):
            self.checks["best"] += 1
            return logits
        # the next best: every token outside them scores lower, so the best allowed one among
        # them is greedy's pick under the full test
        few = np.argpartition(logits, -FEW)[-FEW:]
        self._few_view["id"], self._few_view["logit"], self._few_view["p"] = few, logits[few], 0.0
        self._apply(self._few_array, FEW)
        allowed = np.isfinite(self._few_view["logit"])
        if allowed.any():
            self.checks["few"] += 1
            pick = few[allowed][np.argmax(logits[few][allowed])]
            only = np.full_like(logits, -np.inf)
            only[pick] = logits[pick]
            return only
        self.checks["all"] += 1
        self._all_view["logit"], self._all_view["p"] = logits, 0.0
        self._apply(self._all_array, len(self._all_view))
        return self._all_view["logit"].copy()

    def close(self) -> None:
        if self._sampler:
            self._lib.llama_sampler_free(self._sampler)
            self._sampler = None
