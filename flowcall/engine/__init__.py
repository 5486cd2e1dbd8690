"""The run loop and what reads its record: loop state, phases, the final answer, approval,
provenance, replay, re-run, compare."""
