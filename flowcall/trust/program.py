"""What a stdio server's command line would actually run, pinned down for a grant.

A flow says `["python3", "server.py"]`. What that starts depends on where it is run: PATH picks
`python3`, the current folder picks `server.py`, and `python3 -m tool` imports `tool.py` from
the folder it starts in before any installed module. A grant of the text alone would let the
same text start another folder's `server.py`. So a grant binds the resolution: the program's
absolute path (and where its symlinks lead), every argument that names a file as an absolute
path, and the digest of every file that runs or is named: the program itself (and the
interpreter its `#!` line names), each file argument whatever its suffix (`server`, `.pyz`,
`.pyc`), each file and program a `sh -c` string or inline code names, and the code the
environment makes it load (code_env.py). A server then starts from a resolution made at start
and compared with the grant (consent.checked_start), in a fixed empty folder that shadows no
module; a changed resolution needs a new grant.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowcall.core import config
from flowcall.core.errors import ConfigError
from flowcall.trust import code_env

MAX_HASHED_BYTES = 50_000_000
SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"}
# where a word inside a string may name a file: `--config=/x.py`, `-javaagent:/x.jar`, `a,b`
_PARTS = re.compile(r"[=:,]")
_SHELL_C = re.compile(r"-[a-zA-Z]*c[a-zA-Z]*")  # -c, -lc, -ec: the next argument is a shell string


def start_folder() -> Path:
    """The empty folder every stdio server starts in: no module or script of anyone's there."""
    folder = config.home() / "mcp-start"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@dataclass(frozen=True)
class Resolved:
    """A command line as it would run: absolute program and file arguments, every file it runs
    or names digested, and the code-loading variables as the program would get them."""

    argv: list[str]
    program_target: str  # where the program's symlinks lead
    files: dict[str, str] = field(default_factory=dict)  # absolute path -> digest
    code_env: dict[str, str] = field(default_factory=dict)

    def subject(self) -> dict[str, Any]:
        subject = {
            "argv": self.argv,
            "program_target": self.program_target,
            "files": dict(sorted(self.files.items())),
        }
        if self.code_env:
            subject["code_env"] = dict(sorted(self.code_env.items()))
        return subject

    @classmethod
    def of(cls, subject: dict[str, Any]) -> Resolved:
        return cls(
            subject["argv"], subject["program_target"], subject["files"], subject.get("code_env") or {}
        )


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


def file_digest(path: Path) -> str:
    """The SHA-256 of a file; one too large to read at every start is bound by its identity on
    disk instead (any write changes its change time, which only root can set back)."""
    info = path.stat()
    if info.st_size <= MAX_HASHED_BYTES:
        return file_sha256(path)
    return f"identity {info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"


def resolve(argv: list[str], base: Path | None = None, env: dict[str, str] | None = None) -> Resolved:
    """`argv` (with the server's `env`) resolved from folder `base` (the current one) and PATH;
    ConfigError if the program is not found or the environment loads code no grant can bind."""
    base = (base or Path.cwd()).resolve()
    env = env or {}
    found_env = code_env.effective(env)
    search = code_env.value(env, "PATH") if "PATH" in env else os.environ.get("PATH", "")
    program = _program(argv[0], base)
    target = os.path.realpath(program)
    named = [Path(target), *_shebang(Path(target), search)]
    args, modules = [], _modules(argv)
    for i, arg in enumerate(argv[1:], 1):
        path = Path(arg) if os.path.isabs(arg) else base / arg
        if not arg.startswith("-") and path.is_file():
            args.append(str(path.resolve()))
            named.append(path)
            continue
        args.append(arg)
        named += _named_files(arg)
        if {Path(argv[0]).name, Path(target).name} & SHELLS and _SHELL_C.fullmatch(argv[i - 1]):
            named += _shell_string(arg, search, found_env, modules)
    for text in found_env.values():
        named += _named_files(text)
    named += code_env.python_imports(found_env, modules, start_folder())
    files = {str(p.resolve()): file_digest(p) for p in named}
    return Resolved([program, *args], target, files, found_env)


