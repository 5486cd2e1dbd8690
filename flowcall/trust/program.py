"""What a stdio server's command line would actually run, pinned down for a grant.

A flow says `["python3", "server.py"]`. What that starts depends on where it is run: PATH picks
`python3`, the current folder picks `server.py`, and `python3 -m tool` imports `tool.py` from
the folder it starts in before any installed module. A grant of the text alone would let the
same text start another folder's `server.py`. So a grant binds the resolution: the program's
absolute path (and where its symlinks lead), every argument that names a file as an absolute
path, and the SHA-256 of each script named. A server then starts from that resolution, in a
fixed empty folder that shadows no module, and a changed resolution needs a new grant.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowcall.core import config
from flowcall.core.errors import ConfigError

# files whose content is what runs: hashed, so a changed script needs a new grant
SCRIPT_SUFFIXES = {
    ".py",
    ".pyw",
    ".js",
    ".mjs",
    ".cjs",
    ".ts",
    ".sh",
    ".bash",
    ".rb",
    ".pl",
    ".php",
    ".lua",
    ".json",
    ".yaml",
    ".yml",
    ".toml",
}
MAX_HASHED_BYTES = 50_000_000


def start_folder() -> Path:
    """The empty folder every stdio server starts in: no module or script of anyone's there."""
    folder = config.home() / "mcp-start"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@dataclass(frozen=True)
class Resolved:
    """A command line as it would run: absolute program and file arguments, scripts hashed."""

    argv: list[str]
    program_target: str  # where the program's symlinks lead
    files: dict[str, str] = field(default_factory=dict)  # absolute path -> sha256

    def subject(self) -> dict[str, Any]:
        return {
            "argv": self.argv,
            "program_target": self.program_target,
            "files": dict(sorted(self.files.items())),
        }


def file_sha256(path: Path) -> str:
    if path.stat().st_size > MAX_HASHED_BYTES:
        raise ConfigError(
            f"{path} is larger than {MAX_HASHED_BYTES:,} bytes; FlowCall will not grant a script that large"
        )
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def resolve(argv: list[str], base: Path | None = None) -> Resolved:
    """`argv` resolved from folder `base` (the current one) and PATH; ConfigError if the program
    is not found."""
    base = (base or Path.cwd()).resolve()
    name = argv[0]
    found = str(base / name) if os.sep in name and not os.path.isabs(name) else name
    program = shutil.which(found)
    if program is None:
        raise ConfigError(
            f"the program {name!r} was not found (not on PATH, or not executable); install it or give "
            "its full path in the flow's command"
        )
    program = os.path.abspath(program)
    args, files = [], {}
    for arg in argv[1:]:
        path = Path(arg) if os.path.isabs(arg) else base / arg
        if not arg.startswith("-") and path.is_file():
            absolute = str(path.resolve())
            args.append(absolute)
            if path.suffix.lower() in SCRIPT_SUFFIXES:
                files[absolute] = file_sha256(path)
        else:
            args.append(arg)
    target = os.path.realpath(program)
    if Path(target).suffix.lower() in SCRIPT_SUFFIXES:  # a script run as the program itself
        files[target] = file_sha256(Path(target))
    return Resolved([program, *args], target, files)


def what_changed(granted: dict[str, Any], now: Resolved) -> str | None:
    """How `now` differs from a granted resolution, in words; None if it does not."""
    was_argv, was_files = granted.get("argv") or [], granted.get("files") or {}
    if was_argv[:1] != now.argv[:1] or granted.get("program_target") != now.program_target:
        was = granted.get("program_target")
        return f"{Path(now.argv[0]).name} now resolves to {now.program_target}, not {was}"
    for path, digest in now.files.items():
        if path in was_files and was_files[path] != digest:
            return f"{Path(path).name} in {Path(path).parent} is not the file granted: its content changed"
    if was_argv != now.argv:
        new = [a for a in now.argv if a not in was_argv]
        return f"it now names {', '.join(new) or 'other arguments'}, not what was granted"
    if set(was_files) != set(now.files):
        return "it now runs other script files than were granted"
    return None
