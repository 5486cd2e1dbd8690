"""Score an experiment's recorded runs again with today's scoring, without running a model.

When scoring itself changes (flowcall/scoring.py), experiments measured before can be read
with the new rules: every item's run is observed and scored afresh, and the experiment is
printed as `flowcall experiments show ID --json` prints it, with the new verdicts. The
stored verdicts are left as they were recorded. It also counts the decisions' calls that
hold to their tool's JSON Schema (what the engine would execute; it refuses the rest).

    FLOWCALL_HOME=... .venv/bin/python benchmarks/rescore.py ID > ID.rescored.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flowcall import schemas  # noqa: E402
from flowcall.experiments import item_of  # noqa: E402
from flowcall.scoring import observe, passed, score  # noqa: E402
from flowcall.service import FlowCall  # noqa: E402
from flowcall.store.experiments import get_experiment  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("experiment")
    parser.add_argument("--db", default=None, help="SQLAlchemy URL (default: SQLite in FLOWCALL_HOME)")
    args = parser.parse_args()
    service = FlowCall.open(args.db)
    experiment = get_experiment(service.store, args.experiment)
    out = json.loads(experiment.model_dump_json())
    changed = valid = calls = 0
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
            valid += name in tools and arguments is not None and schemas.validator(tools[name].parameters).is_valid(arguments)
        changed += passed(verdicts) != row["passed"]
        row["verdicts"] = [v.model_dump(mode="json") for v in verdicts]
        row["passed"] = passed(verdicts)
    print(f"experiment {experiment.id}: {changed} item(s) scored differently now; "
          f"decided calls schema-valid: {valid}/{calls}", file=sys.stderr)
    print(json.dumps(out, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
