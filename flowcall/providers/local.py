"""The embedded default: a GGUF model run in-process by llama-cpp-python.

The prompt is rendered with the model's own chat template (read from the GGUF), so the
step records the exact text the transformer read; only the template's own role markers are
read as special tokens, never a marker a message spells (chat_prompt.py). Qwen's template lists
the tools and asks for <tool_call> tags; those are parsed here, as an OpenAI-compatible server would.
Structured output is enforced with a grammar built from the JSON Schema.
"""

from __future__ import annotations

import codecs
import json
import threading
import time
from pathlib import Path
from typing import Any

from flowcall.core import config, progress
from flowcall.core.embedded_models import TUNING, tuning_for
from flowcall.core.errors import ErrorCode, ProviderError
from flowcall.core.messages import ModelRequest, ModelTurn, ToolCall, Usage
from flowcall.core.spec import ModelConfig
from flowcall.core.tool_calls import new_call_id, parse_tool_calls
from flowcall.providers import local_model
from flowcall.providers.base import Capabilities, ProviderInfo
from flowcall.providers.chat_prompt import ChatPrompt, PromptRenderer
from flowcall.providers.fast_decoding import FastDecoder, completion
from flowcall.providers.grammar_gate import GreedyGrammar
from flowcall.providers.grammar_schema import grammar_schema
from flowcall.providers.json_constraint import ConstraintUnavailable, JsonConstraint
from flowcall.providers.prefix_cache import CHUNK, DiskStates, PrefixCache
from flowcall.providers.repetition import LoopStop

CAPABILITIES = Capabilities(
    native_tools=True,  # through the chat template, parsed from <tool_call> tags
    tool_choice_modes=["auto", "none"],
    parallel_tool_calls=True,
    json_schema_output=True,  # through a grammar
    grammar=True,
    scoring=True,
)
_STOP = ["<|im_end|>", "<|endoftext|>"]


def asked(request: ModelRequest) -> dict[str, Any]:
    """What FlowCall asked of the model (messages, tools, tool_choice, response_format), kept
    beside the prompt it was rendered into: the inspector shows both."""
    return request.model_dump(
        mode="json",
        exclude_none=True,
        include={"messages", "tools", "tool_choice", "parallel_tool_calls", "response_format"},
    )


