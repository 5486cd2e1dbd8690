"""Prompt-prefix reuse for the local model that never changes an answer.

llama.cpp's numbers depend on how a prompt is cut into batches: the same prompt read in one
batch of 700 tokens, or as 600 cached tokens plus a batch of 100, gives slightly different
logits, and at temperature 0 a near-tie flips (a different call, a different card). So every
prompt, cached or not, is read in the same aligned chunks: [0, B), [B, 2B), ... and a tail.
A model state is kept only at a chunk boundary, and only for tokens that were read as a
prompt; a kept state is reused up to any chunk boundary it shares with a new prompt. A reused
prefix is then exactly what a fresh read would have computed.

States are kept in memory, keyed by their tokens, least recently used first out when the
size cap is reached; with a cap of 0 nothing is kept and every prompt is read from scratch
(in the same chunks). A second tier on disk (DiskStates) keeps them across processes, so a
one-shot `flowcall run` starts where the last one left off.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flowcall.providers.chat_prompt import ChatPrompt

CHUNK = 64  # tokens per aligned chunk: a reused prefix is a multiple of it


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens two sequences of the same type share (compared a chunk at a
    time first: this runs against every kept state on every call)."""
    n = min(len(a), len(b))
    i = 0
    while i + CHUNK <= n and a[i : i + CHUNK] == b[i : i + CHUNK]:
        i += CHUNK
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _slim(llm: Any, state: Any) -> Any:
    """The state without its copy of the logits buffer: llama-cpp-python saves n_batch rows of
    n_vocab floats (39 MB for Qwen's 151,936 tokens) that it never reads back without
    logits_all, while the KV cache of a 700-token prompt is ~8 MB. load_state broadcasts one
    zero row over the buffer instead."""
    import numpy as np

    state.scores = np.zeros((1, llm.n_vocab()), dtype=np.single)
    return state


def _nbytes(state: Any) -> int:
    return int(state.llama_state_size) + state.input_ids.nbytes + state.scores.nbytes


class DiskStates:
    """Prefix states as files under one folder, named by the SHA-256 of the model, the build
    and the prefix's tokens, so a state is only ever loaded into the model that made it. Each
    file holds a JSON header line (tokens, sizes, the blob's SHA-256) and the llama.cpp state;
    written to a temporary name and renamed, so a crash leaves no half file. Oldest use first
    out when the folder outgrows its cap."""

    def __init__(self, folder: Path, capacity_bytes: int, identity: str):
        self.folder, self.capacity = folder, capacity_bytes
        self.salt = hashlib.sha256(identity.encode()).digest()
        self.hits = 0

    def _name(self, digest: str) -> Path:
        return self.folder / f"{digest}.state"

    def boundaries(self, tokens: list[int], chunk: int, lowest: int, highest: int) -> list[tuple[int, str]]:
        """(length, file digest) for each chunk boundary in (lowest, highest], longest first."""
        running = hashlib.sha256(self.salt)
        found, done = [], 0
        for end in range(chunk, highest + 1, chunk):
            running.update(json.dumps(tokens[done:end]).encode())
            done = end
            if end > lowest:
                found.append((end, running.copy().hexdigest()))
        return found[::-1]

    def load(self, llm: Any, tokens: list[int], chunk: int, lowest: int, highest: int) -> Any | None:
        """The longest kept state for a prefix of `tokens` longer than `lowest`, or None."""
        import numpy as np
        from llama_cpp import LlamaState

        for end, digest in self.boundaries(tokens, chunk, lowest, highest):
            path = self._name(digest)
            try:
                with path.open("rb") as fh:
                    header = json.loads(fh.readline())
                    blob = fh.read()
            except (OSError, ValueError):
                continue  # absent, or unreadable: read the prompt instead
            if (
                header.get("tokens") != tokens[:end]
                or header.get("size") != len(blob)
                or header.get("sha256") != hashlib.sha256(blob).hexdigest()
            ):
                path.unlink(missing_ok=True)  # damaged or not ours: never fed to llama.cpp
                continue
            os.utime(path)  # recently used: evicted last
            ids = np.zeros(llm.n_ctx(), dtype=np.intc)
            ids[:end] = tokens[:end]
            self.hits += 1
            return _slim(
                llm,
                LlamaState(
                    input_ids=ids,
                    scores=None,
                    n_tokens=end,
                    llama_state=blob,
                    llama_state_size=len(blob),
                    seed=header.get("seed", 42),
                ),
            )
        return None

    def keep(self, tokens: list[int], chunk: int, state: Any) -> None:
        end = len(tokens)
        digest = self.boundaries(tokens, chunk, end - 1, end)[0][1]
        path = self._name(digest)
        if path.exists():
            return
        blob = bytes(state.llama_state)
        header = {
            "tokens": tokens,
            "size": len(blob),
            "sha256": hashlib.sha256(blob).hexdigest(),
            "seed": state.seed,
        }
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(f".{os.getpid()}.part")
            with partial.open("wb") as fh:
                fh.write(json.dumps(header).encode() + b"\n")
                fh.write(blob)
            partial.replace(path)
            self._evict()
        except OSError:
            pass  # a full or read-only disk costs speed, never a run

    def _evict(self) -> None:
        files = []
        for path in self.folder.glob("*.state"):
            try:
                info = path.stat()
            except OSError:
                continue
            files.append((info.st_mtime, info.st_size, path))
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files):
            if total <= self.capacity:
                break
            path.unlink(missing_ok=True)
            total -= size


