"""Environment variables that make a program load code its command line does not name.

`PYTHONPATH=/dir` makes Python import `/dir/sitecustomize.py` at every start, and `python -m tool`
import `/dir/tool.py`; `LD_PRELOAD=/x.so` loads `/x.so` into any program; `NODE_OPTIONS=--require
/x.js` runs `/x.js` first. A grant of a server's command must bind that code too, so:

- a variable that names files (LD_PRELOAD, NODE_OPTIONS, PYTHONSTARTUP, BASH_ENV, ...) has every
  file it names hashed, like a file argument;
- PYTHONPATH binds what Python would import from its folders: `sitecustomize`, `usercustomize`
  and the `-m` module (a file that appears there later is a change, like a changed one);
- a variable that names a whole folder of code (LD_LIBRARY_PATH, NODE_PATH, PYTHONHOME, ...)
  cannot be bound, and is refused.

Values are taken as the server would get them (a `$VAR` read from this machine now), and are
part of the grant.
"""

from __future__ import annotations

import os
from importlib.machinery import BYTECODE_SUFFIXES, EXTENSION_SUFFIXES, SOURCE_SUFFIXES
from pathlib import Path

from flowcall.core.errors import ConfigError

NAMES_FILES = {
    "PYTHONSTARTUP",
    "BASH_ENV",
    "ENV",
    "LD_PRELOAD",
    "LD_AUDIT",
    "DYLD_INSERT_LIBRARIES",
    "NODE_OPTIONS",
    "PERL5OPT",
    "RUBYOPT",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
}
PYTHON_SEARCH = "PYTHONPATH"
NAMES_FOLDERS = {
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "NODE_PATH",
    "LD_LIBRARY_PATH",
    "DYLD_LIBRARY_PATH",
    "DYLD_FALLBACK_LIBRARY_PATH",
    "DYLD_FRAMEWORK_PATH",
    "PERL5LIB",
    "PERLLIB",
    "RUBYLIB",
    "GCONV_PATH",
    "CLASSPATH",
}
LOADS_CODE = NAMES_FILES | NAMES_FOLDERS | {PYTHON_SEARCH}

# what Python imports from sys.path on every start, before the program's own code
STARTUP_MODULES = ("sitecustomize", "usercustomize")
# the order a folder is searched in: a package first, then extension, source, bytecode modules
_SUFFIXES = [*EXTENSION_SUFFIXES, *SOURCE_SUFFIXES, *BYTECODE_SUFFIXES]


def value(env: dict[str, str], name: str) -> str:
    """The value the program gets for `name`: a `$VAR` is read from this machine now."""
    raw = env.get(name, "")
    return os.environ.get(raw[1:], "") if raw.startswith("$") else raw


def effective(env: dict[str, str]) -> dict[str, str]:
    """The code-loading variables `env` sets, as the program would get them; ConfigError for
    one that names a folder of code (it cannot be bound to a grant)."""
    found = {name: value(env, name) for name in sorted(env) if name in LOADS_CODE}
    for name, text in found.items():
        if name in NAMES_FOLDERS and text:
            raise ConfigError(
                f"a server's environment may not set {name}: it makes the program load code from "
                "folders whose content a grant cannot bind; install what the program needs where it "
                f"finds it without {name}"
            )
    return found


def python_imports(found: dict[str, str], modules: list[str], start: Path) -> list[Path]:
    """The files Python would import from the start folder and PYTHONPATH's folders for
    sitecustomize, usercustomize and each `-m` module."""
    folders = [start]
    for entry in found.get(PYTHON_SEARCH, "").split(os.pathsep):
        if entry:
            folders.append((start / Path(entry).expanduser()).resolve())
    files: list[Path] = []
    for module in (*STARTUP_MODULES, *modules):
        files += _module_files(module, folders)
    return files


def _module_files(module: str, folders: list[Path]) -> list[Path]:
    """The files importing dotted `module` from `folders` runs (each package's `__init__`, the
    module, a package's `__main__` for `-m`); [] where it is not found in them."""
    files: list[Path] = []
    parts = module.split(".")
    for depth, part in enumerate(parts):
        found, package = _find(part, folders)
        if found is None:
            return files
        files.append(found)
        if package is None:
            return files
        folders = [package]
        if depth == len(parts) - 1:  # `python -m package` runs its __main__
            main, _ = _find("__main__", folders)
            files += [main] if main else []
    return files


def _find(name: str, folders: list[Path]) -> tuple[Path | None, Path | None]:
    """The first file Python finds for `name` in `folders`, and the package folder if it is one."""
    if not name.isidentifier():
        return None, None
    for folder in folders:
        package = folder / name
        for suffix in _SUFFIXES:
            if (package / f"__init__{suffix}").is_file():
                return (package / f"__init__{suffix}").resolve(), package.resolve()
        for suffix in _SUFFIXES:
            if (folder / f"{name}{suffix}").is_file():
                return (folder / f"{name}{suffix}").resolve(), None
    return None, None
