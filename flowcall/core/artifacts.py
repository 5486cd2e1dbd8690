"""Hidden-context artifacts (the data tools' DataFrames) as JSON, so they are saved with a
run's state: a paused, interrupted or re-run run gets the table its earlier tools loaded.

JSON, never pickle: a run's state can come from a file someone shared (`runs import`), and
unpickling it would run their code. A value that is neither a DataFrame nor plain JSON is
left out with a note, and the tool that needs it says "call read_csv first" as it would in
a new run.
"""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

from flowcall.core.errors import ConfigError


def encode(artifacts: dict[str, Any]) -> dict[str, Any]:
    """{key: {"type": ..., ...}} for every artifact that can be saved."""
    saved: dict[str, Any] = {}
    for key, value in artifacts.items():
        if _is_frame(value):
            saved[key] = {
                "type": "dataframe",
                "dtypes": {str(c): str(t) for c, t in value.dtypes.items()},
                "split": value.to_json(orient="split", date_format="iso", force_ascii=False),
            }
            continue
        try:
            saved[key] = {"type": "json", "value": json.loads(json.dumps(value, ensure_ascii=False))}
        except (TypeError, ValueError):
            saved[key] = {"type": "unsaved", "python_type": type(value).__name__}
    return saved


def decode(saved: dict[str, Any] | None) -> dict[str, Any]:
    """The artifacts back; unsaved ones are absent. A malformed entry is a ConfigError."""
    artifacts: dict[str, Any] = {}
    for key, entry in (saved or {}).items():
        kind = entry.get("type") if isinstance(entry, dict) else None
        if kind == "dataframe":
            artifacts[key] = _frame(key, entry)
        elif kind == "json":
            artifacts[key] = entry.get("value")
        elif kind != "unsaved":
            raise ConfigError(
                f"the run's saved artifact {key!r} has an unknown type {kind!r}; "
                "this run's state cannot be read by this FlowCall"
            )
    return artifacts


def _is_frame(value: Any) -> bool:
    return type(value).__name__ == "DataFrame" and hasattr(value, "to_json")


def _frame(key: str, entry: dict[str, Any]) -> Any:
    import pandas as pd  # only runs that saved a table pay for pandas

    try:
        frame = pd.read_json(StringIO(entry["split"]), orient="split", dtype=False)
    except (KeyError, ValueError, TypeError) as exc:
        raise ConfigError(f"the run's saved table {key!r} cannot be read: {exc}") from exc
    for column, dtype in (entry.get("dtypes") or {}).items():
        if column in frame.columns and str(frame[column].dtype) != dtype:
            try:
                frame[column] = frame[column].astype(dtype)
            except (TypeError, ValueError):
                pass  # a dtype pandas cannot restore from JSON keeps the one it read
    return frame
