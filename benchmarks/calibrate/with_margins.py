"""Run a `flowcall` command with the embedded model's margins set otherwise, to measure a
calibration or a variant of `auto` before it ships (the margins live in code:
embedded_models.py, each model's DecisionTuning).

    FLOWCALL_HOME=... .venv/bin/python benchmarks/calibrate/with_margins.py --veto call --narrow -- \
        experiments run FLOW DATASET

--veto call sets auto's veto at the relevance gate's own bar (call_margin): auto then calls only
where the gate says a tool fits, and the first way of its chain (native) writes the call.
--narrow also shows that way only the tools above the veto (at most the shortlist's size), as
the schema way's gate does. Measured on the 1.5B (README, "Gate first, native writing"): better
single calls and pick-one than the schema way, but no parallel request right, so not shipped.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from flowcall.calling import auto  # noqa: E402
from flowcall.calling.relevance import has_tool_results, score_tools  # noqa: E402
from flowcall.calling.shortlist import SHORTLIST  # noqa: E402
from flowcall.cli.main import main as flowcall_main  # noqa: E402
from flowcall.providers import local  # noqa: E402


def narrowing_veto(way, request, capabilities, call):
    """auto's veto, but the chain sees only the tools above it."""
    veto = way.tuning.veto_margin
    if (
        veto is None
        or not capabilities.scoring
        or request.tool_choice != "auto"
        or not request.tools
        or has_tool_results(request.messages)
    ):
        return request
    fitting = [tool for value, tool in score_tools(request, call, "auto") if value > veto]
    if not fitting:
        return request.model_copy(update={"tool_choice": "none"})
    return request.model_copy(update={"tools": fitting[:SHORTLIST]})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--veto", help="auto's veto_margin: a number, or 'call' for the model's call_margin")
    parser.add_argument("--call", type=float, help="the relevance gate's call_margin")
    parser.add_argument(
        "--narrow", action="store_true", help="auto shows the chain only the tools above the veto"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    original = local.tuning_for

    def patched(file_name: str):
        tuning = original(file_name)
        update = {}
        if args.call is not None:
            update["call_margin"] = args.call
        if args.veto is not None:
            update["veto_margin"] = (
                update.get("call_margin", tuning.call_margin) if args.veto == "call" else float(args.veto)
            )
        tuning = tuning.model_copy(update=update)
        print(
            f"margins: call {tuning.call_margin}, veto {tuning.veto_margin} (narrowing: {args.narrow}), "
            f"more calls {tuning.more_calls_margin}",
            file=sys.stderr,
        )
        return tuning

    local.tuning_for = patched
    if args.narrow:
        auto.AutoWay._veto = narrowing_veto
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    sys.argv = ["flowcall", *command]
    flowcall_main()


if __name__ == "__main__":
    main()
