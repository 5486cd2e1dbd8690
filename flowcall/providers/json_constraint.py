"""A JSON Schema held token by token with llguidance: which tokens may come next, and which
tokens the schema forces whatever the model would say.

llguidance compiles the schema into a lexer and a parser and answers "which tokens are allowed
now" in well under a millisecond for Qwen's 151,936 tokens, and "which tokens are forced now"
(the rest of a key, `": "`, `", "`, a closing brace, the rest of an enum member once its
prefix is unique). Its forced tokens are the canonical tokenization of the forced text, and it
stops short of a token whose end the model could still extend, so the model never continues
from a split it would not have written itself.

Compact JSON (`, ` and `: ` between items, no newlines or indents): the keys and punctuation
are then decided by the schema and appended without a forward pass each, and the model writes
no indentation tokens. The answer is the same JSON value; its whitespace differs from what the
GBNF path lets the model write.
"""

from __future__ import annotations

import json
import threading
import warnings
import weakref
from typing import Any

import numpy as np

from flowcall.providers.grammar_schema import grammar_schema

# one tokenizer per loaded model (building it reads every token's bytes: about a second)
_tokenizers: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_tokenizers_lock = threading.Lock()
_VALUES = ("enum", "const", "default", "examples")  # values, not schemas
_OPTIONS = {
    "whitespace_flexible": False,
    "item_separator": ", ",
    "key_separator": ": ",
    "lenient": True,  # keywords it does not enforce (format, ...) are checked after the call
}


def closed(schema: Any) -> Any:
    """`schema` as llama.cpp's grammar holds a model to it: an object that names its
    properties takes no others unless it says so (the spec allows any other key, and a small
    model then adds keys of its own to a card), and writes its required properties first, in
    their order, then the optional ones."""
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: value if key in _VALUES else closed(value) for key, value in schema.items()}
    properties = schema.get("properties")
    if isinstance(properties, dict):
        required = schema.get("required") if isinstance(schema.get("required"), list) else []
        order = sorted(properties, key=lambda name: name not in required)  # stable: keeps each group's order
        out["properties"] = {name: closed(properties[name]) for name in order}
        out.setdefault("additionalProperties", False)
    return out


class ConstraintUnavailable(Exception):
    """llguidance cannot hold this schema; the caller falls back to the GBNF grammar."""


def _tokenizer(llm: Any) -> Any:
    from llguidance.llamacpp import lltokenizer_from_vocab

    with _tokenizers_lock:
        if llm not in _tokenizers:
            with warnings.catch_warnings():  # it reads each token's attributes by a deprecated name
                warnings.simplefilter("ignore", DeprecationWarning)
                _tokenizers[llm] = lltokenizer_from_vocab(llm._model.vocab)
        return _tokenizers[llm]


class JsonConstraint:
    """The schema's matcher over one answer. `allowed_best` picks greedily among allowed tokens;
    `accept` moves it on; `forced` lists what the schema decides next; `finished` once the
    value is complete."""

    def __init__(self, llm: Any, schema: dict[str, Any]):
        try:
            import llguidance
            import llguidance.numpy as llnp
        except ImportError as exc:  # a build without the wheel: the GBNF path still works
            raise ConstraintUnavailable(f"llguidance is not installed ({exc})") from exc
        self._llnp = llnp
        tokenizer = _tokenizer(llm)
        try:
            grammar = llguidance.LLMatcher.grammar_from_json_schema(
                json.dumps(closed(grammar_schema(schema))), overrides=_OPTIONS
            )
        except ValueError as exc:
            raise ConstraintUnavailable(f"the schema is not valid JSON for llguidance: {exc}") from exc
        self.matcher = llguidance.LLMatcher(tokenizer, grammar, log_level=0)
        if self.matcher.is_error():
            raise ConstraintUnavailable(self.matcher.get_error())
        self._mask = llnp.allocate_token_bitmask(1, tokenizer.vocab_size)
        self._n_vocab = llm.n_vocab()

    def allowed_best(self, logits: np.ndarray) -> int | None:
        """The highest-scoring token the schema allows now (None if it allows none)."""
        self._llnp.fill_next_token_bitmask(self.matcher, self._mask)
        best = int(np.argmax(logits))
        if self._allows(best):
            return best
        allowed = self.allowed()
        if not allowed.any():
            return None
        return int(np.argmax(np.where(allowed, logits, -np.inf)))

    def allowed(self) -> np.ndarray:
        """Which tokens the schema allows now, one bool per token (after allowed_best)."""
        bits = np.unpackbits(self._mask[0].view(np.uint8), bitorder="little")[: self._n_vocab]
        return bits.astype(bool)

    def _allows(self, token: int) -> bool:
        return bool((int(self._mask[0, token >> 5]) >> (token & 31)) & 1)

    def accept(self, token: int) -> bool:
        return self.matcher.consume_token(token)

    def forced(self) -> list[int]:
        if self.matcher.is_stopped():
            return []
        return list(self.matcher.compute_ff_tokens())

    def valid_prefix(self, tokens: list[int]) -> int:
        """How many of `tokens` the schema would take from here (a draft is cut there)."""
        return self.matcher.validate_tokens(tokens) if tokens else 0

    @property
    def finished(self) -> bool:
        """The value is complete: nothing but the end may follow."""
        return self.matcher.is_stopped()

    @property
    def error(self) -> str:
        return self.matcher.get_error()
