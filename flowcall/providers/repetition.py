"""Stop a local model that has fallen into a loop, and keep what it wrote before the loop.

Greedy decoding under a JSON grammar can repeat one array item (or blank lines) until
max_tokens, long after the call was settled by the first copy (an example: docs/research/speed.md,
"A model caught in a loop is stopped"). A loop is the same block
of tokens written back to back until it fills at least SPAN tokens and at least COPIES
times. Text the user pasted may repeat too, so a block whose repeats also stand in the
prompt is never taken for a loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

COPIES = 4  # one repeat happens in real answers ("a, a"); four in a row of a long block do not
SPAN = 64  # a short unit must repeat longer than any run of digits or dashes a value may hold
LONGEST_BLOCK = 96  # an array item of a nested body; longer blocks would take >= 384 tokens to show


@dataclass(frozen=True)
class Loop:
    start: int  # where the first copy of the block begins, counted in the generated tokens
    block: int  # tokens in one copy
    copies: int  # how many copies stand back to back at the end

    @property
    def keep(self) -> int:
        """Generated tokens to keep: everything before the loop and one copy of it."""
        return self.start + self.block


def find_loop(generated: Sequence[int]) -> Loop | None:
    """The loop the generated tokens end in, with the shortest block, or None."""
    n = len(generated)
    for block in range(1, min(LONGEST_BLOCK, n // COPIES) + 1):
        needed = max(COPIES, -(-SPAN // block))
        if needed * block > n:
            continue
        tail = generated[n - block :]
        copies = 1
        while (copies + 1) * block <= n and list(
            generated[n - (copies + 1) * block : n - copies * block]
        ) == list(tail):
            copies += 1
        if copies >= needed:
            return Loop(start=n - copies * block, block=block, copies=copies)
    return None


class LoopStop:
    """A llama-cpp-python stopping criterion (called with every token read so far) that stops
    on a loop whose text the prompt does not hold. `loop` tells afterwards where it was."""

    def __init__(self, prompt_length: int, prompt: str, detokenize: Callable[[list[int]], str]):
        self.prompt_length = prompt_length
        self.prompt = prompt
        self.detokenize = detokenize
        self.loop: Loop | None = None
        self.kept = ""  # the generated text up to the end of the loop's first copy

    def __call__(self, ids: Sequence[int], _logits: object) -> bool:
        if self.loop is not None:
            return True
        generated = [int(t) for t in ids[self.prompt_length :]]
        loop = find_loop(generated)
        if loop is None:
            return False
        repeated = self.detokenize(generated[loop.start : loop.start + 2 * loop.block])
        if repeated.strip() and repeated in self.prompt:
            return False  # the user's own text repeats here: copying it is no loop
        self.loop = loop
        self.kept = self._kept(generated, loop)
        return True

    def _kept(self, generated: list[int], loop: Loop) -> str:
        """The text up to the end of the loop's first copy. In JSON that is where the first
        repeated item ends, so the answer still closes into its intended shape."""
        before = len(self.detokenize(generated[: loop.start]))
        one = self.detokenize(generated[: loop.keep])
        two = self.detokenize(generated[: loop.keep + loop.block])
        cut = item_end(two, before, before + len(two) - len(one))
        return two[:cut] if cut is not None else one


def item_end(text: str, start: int, stop: int) -> int | None:
    """The first comma in text[start:stop] outside any JSON string at the shallowest depth
    there: the separator after a repeated array item or object member. None if none."""
    depth, in_string, escaped, best = 0, False, False, None
    for at, char in enumerate(text[:stop]):
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
            continue
        if char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and at >= start and (best is None or depth < best[0]):
            best = (depth, at)
    return best[1] if best else None
