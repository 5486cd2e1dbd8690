"""kill -9 at random points of real CLI runs, then `flowcall runs resume` until each ends; prints
the kills, the resumes, the committed steps lost, the runs left unfinished and the answers that
differ from an uninterrupted run's (tests/support/kill_resume.py says how).

    python benchmarks/kill_resume.py --kills 10 [--model-kills 1] [--db URL]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.kill_resume import kill_and_resume  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--model-kills", type=int, default=0)
    parser.add_argument("--db", default=None, help="database URL (default: a new SQLite file)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    url = args.db or f"sqlite:///{tempfile.mkdtemp(prefix='flowcall-kills-db-')}/kills.db"
    figures = kill_and_resume(
        url,
        args.kills,
        args.model_kills,
        random.Random(args.seed),
        progress=lambda f: print(f"\rkills {f.kills}", end="", file=sys.stderr, flush=True),
    )
    print(file=sys.stderr)
    for problem in figures.problems:
        print("problem:", problem)
    print(
        f"kills: {figures.kills}, resumes: {figures.resumes}, steps lost: {figures.steps_lost}, "
        f"unfinished: {figures.unfinished}, answers differ: {figures.answers_differ}"
    )


if __name__ == "__main__":
    main()
