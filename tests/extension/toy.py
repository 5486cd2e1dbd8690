"""A package installed the way pip leaves one, written at test time: modules on a folder that
goes on PYTHONPATH, and a `<name>-<version>.dist-info` folder with METADATA and entry_points.txt.
FlowCall finds what it adds through its entry points only; no file of flowcall/ names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A tool source kind "toy": a source {"name": "dice", "faces": 6} serves one tool, `roll`, that
# answers with a fixed face (the highest), so a run's result can be checked.
TOY_KIND = """
from pydantic import BaseModel, ConfigDict, Field

from flowcall.tools.base import Tool
from flowcall.tools.sources.base import FormField


class Dice(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    faces: int = Field(default=6, ge=2, le=100, description="How many faces the die has.")


class ToyKind:
    kind = "toy"
    label = "Toy dice"
    config_model = Dice

    def configs(self, flow):
        return [Dice.model_validate(entry) for entry in flow.sources.get(self.kind, [])]

    def load(self, config, context):
        def roll() -> dict:
            return {"rolled": config.faces, "die": config.name}

        return [
            Tool(
                name="roll",
                version=f"{config.name}/toy/roll",
                description=f"Roll the {config.faces}-faced die.",
                parameters={"type": "object", "properties": {}},
                func=roll,
                source="toy",
            )
        ]

    def trust_items(self, config):
        return []

    def form_fields(self):
        return {"name": FormField("Name"), "faces": FormField("Faces", "how many faces", "6")}


KIND = ToyKind()
"""


def write_toy_package(
    directory: Path,
    entry_points: dict[str, dict[str, str]],
    modules: dict[str, str],
    *,
    name: str = "toy_ext",
    version: str = "0.1",
) -> Path:
    """Write the package into `directory` (put it on PYTHONPATH): each module `modules[name]` as
    `<name>.py`, and `<name>-<version>.dist-info` whose entry_points.txt has, for each group,
    its `entry point name = module:attribute` lines. Returns `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    for module, source in modules.items():
        (directory / f"{module}.py").write_text(source, encoding="utf-8")
    info = directory / f"{name}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n", encoding="utf-8"
    )
    lines = []
    for group, points in entry_points.items():
        lines.append(f"[{group}]")
        lines += [f"{point} = {target}" for point, target in points.items()]
        lines.append("")
    (info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")
    return directory


def write_toy_kind(directory: Path) -> Path:
    """The toy package with its tool source kind "toy" (entry point group flowcall.tool_sources)."""
    return write_toy_package(
        directory, {"flowcall.tool_sources": {"toy": "toy_ext:KIND"}}, {"toy_ext": TOY_KIND}
    )


def flowcall_cli(site: Path, tmp_path: Path) -> Callable[..., subprocess.CompletedProcess]:
    """`flowcall ...` in a subprocess with the package in `site` installed and a database of its own."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
        "FLOWCALL_HOME": str(tmp_path / "home"),
        "FLOWCALL_DATABASE_URL": f"sqlite:///{tmp_path / 'flowcall.db'}",
    }

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "flowcall.cli.main", *args],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )

    return run


def write_flow(tmp_path: Path, flow: dict) -> str:
    """The flow as a JSON file named after it; its path."""
    path = tmp_path / f"{flow['name']}.json"
    path.write_text(json.dumps(flow), encoding="utf-8")
    return str(path)