class LocalProvider:
    name = "local"
    capabilities = CAPABILITIES
    tuning = TUNING  # each embedded model file gets its own: embedded_models.tuning_for
    _shared: dict[str, LocalProvider] = {}
    _shared_lock = threading.Lock()

    def __init__(self, model_path: Path | None = None, *, n_ctx: int = 8192, n_threads: int | None = None):
        from llama_cpp import Llama  # imported late: loading the library is not free

        self.path = local_model.require(model_path or config.model_path())
        self.model = self.path.stem
        self.tuning = tuning_for(self.path.name)
        self._lock = threading.Lock()  # one llama context serves one call at a time
        threads = n_threads or config.model_threads()  # both set: the library's defaults differ
        self.llm = Llama(
            model_path=str(self.path),
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            verbose=False,
            seed=42,
            n_batch=CHUNK,
            n_ubatch=CHUNK,
        )
        local_model.close_at_exit(self.llm)
        # a call starts from the longest prompt prefix any earlier call read (a flow's system
        # prompt and tools, the relevance prompts, the previous round), never changing an answer
        self.prefix = PrefixCache(
            self.llm, config.prompt_cache_mb() * 2**20, disk=self._disk_states(n_ctx, threads)
        )
        self.prompts = PromptRenderer(self.llm, str(self.path))  # message text never becomes a role marker

    def _disk_states(self, n_ctx: int, threads: int) -> DiskStates | None:
        """Kept states on disk, for this model file, build and settings only."""
        import llama_cpp

        megabytes = config.prompt_cache_disk_mb()
        if not megabytes:
            return None
        info = self.path.stat()
        identity = (
            f"{self.path.resolve()}|{info.st_size}|{info.st_mtime_ns}|llama-cpp-python "
            f"{llama_cpp.__version__}|{llama_cpp.llama_print_system_info().decode(errors='replace')}|n_ctx "
            f"{n_ctx}|threads {threads}|chunk {CHUNK}"
        )
        return DiskStates(config.prompt_cache_folder(), megabytes * 2**20, identity)

    @classmethod
    def shared(cls, model_path: Path | None = None) -> LocalProvider:
        """One loaded model per file per process (loading costs a second and ~500 MB)."""
        path = str(local_model.require(model_path or config.model_path()))
        with cls._shared_lock:
            if path not in cls._shared:
                cls._shared[path] = cls(Path(path))
            return cls._shared[path]

    def render(self, request: ModelRequest) -> str:
        """The prompt's text, as the model reads it (chat_prompt.py says how it is tokenized)."""
        return self.prompts.render(request).text

    def _timings(self) -> dict[str, float | int]:
        """Where the time of the last call went: reading the prompt vs generating. Tokens of a
        prompt prefix the previous call already read are reused from the KV cache, not re-read."""
        import llama_cpp

        perf = llama_cpp.llama_perf_context(self.llm._ctx.ctx)
        return {
            "prompt_eval_ms": round(perf.t_p_eval_ms, 1),
            "prompt_tokens_evaluated": perf.n_p_eval,
            "generation_ms": round(perf.t_eval_ms, 1),
            "generated_tokens": perf.n_eval,
        }

    def _streamer(self, prompt_length: int) -> Any:
        """A stopping criterion that never stops: it passes each new token's text to whoever
        watches (flowcall.core.progress). Generation itself is untouched, so the answer is the same
        watched or not. llama-cpp-python calls it with the tokens read so far, which trail the
        sampled ones by one: the last token shows with the finished step."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")  # a character may span tokens
        shown = [prompt_length]

        def observe(ids: Any, _logits: Any) -> bool:
            if len(ids) > shown[0]:
                progress.text(decoder.decode(self.llm.detokenize([int(t) for t in ids[shown[0] :]])))
                shown[0] = len(ids)
            return False

        return observe

    def _text(self, ids: list[int]) -> str:
        return self.llm.detokenize(ids).decode("utf-8", errors="replace")

    def _first_token(self, prompt: ChatPrompt, option: str) -> int:
        """The token the model would produce first when it continues `prompt` with `option`."""
        head, full = prompt.tokens(self.llm), (prompt + option).tokens(self.llm)
        if full[: len(head)] == head and len(full) > len(head):
            return full[len(head)]
        return self.llm.tokenize(option.encode(), add_bos=False, special=False)[0]

    def _fits(self, tokens: list[int], max_tokens: int | None) -> None:
        """A prompt too long for the context fails here, by name, not inside llama.cpp."""
        room = self.llm.n_ctx()
        if len(tokens) + (max_tokens or 0) > room:
            raise ProviderError(
                f"the prompt is {len(tokens)} tokens and the answer may take {max_tokens or 0}, but the "
                f"local model's context holds {room}: attach fewer or shorter tools, shorten the "
                "conversation, or lower max_tokens",
                code=ErrorCode.PROVIDER_ERROR,
            )

    def _score(self, request: ModelRequest, prompt: ChatPrompt) -> ModelTurn:
        """Log-probabilities of each option's first token after the prompt: one forward pass,
        no sampling, so the decision does not hinge on a greedy first token."""
        import llama_cpp
        import numpy as np

        captured: list[np.ndarray] = []

        def capture(_ids: np.ndarray, logits: np.ndarray) -> np.ndarray:
            captured.append(np.array(logits, dtype=np.float64))
            return logits

        started = time.perf_counter()
        with self._lock:
            llama_cpp.llama_perf_context_reset(self.llm._ctx.ctx)  # else the timings add up across calls
            tokens = self.prefix.tokens(prompt)
            self._fits(tokens, 1)
            self.prefix.prepare(tokens)
            out = self.llm.create_completion(
                prompt=tokens, max_tokens=1, temperature=0.0, logits_processor=[capture]
            )
            out["timings"] = self._timings()
        logits = captured[0]
        logprobs = logits - (logits.max() + np.log(np.exp(logits - logits.max()).sum()))
        scores = {}
        for option in request.score_options or []:
            # "yes", "Yes" and "YES" are one answer: add up their probabilities
            tokens = {self._first_token(prompt, v) for v in (option, option.capitalize(), option.upper())}
            values = np.array([logprobs[t] for t in tokens])
            scores[option] = round(float(values.max() + np.log(np.exp(values - values.max()).sum())), 4)
        out["scores"] = scores
        return ModelTurn(
            content=None,
            scores=scores,
            finish_reason="scored",
            usage=Usage(input_tokens=out["usage"]["prompt_tokens"], output_tokens=0),
            wire_request={**asked(request), "prompt": prompt.text, "score_options": request.score_options},
            wire_response=out,
            rendered_prompt=prompt.text,
            request_id=out.get("id"),
            latency_ms=(time.perf_counter() - started) * 1000,
        )

    def complete(self, request: ModelRequest) -> ModelTurn:
        prompt = self.prompts.render(request) + (request.assistant_prefix or "")
        if request.score_options:
            return self._score(request, prompt)
        fast, constraint, fallback = self._fast_way(request)
        grammar, gate = (None, None) if fast else self._grammar(request)
        wire = {
            **asked(request),
            "prompt": prompt.text,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "seed": request.seed,
            "stop": _STOP,
            "decoding": config.decoding() if fast else "plain",
            "grammar_from_json_schema": request.response_format.json_schema
            if request.response_format
            else None,
        }
        started = time.perf_counter()
        try:
            out, looping = self._generate(request, prompt, grammar, gate, constraint if fast else None, fast)
            if fallback:
                out["decoding"] = {"way": "plain", "why": fallback}
        finally:
            if gate:
                gate.close()
        return self._turn(request, prompt.text, wire, out, looping, (time.perf_counter() - started) * 1000)

    def _fast_way(self, request: ModelRequest) -> tuple[bool, JsonConstraint | None, str | None]:
        """Whether this call is written by fast_decoding (greedy calls only: a draft or a forced
        span is the greedy pick, not a sample), with its schema's constraint; and, when a
        schema keeps it on the plain path, why (the step's record says so)."""
        if config.decoding() == "plain" or request.temperature:
            return False, None, None
        if request.response_format is None:
            return True, None, None
        try:
            return True, JsonConstraint(self.llm, request.response_format.json_schema), None
        except ConstraintUnavailable as exc:
            return False, None, f"written one token per pass with llama.cpp's grammar: {exc}"

    def _grammar(self, request: ModelRequest) -> tuple[Any, Any]:
        """The response_format's grammar, and the gate that applies it greedily (or None)."""
        from llama_cpp import LlamaGrammar

        if request.response_format is None:
            return None, None
        grammar = LlamaGrammar.from_json_schema(
            json.dumps(grammar_schema(request.response_format.json_schema)), verbose=False
        )
        # greedy decoding checks the model's best tokens against the grammar, not the whole
        # vocabulary: the same answer, written faster (grammar_gate.py)
        try:
            return grammar, GreedyGrammar(self.llm, grammar) if not request.temperature else None
        except ValueError as exc:
            raise ProviderError(
                f"{exc}: the schema is too complex for llama.cpp's grammar (response_format); "
                "simplify it, or use the native or prompt calling way",
                code=ErrorCode.PROVIDER_ERROR,
            ) from exc

    def _generate(
        self, request: ModelRequest, prompt: ChatPrompt, grammar: Any, gate: Any, constraint: Any, fast: bool
    ) -> tuple[dict, LoopStop]:
        """The completion, bounded by FLOWCALL_LOCAL_TIMEOUT_S (counted from when the model is
        ours, not while queued) and stopped when it loops."""
        import llama_cpp

        limit_s, stopped = config.local_timeout_s(), []
        try:
            with self._lock:
                deadline = time.perf_counter() + limit_s

                def too_long(_ids: Any, _logits: Any) -> bool:
                    if time.perf_counter() > deadline:
                        stopped.append(True)
                    return bool(stopped)

                llama_cpp.llama_perf_context_reset(self.llm._ctx.ctx)
                tokens = self.prefix.tokens(prompt)
                self._fits(tokens, request.max_tokens)
                self.prefix.prepare(tokens)
                self.llm.set_seed(
                    request.seed if request.seed is not None else 42
                )  # a loaded state brings its own
                looping = LoopStop(len(tokens), prompt.text, self._text)
                watch = [too_long, looping] + ([self._streamer(len(tokens))] if progress.watched() else [])
                watching = llama_cpp.StoppingCriteriaList(watch)
                if fast:
                    out = self._write_fast(tokens, request.max_tokens, constraint, watching)
                else:
                    out = self._write_plain(request, tokens, grammar, gate, watching)
                out["timings"] = self._timings()
        except ValueError as exc:  # e.g. the prompt is longer than the context window
            raise ProviderError(
                f"the local model could not run: {exc}; shorten the conversation or raise n_ctx",
                code=ErrorCode.PROVIDER_ERROR,
            ) from exc
        if stopped:
            raise ProviderError(
                f"the local model's answer took longer than {limit_s:g} s and was stopped after "
                f"{out['usage']['completion_tokens']} tokens; lower max_tokens, or raise "
                "FLOWCALL_LOCAL_TIMEOUT_S on a slow machine",
                code=ErrorCode.PROVIDER_ERROR,
            )
        return out, looping

    def _write_plain(
        self, request: ModelRequest, tokens: list[int], grammar: Any, gate: Any, watch: Any
    ) -> dict:
        """One token per pass, by llama-cpp-python (sampling, FLOWCALL_DECODING=plain)."""
        return self.llm.create_completion(
            prompt=tokens,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            seed=request.seed,
            stop=_STOP,
            grammar=None if gate else grammar,
            logits_processor=[gate] if gate else None,
            repeat_penalty=1.0,
            stopping_criteria=watch,
        )

    def _write_fast(self, tokens: list[int], max_tokens: int | None, constraint: Any, watch: Any) -> dict:
        way = config.decoding()
        decoded = FastDecoder(self.llm, constraint=constraint, draft=way == "draft").decode(
            tokens, max_tokens, watch
        )
        out = completion(self.llm, tokens, decoded, str(self.path))
        out["decoding"] = {"way": way, "schema": constraint is not None, **decoded.counts.as_record()}
        return out

    @staticmethod
    def _turn(
        request: ModelRequest, prompt: str, wire: dict, out: dict, looping: LoopStop, latency_ms: float
    ) -> ModelTurn:
        """The completion as a turn: its text, the calls written in it, and what was sent."""
        choice = out["choices"][0]
        if looping.loop is not None:
            # cut the loop back to one copy: what came before it is the answer the model meant
            loop = looping.loop
            choice = {**choice, "text": looping.kept, "finish_reason": "loop"}
            out["loop"] = {
                "block_tokens": loop.block,
                "copies": loop.copies,
                "kept_tokens": loop.keep,
                "note": f"the model wrote the same {loop.block}-token block {loop.copies} times in a row "
                "and was stopped; the text is kept up to the end of the first copy",
            }
        text: str = (request.assistant_prefix or "") + choice["text"]
        calls: list[ToolCall] = []
        errors: list[str] = []
        content: str | None = text
        if request.tools and request.tool_choice != "none" and "<tool_call>" in text:
            parsed = parse_tool_calls(text)
            calls = [
                ToolCall(id=new_call_id(), name=n, arguments=a, raw_arguments=r) for n, a, r in parsed.calls
            ]
            errors = parsed.errors
            content = text.split("<tool_call>")[0].strip() or None
        return ModelTurn(
            content=content,
            tool_calls=calls,
            parse_errors=errors,
            finish_reason="tool_calls" if calls else choice.get("finish_reason"),
            usage=Usage(
                input_tokens=out["usage"]["prompt_tokens"], output_tokens=out["usage"]["completion_tokens"]
            ),
            wire_request={k: v for k, v in wire.items() if v is not None},
            wire_response=out,
            rendered_prompt=prompt,
            request_id=out.get("id"),
            latency_ms=latency_ms,
        )


def build(config: ModelConfig) -> LocalProvider:
    """The embedded model this machine runs (FLOWCALL_MODEL, FLOWCALL_MODEL_PATH), whatever the
    flow's model field says; loaded once per process."""
    return LocalProvider.shared()


INFO = ProviderInfo(
    name="local",
    label="Embedded model",
    hosted=False,
    factory=build,
    description="a small model run on this computer by llama.cpp: no key, nothing leaves the machine",
    other_variables=(
        "FLOWCALL_MODEL",
        "FLOWCALL_MODEL_PATH",
        "FLOWCALL_THREADS",
        "FLOWCALL_LOCAL_TIMEOUT_S",
        "FLOWCALL_PROMPT_CACHE_MB",
        "FLOWCALL_PROMPT_CACHE_DISK_MB",
        "FLOWCALL_DECODING",
    ),
    suggested_models=("embedded",),
)
INFOS = (INFO,)
