"""Run a `flowcall` command with the schema way told otherwise how to fill arguments, to
measure a wording before it ships (the rule lives in code: calling/schema.py, ARGUMENTS).

    FLOWCALL_HOME=... .venv/bin/python benchmarks/with_arguments_rule.py asked -- \
        experiments run FLOW DATASET

Variants:
  shipped  the rule as it is in schema.py
  asked    also fill an optional argument the user's words ask for (a count, an order, a
           filter...): on the real-world calibration half the 1.5B left out values the request
           names ("only the top result", "en français", "targeting main"), since the shipped
           rule says to leave out optional arguments, and grounding drops what was never said
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flowcall.calling import schema  # noqa: E402
from flowcall.cli import main as flowcall_main  # noqa: E402

VARIANTS = {
    "shipped": schema.ARGUMENTS,
    "asked": ("Take argument values from the user's message. Fill an optional argument when the user's words "
              "ask for it (a count, an order, a filter, a time range, a language); leave out the optional "
              "arguments the user did not ask for."),
}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in VARIANTS:
        sys.exit(f"usage: with_arguments_rule.py {{{','.join(VARIANTS)}}} -- COMMAND...")
    schema.ARGUMENTS = VARIANTS[sys.argv[1]]
    print(f"arguments rule ({sys.argv[1]}): {schema.ARGUMENTS}", file=sys.stderr)
    command = sys.argv[2:]
    sys.argv = ["flowcall", *(command[1:] if command[:1] == ["--"] else command)]
    flowcall_main()


if __name__ == "__main__":
    main()
