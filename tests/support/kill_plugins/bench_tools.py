"""Tools for the kill -9 and resume runs (kill_resume.py beside this folder): each takes a
moment (so a kill can land inside it) and appends one line per execution to KILL_BENCH_LOG;
the read_* tools are read-only, the write_* ones change the world (a resume repeats them only
with a person's approval)."""

from __future__ import annotations

import os
import time

from flowcall.tools.python_plugins import tool


def _work(name: str, item: str) -> str:
    with open(os.environ.get("KILL_BENCH_LOG", os.devnull), "a", encoding="utf-8") as log:
        log.write(f"{os.getpid()} {name} {item}\n")
    time.sleep(0.15)
    return f"{name} did {item}"


@tool("bench/v1/read_alpha", read_only=True)
def read_alpha(item: str) -> str:
    """Read the alpha record of an item.

    Args:
        item: the item's name
    """
    return _work("read_alpha", item)


@tool("bench/v1/write_beta")
def write_beta(item: str) -> str:
    """Write the beta record of an item.

    Args:
        item: the item's name
    """
    return _work("write_beta", item)


@tool("bench/v1/read_gamma", read_only=True)
def read_gamma(item: str) -> str:
    """Read the gamma record of an item.

    Args:
        item: the item's name
    """
    return _work("read_gamma", item)


@tool("bench/v1/write_delta")
def write_delta(item: str) -> str:
    """Write the delta record of an item.

    Args:
        item: the item's name
    """
    return _work("write_delta", item)


@tool("bench/v1/read_epsilon", read_only=True)
def read_epsilon(item: str) -> str:
    """Read the epsilon record of an item.

    Args:
        item: the item's name
    """
    return _work("read_epsilon", item)
