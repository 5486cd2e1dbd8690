"""The package's declared dependencies (pyproject.toml) and the pinned set the tests run with
(requirements.txt, requirements-dev.txt) say the same: every pin is declared, in the core or
in an extra, and lies in the declared range; nothing is declared that is not pinned."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def pins(name: str) -> list[Requirement]:
    lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
    return [Requirement(line.split("#")[0].strip()) for line in lines if line.split("#")[0].strip()]


def declared() -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = [Requirement(text) for text in project["dependencies"]]
    found += [Requirement(text) for extra in project["optional-dependencies"].values() for text in extra]
    return {canonicalize_name(r.name): r for r in found}


def test_every_pin_is_declared_in_its_range():
    wanted = declared()
    for pinned in pins("requirements.txt") + pins("requirements-dev.txt"):
        (version,) = [s.version for s in pinned.specifier]
        name = canonicalize_name(pinned.name)
        assert name in wanted, f"{pinned} is pinned but pyproject.toml does not declare {pinned.name}"
        assert wanted[name].specifier.contains(version, prereleases=True), (
            f"{pinned} lies outside pyproject.toml's {wanted[name]}"
        )
        assert wanted[name].extras == pinned.extras, (
            f"{pinned}: extras differ from pyproject.toml's {wanted[name]}"
        )


def test_nothing_is_declared_that_the_tests_do_not_pin():
    pinned = {canonicalize_name(r.name) for r in pins("requirements.txt") + pins("requirements-dev.txt")}
    assert set(declared()) <= pinned


def test_the_runtime_needs_no_extra_but_postgres_and_workers():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert set(project["optional-dependencies"]) == {"postgres", "workers", "dev"}
    core = {canonicalize_name(Requirement(t).name) for t in project["dependencies"]}
    assert {"streamlit", "openai", "dashscope", "pydantic", "sqlalchemy", "llama-cpp-python"} <= core
