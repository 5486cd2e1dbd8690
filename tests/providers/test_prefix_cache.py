"""PrefixCache on the real embedded model: what it reuses, where, that it keeps its cap, and
its disk tier (states kept across processes, checked before they are loaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowcall.core.messages import Message, ModelRequest
from flowcall.providers.local import LocalProvider
from flowcall.providers.prefix_cache import CHUNK, DiskStates, _nbytes, common_prefix

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def provider(model_path):
    return LocalProvider(Path(model_path))


def test_a_prompt_reuses_only_whole_chunks_read_as_a_prompt(provider):
    cache = provider.prefix
    cache.states.clear()
    base = cache.tokens("<|im_start|>system\n" + "You answer questions about the weather. " * 40)
    first = base + cache.tokens("first question")
    assert cache.prepare(first) == 0 and provider.llm.n_tokens % CHUNK == 0
    second = base + cache.tokens("a second, different question")
    reused = cache.prepare(second)
    shared = next(i for i, (a, b) in enumerate(zip(first, second)) if a != b)
    assert reused == (shared // CHUNK) * CHUNK and reused > 0
    assert all(len(key) % CHUNK == 0 for key in cache.states)


def test_the_point_where_two_prompts_part_is_kept_for_the_next_question(provider):
    """A tool's relevance prompt is the tool (the same every run) then the question (new every
    run). The kept state at the end of one prompt holds part of its question, so it serves no
    other question; the state where two prompts part does, even after other prompts have
    filled the context in between."""
    cache = provider.prefix
    cache.states.clear()
    tool = cache.tokens(
        "<|im_start|>user\nFunction: get_weather\nDescription: " + "Reads the forecast for a city. " * 25
    )
    ask = lambda q: tool + cache.tokens(f"\nUser request: {q}")  # noqa: E731
    first, second = (
        ask("Will it rain in Chengdu tomorrow, and how cold will the night be there?"),
        ask("What is the temperature in Paris right now?"),
    )
    cache.prepare(first)
    cache.prepare(second)
    parted = (common_prefix(first, second) // CHUNK) * CHUNK
    assert 0 < parted < ((len(first) - 1) // CHUNK) * CHUNK
    assert tuple(first[:parted]) in cache.states
    cache.prepare(cache.tokens("something else entirely " * 60))  # the context now holds another prompt
    assert cache.prepare(ask("Is it windy in Oslo today?")) == parted


def test_a_kept_state_holds_no_copy_of_the_logits_buffer(provider):
    """llama-cpp-python's save_state copies n_batch x n_vocab floats (39 MB for this model) that
    are never read back; a kept state is the KV cache and a few bytes more."""
    cache = provider.prefix
    cache.states.clear()
    cache.prepare(cache.tokens("gamma " * 300))
    state = next(iter(cache.states.values()))
    assert state.scores.nbytes <= provider.llm.n_vocab() * 4
    assert _nbytes(state) < 2 * state.llama_state_size


def test_the_cap_evicts_the_oldest_state(provider):
    cache = provider.prefix
    cache.states.clear()
    one = cache.tokens("alpha " * 200)
    cache.prepare(one)
    size = _nbytes(next(iter(cache.states.values())))
    cache.capacity = int(size * 1.5)  # room for one state of about this size, not two
    try:
        cache.prepare(cache.tokens("beta " * 200))
        assert len(cache.states) == 1 and next(iter(cache.states))[:5] != tuple(one[:5])
    finally:
        cache.capacity = 1024 * 2**20


def _ask(provider: LocalProvider, question: str):
    system = "You are a careful assistant for a weather service. " * 12
    return provider.complete(
        ModelRequest(
            messages=[Message(role="system", content=system), Message(role="user", content=question)],
            max_tokens=24,
        )
    )


def test_a_new_process_starts_from_the_states_on_disk_with_the_same_answer(model_path, tmp_path):
    """Two providers with empty memories stand for two `flowcall run` processes: the second
    reads only the tail of the prompt the first one kept on disk, and answers the same."""
    first = LocalProvider(Path(model_path))
    first.prefix.disk = DiskStates(tmp_path, 256 * 2**20, "model and build")
    a = _ask(first, "Will it rain in Chengdu tomorrow?")
    assert list(tmp_path.glob("*.state")) and first.prefix.disk.hits == 0
    first.llm.close()
    second = LocalProvider(Path(model_path))
    second.prefix.disk = DiskStates(tmp_path, 256 * 2**20, "model and build")
    b = _ask(second, "Will it rain in Chengdu tomorrow?")
    assert second.prefix.disk.hits == 1
    assert (
        b.wire_response["timings"]["prompt_tokens_evaluated"]
        < a.wire_response["timings"]["prompt_tokens_evaluated"] / 2
    )
    assert b.content == a.content
    other = DiskStates(tmp_path, 256 * 2**20, "another model")  # a state is never loaded into another model
    assert other.load(second.llm, second.prefix.tokens(b.rendered_prompt), CHUNK, 0, 10 * CHUNK) is None
    second.llm.close()


def test_a_damaged_state_file_is_deleted_not_loaded(model_path, tmp_path):
    provider = LocalProvider(Path(model_path))
    disk = provider.prefix.disk = DiskStates(tmp_path, 256 * 2**20, "model and build")
    tokens = provider.prefix.tokens("delta " * 200)
    provider.prefix.prepare(tokens)
    files = list(tmp_path.glob("*.state"))
    assert len(files) == 1
    data = bytearray(files[0].read_bytes())
    data[-100] ^= 0xFF  # one flipped byte in the llama.cpp state
    files[0].write_bytes(bytes(data))
    assert disk.load(provider.llm, tokens, CHUNK, 0, len(tokens)) is None
    assert not files[0].exists()
    provider.llm.close()


def test_the_disk_tier_keeps_its_cap(model_path, tmp_path):
    provider = LocalProvider(Path(model_path))
    disk = provider.prefix.disk = DiskStates(tmp_path, 2**40, "model and build")
    provider.prefix.prepare(provider.prefix.tokens("one " + "epsilon " * 200))
    [older] = tmp_path.glob("*.state")
    disk.capacity = int(older.stat().st_size * 1.5)  # room for one such state, not two
    provider.prefix.prepare(provider.prefix.tokens("two " + "epsilon " * 200))  # as long, not the same
    assert [p.name for p in tmp_path.glob("*.state")] != [older.name] and len(
        list(tmp_path.glob("*.state"))
    ) == 1
    provider.llm.close()


def test_a_prompt_longer_than_the_context_is_refused_by_name(model_path):
    """Once llama_decode failed deep in the prompt cache ("llama_decode returned 1") when 64
    tools' docs filled the context; now the run's step says what to do."""
    from flowcall.core.errors import ProviderError

    small = LocalProvider(Path(model_path), n_ctx=256)
    long = ModelRequest(messages=[Message(role="user", content="weather " * 400)], max_tokens=8)
    for request in (long, long.model_copy(update={"score_options": ["yes", "no"], "max_tokens": 1})):
        with pytest.raises(ProviderError, match="context holds 256: attach fewer or shorter tools"):
            small.complete(request)
    assert (
        small.complete(
            ModelRequest(messages=[Message(role="user", content="hi")], max_tokens=4)
        ).usage.input_tokens
        > 0
    )
