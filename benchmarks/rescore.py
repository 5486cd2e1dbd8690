"""Score an experiment's recorded runs again with today's scoring, without running a model.

When scoring itself changes (flowcall/eval/scoring.py), experiments measured before can be read
with the new rules: every item's run is observed and scored afresh, and the experiment is
printed as `flowcall experiments show ID --json` prints it, with the new verdicts. The
stored verdicts are left as they were recorded. It also counts the decisions' calls that
hold to their tool's JSON Schema (what the engine would execute; it refuses the rest), and the
passing items whose calls carry an argument the item does not name: an item's expectation is
a subset of the arguments ("other arguments are free"), while BFCL's own checker refuses any
argument its answer does not list, so those are passes a stricter checker may not give.

    FLOWCALL_HOME=... .venv/bin/python benchmarks/rescore.py ID > ID.rescored.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flowcall.core import schemas  # noqa: E402
from flowcall.eval.experiments import item_of  # noqa: E402
from flowcall.eval.scoring import observe, passed, score  # noqa: E402
from flowcall.service.front import FlowCall  # noqa: E402
from flowcall.store.experiments import get_experiment  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("experiment")
    parser.add_argument("--db", default=None, help="SQLAlchemy URL (default: SQLite in FLOWCALL_HOME)")
    args = parser.parse_args()
    service = FlowCall.open(args.db)
    experiment = get_experiment(service.store, args.experiment)
    out = json.loads(experiment.model_dump_json())
    changed = valid = calls = passing = beyond = 0
    for row in out["items"]:
        if row["passed"] is None:
            continue
        found = item_of(service, row["run_id"])
        assert found is not None, row["run_id"]
        _, item = found
        seen = observe(service.store.get_run(row["run_id"]), decision_only=bool(item.tools))
        verdicts = score(item, seen)
        tools = {t.name: t.spec() for t in item.tools or []}
        for name, arguments in seen.calls:
            calls += 1
            valid += (
                name in tools
                and arguments is not None
                and schemas.validator(tools[name].parameters).is_valid(arguments)
            )
        changed += passed(verdicts) != row["passed"]
        if passed(verdicts) and item.expect_calls:
            passing += 1
            if extra := unnamed_arguments(item, seen.calls, tools):
                beyond += 1
                print(
                    f"  {row['item_key']}: beyond the expectation "
                    f"{json.dumps(extra, ensure_ascii=False)[:300]}",
                    file=sys.stderr,
                )
        row["verdicts"] = [v.model_dump(mode="json") for v in verdicts]
        row["passed"] = passed(verdicts)
    print(
        f"experiment {experiment.id}: {changed} item(s) scored differently now; "
        f"decided calls schema-valid: {valid}/{calls}; passing items whose calls carry an argument the "
        f"item does not name: {beyond}/{passing}",
        file=sys.stderr,
    )
    print(json.dumps(out, ensure_ascii=False, indent=1))


def unnamed_arguments(item, calls, tools) -> dict:
    """Per called tool, the arguments no expectation of that tool names (a value equal to the
    parameter's declared default is left out: it changes nothing)."""
    named: dict[str, set[str]] = {}
    for expected in item.expect_calls or []:
        named.setdefault(expected.name, set()).update(expected.arguments)
    extra: dict[str, dict] = {}
    for name, arguments in calls:
        properties = tools[name].parameters.get("properties", {}) if name in tools else {}
        for key, value in (arguments or {}).items():
            if key not in named.get(name, set()) and value != (properties.get(key) or {}).get("default", ...):
                extra.setdefault(name, {})[key] = value
    return extra


if __name__ == "__main__":
    main()