class PrefixCache:
    def __init__(self, llm: Any, capacity_bytes: int, chunk: int = CHUNK, disk: DiskStates | None = None):
        if llm.n_batch != chunk:
            raise ValueError(f"the model must read batches of {chunk} tokens (n_batch), not {llm.n_batch}")
        self.llm = llm
        self.chunk = chunk
        self.capacity = capacity_bytes
        self.disk = disk
        self.states: OrderedDict[tuple[int, ...], Any] = OrderedDict()
        self.read_as_prompt = 0  # how many of the context's tokens were read as a prompt, aligned
        self.hits = self.reused_tokens = 0

    def tokens(self, prompt: str | ChatPrompt) -> list[int]:
        """The prompt's tokens, with the BOS create_completion would add. A rendered prompt
        reads the markers its messages spell as plain text (chat_prompt.py); a string is
        template text only, every marker in it read as one."""
        llm = self.llm
        bos = [llm.token_bos()] if llm._model.add_bos_token() and llm.token_bos() != -1 else []
        if isinstance(prompt, ChatPrompt):
            return bos + prompt.tokens(llm)
        return bos + llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    def prepare(self, tokens: list[int]) -> int:
        """Leave the context holding `tokens` up to their last chunk boundary before the end,
        read in aligned chunks, starting from the longest such prefix already in the context
        or kept (in memory, then on disk). Returns how many tokens were reused. The caller's
        create_completion(tokens) then reads only the tail, as a fresh read would."""
        llm, size = self.llm, self.chunk
        target = ((len(tokens) - 1) // size) * size
        live = llm.input_ids[: llm.n_tokens].tolist()
        have = (min(common_prefix(live, tokens), self.read_as_prompt) // size) * size if self.capacity else 0
        # A state's first n cells are the state of its first n tokens (attention looks back
        # only), so a kept prompt serves any prompt that shares a whole chunk with it: a new
        # question after a flow's system prompt, a tool's relevance prompt with a new request.
        best, wanted = None, tuple(tokens)
        for key in self.states:
            if len(key) > have and key[:1] == wanted[:1]:
                shared = min((common_prefix(key, wanted) // size) * size, target)
                if shared > have:
                    best, have = key, shared
        if best is not None:
            llm.load_state(self.states[best])
            self.states.move_to_end(best)
        if have:
            llm.n_tokens = have
            llm._ctx.kv_cache_seq_rm(-1, have, -1)  # the rest of the earlier prompt is not part of this one
            if tuple(tokens[:have]) not in self.states:
                # where this prompt parts from an earlier one is where the static part meets
                # the per-run part: kept on its own, it is found on disk by the next process too
                self._keep(tokens[:have])
        if self.capacity and self.disk is not None and target > have:
            state = self.disk.load(llm, tokens, size, have, target)
            if state is not None:
                llm.load_state(state)
                have = state.n_tokens
                self._remember(tuple(tokens[:have]), state)
        reused = min(have, target)
        llm.n_tokens = reused
        if target > reused:
            llm.eval(tokens[reused:target])
            self._keep(tokens[:target])
        self.read_as_prompt = len(tokens)  # the tail is read as a prompt by the caller
        if reused:
            self.hits += 1
            self.reused_tokens += reused
        return reused

    def _keep(self, tokens: list[int]) -> None:
        if not self.capacity:
            return
        state = _slim(self.llm, self.llm.save_state())
        self._remember(tuple(tokens), state)
        if self.disk is not None:
            self.disk.keep(tokens, self.chunk, state)

    def _remember(self, key: tuple[int, ...], state: Any) -> None:
        self.states[key] = state
        self.states.move_to_end(key)
        while self.states and sum(_nbytes(s) for s in self.states.values()) > self.capacity:
            self.states.popitem(last=False)