def _program(name: str, base: Path) -> str:
    found = str(base / name) if os.sep in name and not os.path.isabs(name) else name
    program = shutil.which(found)
    if program is None:
        raise ConfigError(
            f"the program {name!r} was not found (not on PATH, or not executable); install it or give "
            "its full path in the flow's command"
        )
    return os.path.abspath(program)


def _modules(words: list[str]) -> list[str]:
    """The modules `-m` names (Python's `python -m module`)."""
    return [words[i + 1] for i, w in enumerate(words[:-1]) if w == "-m"]


def _words(text: str) -> list[str]:
    """`text` split as a shell would split it (operators apart), or at spaces if it is no shell."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: inline code, not a shell line
        return text.split()


def _named_files(text: str) -> list[Path]:
    """The existing files a string names: absolute, or relative to a folder it also names or to
    the folder the server starts in (where a relative name is looked up when it runs)."""
    candidates = [p for w in _words(text) for p in [w, *_PARTS.split(w)] if p not in ("", "-")]
    paths = [Path(c).expanduser() for c in candidates]
    folders = [start_folder(), *(p for p in paths if p.is_absolute() and p.is_dir())]
    files = []
    for path in paths:
        for where in [path] if path.is_absolute() else [f / path for f in folders]:
            if where.is_file():
                files.append(where)
    return files


def _shell_string(text: str, search: str, found_env: dict[str, str], modules: list[str]) -> list[Path]:
    """What a `sh -c` string runs beyond the files it names: each program it names as PATH finds
    it, and its own `NAME=value` settings of code-loading variables (into `found_env`)."""
    words = _words(text)
    modules += _modules(words)
    programs = []
    for word in words:
        name, is_setting, setting = word.partition("=")
        if is_setting and name in code_env.LOADS_CODE:
            found_env |= code_env.effective({name: setting})
        elif "/" not in word and (program := shutil.which(word, path=search)):
            programs.append(Path(os.path.realpath(program)))
    return programs


def _shebang(target: Path, search: str) -> list[Path]:
    """The interpreter a script's `#!` line runs it with (through `env`, as PATH finds it)."""
    try:
        with target.open("rb") as handle:
            first = handle.readline(512)
    except OSError:
        return []
    if not first.startswith(b"#!"):
        return []
    words = first[2:].decode("utf-8", "replace").split()
    found = []
    for word in words[:2]:
        program = shutil.which(word, path=search) if "/" not in word else word
        if program and os.path.isfile(program):
            found.append(Path(os.path.realpath(program)))
        if Path(word).name != "env":
            break
    return found


def what_changed(granted: dict[str, Any], now: Resolved) -> str | None:
    """How `now` differs from a granted resolution, in words; None if it does not."""
    was_argv, was_files = granted.get("argv") or [], granted.get("files") or {}
    if was_argv[:1] != now.argv[:1] or granted.get("program_target") != now.program_target:
        was = granted.get("program_target")
        return f"{Path(now.argv[0]).name} now resolves to {now.program_target}, not {was}"
    for path, digest in now.files.items():
        if path in was_files and was_files[path] != digest:
            return f"{_where(path)} is not the file granted: its content changed"
    if was_argv != now.argv:
        new = [a for a in now.argv if a not in was_argv]
        return f"it now names {', '.join(new) or 'other arguments'}, not what was granted"
    if (granted.get("code_env") or {}) != now.code_env:
        return "its environment now makes it load other code than was granted"
    for path in now.files:
        if path not in was_files:
            return f"{_where(path)} is new: it was not there when this was granted, and it would run"
    gone = [_where(p) for p in was_files if p not in now.files]
    return f"{', '.join(gone)} is gone or no longer used" if gone else None


def _where(path: str) -> str:
    return f"{Path(path).name} in {Path(path).parent}"
