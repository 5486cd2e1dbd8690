"""What is happening right now, for a person watching a run: which step has started, and the
text a model is writing in it, token by token.

A step record arrives only when its step ends; a polish step on a CPU can take many seconds.
Whoever shows a run (the CLI's spinner, the studio's Run page) sets a Watcher for the work it
starts; the engine says when a step starts and ends, and a provider that can stream passes on
its text as it comes. Nothing here changes what is run or recorded. A leaf module: the engine
and the providers import it, it imports nothing of theirs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol


class Watcher(Protocol):
    def started(self, kind: str, label: str) -> None:
        """A step began: kind is model_call, polish or tool_call; label names the model or tools.
        Heard again, without `ended` between, when a model call starts over (`restart`)."""

    def text(self, piece: str) -> None:
        """More of the text the running model step is writing."""

    def ended(self) -> None:
        """The step that began last is over (its record follows)."""


_watcher: ContextVar[Watcher | None] = ContextVar("flowcall_watcher", default=None)
_running: ContextVar[tuple[str, str] | None] = ContextVar("flowcall_running_step", default=None)


@contextmanager
def watching(watcher: Watcher | None) -> Iterator[None]:
    """Show the steps of the work done inside this block to `watcher` (None: to nobody)."""
    token = _watcher.set(watcher)
    try:
        yield
    finally:
        _watcher.reset(token)


@contextmanager
def step(kind: str, label: str) -> Iterator[None]:
    """Used by the engine around one model call or one round of tool calls."""
    watcher = _watcher.get()
    running = _running.set((kind, label))
    if watcher is not None:
        watcher.started(kind, label)
    try:
        yield
    finally:
        _running.reset(running)
        if watcher is not None:
            watcher.ended()


def text(piece: str) -> None:
    """Used by a provider for each piece of text as the model writes it."""
    watcher = _watcher.get()
    if watcher is not None and piece:
        watcher.text(piece)


def restart() -> None:
    """Used by a provider whose call starts over after some of its text was passed on (a stream
    that broke off, tried again): the watcher hears the step start again, and drops that text."""
    watcher, running = _watcher.get(), _running.get()
    if watcher is not None and running is not None:
        watcher.started(*running)


def watched() -> bool:
    """Whether anyone is watching: a provider streams only then."""
    return _watcher.get() is not None
