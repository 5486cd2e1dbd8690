"""Tools of installed packages: which package a tool comes from, pinned down for a grant.

A package installed on this machine can add tools through the `flowcall.plugins` entry point
group. Its code runs with your rights whenever a flow calls one of them, so a shared flow that
attaches such a tool asks first (consent.package_items), naming the package, its version, the
entry point and its module file. The grant binds them, with the module file's SHA-256 read just
before it is imported, so another version or a changed module needs a new grant.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import asdict, dataclass
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

from flowcall.trust import program

ENTRY_POINT_GROUP = "flowcall.plugins"


@dataclass(frozen=True)
class PackageOrigin:
    package: str
    version: str
    entry_point: str
    module: str
    file: str  # the module's file, absolute ("" for one without a file)
    sha256: str

    def subject(self) -> dict[str, Any]:
        return asdict(self)


def origin_of(point: EntryPoint) -> PackageOrigin:
    """Where `point`'s tools come from; call it just before the module is imported, so the file
    hashed is the one the import reads (finding a dotted module imports its parent packages)."""
    dist = point.dist
    spec = importlib.util.find_spec(point.module)
    origin = spec.origin if spec is not None and spec.origin and os.path.isfile(spec.origin) else ""
    return PackageOrigin(
        package=dist.name if dist is not None else "(unknown package)",
        version=dist.version if dist is not None else "(unknown version)",
        entry_point=point.name,
        module=point.module,
        file=str(Path(origin).resolve()) if origin else "",
        sha256=program.file_digest(Path(origin)) if origin else "",
    )
