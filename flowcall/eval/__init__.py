"""Evaluation of tool calling against public benchmarks (BFCL), without any model in this
package part: loading cases and judging calls are pure functions so they can be tested alone."""

from flowcall.eval.bfcl_check import CheckResult, check
from flowcall.eval.bfcl_data import CATEGORIES, BfclCase, load_cases

__all__ = ["CATEGORIES", "BfclCase", "CheckResult", "check", "load_cases"]
