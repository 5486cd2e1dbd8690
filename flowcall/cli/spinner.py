"""The CLI's live line on stderr: a spinner, the step that is running, its elapsed time, and
the tail of what the model is writing. A progress.Watcher for terminals only: on a pipe or a
log file it is never made (terminal_watcher returns None), so scripted output stays clean."""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from flowcall.core.inert import inert

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
CLEAR = "\r\x1b[2K"


class Spinner:
    def __init__(self, stream: TextIO, interval_s: float = 0.1):
        self.stream, self.interval_s = stream, interval_s
        self._lock = threading.Lock()
        self._label: str | None = None
        self._since = 0.0
        self._tail = ""
        self._written = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, name="flowcall-spinner", daemon=True)

    # -- progress.Watcher
    def started(self, kind: str, label: str) -> None:
        with self._lock:
            self._label, self._since, self._tail, self._written = f"{kind} {label}", time.monotonic(), "", 0
            self._draw()

    def text(self, piece: str) -> None:
        with self._lock:
            self._written += len(piece)
            self._tail = " ".join((self._tail + piece).split())[-60:]

    def ended(self) -> None:
        with self._lock:
            self._label = None
            self.stream.write(CLEAR)  # the step's own line is printed next, on a clean line
            self.stream.flush()

    # -- drawing
    def line(self, frame: int = 0) -> str:
        """What the live line shows now (without the clearing escape)."""
        elapsed = time.monotonic() - self._since
        # the label names a model or tool and the tail is the model's own text: shown, not obeyed
        text = f"{FRAMES[frame % len(FRAMES)]} {inert(self._label, one_line=True)} {elapsed:5.1f} s"
        if self._written:
            text += f"  {self._written} chars: {inert(self._tail, one_line=True)}"
        width = shutil.get_terminal_size((100, 20)).columns - 1
        return text if len(text) <= width else text[: width - 1] + "…"

    def _draw(self, frame: int = 0) -> None:
        if self._label is not None:
            self.stream.write(CLEAR + self.line(frame))
            self.stream.flush()

    def _spin(self) -> None:
        frame = 0
        while not self._stop.wait(self.interval_s):
            frame += 1
            with self._lock:
                self._draw(frame)

    def __enter__(self) -> Spinner:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        with self._lock:
            if self._label is not None:
                self._label = None
                self.stream.write(CLEAR)
                self.stream.flush()


@contextmanager
def terminal_watcher(enabled: bool = True, stream: TextIO | None = None) -> Iterator[Spinner | None]:
    """A running Spinner on `stream` (stderr) when it is a terminal and `enabled`, else None."""
    stream = stream or sys.stderr
    if not enabled or not stream.isatty():
        yield None
        return
    with Spinner(stream) as spinner:
        yield spinner
