"""Is the embedded model's prompt cache being warmed right now? `flowcall model warm` (which
scripts/start.sh runs in the background while the studio starts) keeps a file with its process
id in the prompt-cache folder while it works, so the studio can say that runs are slower until
it is done."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from flowcall.core import config


def marker() -> Path:
    return config.prompt_cache_folder() / "warming.pid"


@contextmanager
def warming() -> Iterator[None]:
    """Say, for as long as the block lasts, that this process warms the prompt cache."""
    path = marker()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(os.getpid()), encoding="ascii")
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def in_progress() -> bool:
    """Does a live process warm the prompt cache now? A file left by a process that died says no."""
    try:
        pid = int(marker().read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True
