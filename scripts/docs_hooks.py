"""mkdocs hook: the reference pages that are generated from the code, so they cannot drift
from it (the flow and run formats from their pydantic models)."""

from __future__ import annotations

import json


def _schema(model) -> str:
    return "```json\n" + json.dumps(model.model_json_schema(), indent=2, ensure_ascii=False) + "\n```"


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 (mkdocs' signature)
    if page.file.src_path != "reference/formats.md":
        return markdown
    from flowcall.core.spec import Flow
    from flowcall.core.steps import Run

    return markdown.replace("{{ flow_schema }}", _schema(Flow)).replace("{{ run_schema }}", _schema(Run))
