"""Data tools on hidden context (seed 003): the table lives in the run's context as an
artifact; the model only ever sees a short summary of it.

read_csv loads a CSV from the data folder (FLOWCALL_DATA_DIR; nothing outside it can be read),
drop_missing and describe_data work on the loaded table. A later tool gets the DataFrame
itself, not a copy the model typed out, so a 100 000-row table costs the model a few dozen
tokens. Each summary is the tool's result and so is recorded with the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flowcall.core.config import data_dir
from flowcall.tools.base import RunContext
from flowcall.tools.python_plugins import tool

TABLE = "table"  # the artifact's key in the run context


def _inside_data_dir(path: str) -> Path:
    root = data_dir().resolve()
    target = (root / path).resolve()
    if not target.is_relative_to(root):
        raise ValueError(f"'{path}' is outside the data folder {root}; only files in it can be read")
    if not target.is_file():
        available = ", ".join(sorted(p.name for p in root.glob("*.csv"))) or "none"
        raise ValueError(f"there is no file '{path}' in the data folder; CSV files there: {available}")
    return target


def summarize(frame: Any, source: str) -> dict[str, Any]:
    """What the model sees instead of the table."""
    return {
        "artifact": TABLE,
        "source": source,
        "rows": int(len(frame)),
        "columns": list(map(str, frame.columns)),
        "missing_per_column": {str(k): int(v) for k, v in frame.isna().sum().items() if v},
        "first_rows": frame.head(3)
        .astype(object)
        .where(frame.head(3).notna(), None)
        .to_dict(orient="records"),
    }


def _table(ctx: RunContext) -> Any:
    if TABLE not in ctx.artifacts:
        raise ValueError("no table is loaded in this run; call read_csv first")
    return ctx.artifacts[TABLE]


@tool("data/v1/read_csv", read_only=True)
def read_csv(ctx: RunContext, path: str) -> dict[str, Any]:
    """读取数据文件夹里的 CSV 表格,供后续数据工具使用。Load a CSV file from the data folder.

    Args:
        path: 文件名,例如 orders_sample.csv
    """
    import pandas as pd

    frame = pd.read_csv(_inside_data_dir(path))
    ctx.artifacts[TABLE] = frame
    return summarize(frame, path)


@tool("data/v1/drop_missing")
def drop_missing(ctx: RunContext, columns: list[str] | None = None) -> dict[str, Any]:
    """删除有缺失值的行(清洗数据)。Drop the rows of the loaded table that have missing values.

    Args:
        columns: 只看这些列的缺失值;不填则看所有列
    """
    frame = _table(ctx)
    unknown = [c for c in columns or [] if c not in frame.columns]
    if unknown:
        raise ValueError(f"no column {unknown} in the table; its columns are {list(frame.columns)}")
    cleaned = frame.dropna(subset=columns or None).reset_index(drop=True)
    ctx.artifacts[TABLE] = cleaned
    return {**summarize(cleaned, "after drop_missing"), "rows_dropped": int(len(frame) - len(cleaned))}


@tool("data/v1/describe_data", read_only=True)
def describe_data(ctx: RunContext) -> dict[str, Any]:
    """统计已加载表格的数值列:数量、均值、最小值、最大值。Summary statistics of the loaded table."""
    frame = _table(ctx)
    numeric = frame.select_dtypes("number")
    stats = numeric.describe().loc[["count", "mean", "min", "max"]].round(2)
    return {"rows": int(len(frame)), "statistics": {c: stats[c].to_dict() for c in stats.columns}}
