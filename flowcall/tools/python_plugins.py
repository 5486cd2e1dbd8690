"""Python plugins: a decorated function becomes a Tool, its JSON Schema taken from its
type hints and its docstring (Google, reST or NumPy style)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any, Callable, get_type_hints

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, create_model

from flowcall.core.errors import ConfigError
from flowcall.tools.base import RunContext, Tool, ToolAnnotations
from flowcall.trust.packages import ENTRY_POINT_GROUP, origin_of

_TOOL_ATTR = "__flowcall_tool__"


_KEY_ORDER = ["type", "description", "enum", "const", "format", "properties", "items", "required", "default"]


def _tidy(schema: Any, in_properties: bool = False) -> Any:
    """Drop pydantic's titles (tokens for nothing) and put keys in the conventional order.

    Pydantic sorts keys alphabetically, so "required" follows the properties and small models,
    copying what they read last, put "required": [...] into their arguments.
    """
    if isinstance(schema, list):
        return [_tidy(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    if in_properties:  # keys here are parameter names: keep the declared order
        return {k: _tidy(v) for k, v in schema.items()}
    keys = [k for k in schema if not (k == "title" and isinstance(schema[k], str))]
    keys.sort(key=lambda k: _KEY_ORDER.index(k) if k in _KEY_ORDER else len(_KEY_ORDER))
    return {k: _tidy(schema[k], in_properties=k in ("properties", "$defs")) for k in keys}


def build_tool(
    func: Callable[..., Any],
    version: str,
    *,
    name: str | None = None,
    description: str | None = None,
    annotations: ToolAnnotations | None = None,
    timeout_s: float | None = None,
) -> Tool:
    """Derive a Tool from a plain function."""
    name = name or func.__name__
    if version.count("/") != 2 or not version.endswith("/" + name):
        raise ConfigError(
            f"tool {name}: version '{version}' must look like 'domain/v1/{name}' (namespace/version/name)"
        )
    doc = docstring_parser.parse(inspect.getdoc(func) or "")
    arg_model, fields, context_param = _arguments(func, name, {p.arg_name: p.description for p in doc.params})
    schema = _tidy(arg_model.model_json_schema())
    schema.setdefault("properties", {})
    text = description or "\n\n".join(part for part in (doc.short_description, doc.long_description) if part)
    call = _validated(func, arg_model, fields, context_param)
    return Tool(
        name=name,
        version=version,
        description=text.strip(),
        parameters=schema,
        func=call,
        annotations=annotations or ToolAnnotations(),
        context_param=context_param,
        timeout_s=timeout_s,
        source="python",
    )


def _arguments(
    func: Callable[..., Any], name: str, param_docs: dict[str, str | None]
) -> tuple[type[BaseModel], dict[str, Any], str | None]:
    """A pydantic model of the function's arguments (each described by its docstring line), and
    the parameter typed RunContext, if any: hidden, injected by the engine, not in the schema."""
    hints = get_type_hints(func)
    fields: dict[str, Any] = {}
    context_param = None
    for pname, param in inspect.signature(func).parameters.items():
        annotation = hints.get(pname, Any)
        if annotation is RunContext:
            context_param = pname
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (annotation, Field(default, description=param_docs.get(pname)))
    arg_model: type[BaseModel] = create_model(  # type: ignore[call-overload]
        f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    return arg_model, fields, context_param


def _validated(
    func: Callable[..., Any], arg_model: type[BaseModel], fields: dict[str, Any], context_param: str | None
) -> Callable[..., Any]:
    """`func`, called with its arguments validated by `arg_model` (and the run context passed through)."""

    @functools.wraps(func)
    def call(**kwargs: Any) -> Any:
        context = kwargs.pop(context_param, None) if context_param else None
        # pydantic coerces validated JSON into the declared Python types (dates, models, ...)
        values = arg_model.model_validate(kwargs)
        bound = {field: getattr(values, field) for field in fields}
        if context_param:
            bound[context_param] = context
        return func(**bound)

    return call


def tool(
    version: str,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    destructive: bool = False,
    open_world: bool = False,
    timeout_s: float | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a function as a FlowCall tool: `@tool("weather/v1/get_weather", read_only=True)`.

    The function stays callable as before; the Tool hangs on it for the registry to find.
    """

    def mark(func: Callable[..., Any]) -> Callable[..., Any]:
        built = build_tool(
            func,
            version,
            name=name,
            description=description,
            annotations=ToolAnnotations(read_only=read_only, destructive=destructive, open_world=open_world),
            timeout_s=timeout_s,
        )
        setattr(func, _TOOL_ATTR, built)
        return func

    return mark


def tools_in_module(module: Any) -> list[Tool]:
    return [getattr(obj, _TOOL_ATTR) for obj in vars(module).values() if hasattr(obj, _TOOL_ATTR)]


def plugin_module_name(path: Path) -> str:
    """The name a plugin file is imported under. It holds a hash of the file's absolute path:
    two folders both called plugins/ (or two files x.py in different folders) must not share a
    sys.modules entry, or the second folder would silently get the first one's tools."""
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    return f"flowcall_plugins.{path.parent.name}.{path.stem}_{digest}"


def load_plugin_dir(directory: Path) -> list[Tool]:
    """Import every module in a plugin folder and collect its tools."""
    found: list[Tool] = []
    for path in sorted(directory.glob("*.py")):
        if path.name.startswith("_"):
            continue
        module_name = plugin_module_name(path)
        module = sys.modules.get(module_name)
        if module is None:
            spec = importlib.util.spec_from_file_location(module_name, path)
            if spec is None or spec.loader is None:
                continue
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            try:
                spec.loader.exec_module(module)
            except Exception as exc:
                del sys.modules[module_name]
                raise ConfigError(
                    f"plugin {path} failed to import: {exc!r}; fix the module or remove it"
                ) from exc
        found.extend(tools_in_module(module))
    return found


def load_entry_points() -> list[Tool]:
    """Tools of installed packages: each entry point in the group `flowcall.plugins` names a
    module (`my_pkg.tools`) whose decorated functions are its tools. In pyproject.toml:

        [project.entry-points."flowcall.plugins"]
        my_tools = "my_pkg.tools"

    Each tool carries the package it comes from (trust/packages.py): a flow that attaches it
    needs a grant naming that package."""
    from importlib.metadata import entry_points

    found: list[Tool] = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            origin = origin_of(point)  # hashed before the import reads the file
            module = point.load()
        except Exception as exc:
            raise ConfigError(
                f"plugin package entry point '{point.name}' ({point.value}) failed to import: {exc!r}; "
                "fix or uninstall that package"
            ) from exc
        found.extend(dataclasses.replace(t, package=origin) for t in tools_in_module(module))
    return found
