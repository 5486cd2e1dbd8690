"""flowcall.core.schemas: which refs point outside a schema, and a validator that fetches nothing."""

from __future__ import annotations

import jsonschema
import pytest
from referencing.exceptions import Unresolvable

from flowcall.core import schemas
from tests.security.test_ssrf import Capture

URL = "http://169.254.169.254/latest/meta-data"


@pytest.mark.parametrize(
    "schema, outside",
    [
        ({"properties": {"a": {"$ref": URL}}}, [("$ref", URL)]),
        ({"properties": {"a": {"$dynamicRef": URL}}}, [("$dynamicRef", URL)]),
        ({"properties": {"a": {"$ref": "file:///etc/passwd"}}}, [("$ref", "file:///etc/passwd")]),
        # relative to the schema's $id: jsonschema would fetch http://api.test/other
        ({"$id": "http://api.test/root", "properties": {"a": {"$ref": "other"}}}, [("$ref", "other")]),
        # reached only through a local ref into draft 7's "definitions", where no keyword leads
        (
            {
                "definitions": {"x": {"items": {"$ref": URL}}},
                "properties": {"a": {"$ref": "#/definitions/x"}},
            },
            [("$ref", URL)],
        ),
        ({"$defs": {"c": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/c"}}}, []),
        ({"$defs": {"c": {"$anchor": "city", "type": "string"}}, "properties": {"a": {"$ref": "#city"}}}, []),
        (
            {
                "$id": "http://api.test/root",
                "$defs": {"o": {"$id": "other", "type": "string"}},
                "properties": {"a": {"$ref": "other"}},
            },
            [],
        ),
        ({"$defs": {"n": {"properties": {"next": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"}, []),
        ({"properties": {"a": {"$ref": "https://json-schema.org/draft/2020-12/schema"}}}, []),  # bundled
        ({"properties": {"a": {"default": {"$ref": URL}}}}, []),  # data, not a ref
        ({"properties": {"a": {"$ref": "#/$defs/missing"}}}, []),  # broken, but nothing to fetch
    ],
)
def test_outside_refs(schema, outside):
    assert schemas.outside_refs(schema) == outside


def test_check_refs_names_the_field_the_ref_and_the_fix():
    with pytest.raises(
        schemas.SchemaRefError,
        match=r"^polish\.output_schema: \$ref 'http://169\.254\.169\.254/"
        r"latest/meta-data' points outside the schema; .*inline",
    ):
        schemas.check_refs({"properties": {"a": {"$ref": URL}}}, "polish.output_schema")


def test_the_validator_checks_local_refs():
    schema = {"$defs": {"c": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/c"}}}
    assert [e.message for e in schemas.validator(schema).iter_errors({"a": 1})] == [
        "1 is not of type 'string'"
    ]
    assert schemas.validator(schema).is_valid({"a": "x"})


def test_the_validators_registry_retrieves_nothing_even_without_the_check():
    server = Capture(lambda h: (200, {"Content-Type": "application/json"}, b'{"type": "string"}'))
    try:
        schema = {
            "properties": {"a": {"$ref": f"{server.url}/schema"}, "b": {"$dynamicRef": f"{server.url}/d"}}
        }
        for value in ({"a": "x"}, {"b": "x"}):
            with pytest.raises(Unresolvable):
                list(jsonschema.Draft202012Validator(schema, registry=schemas.LOCAL_ONLY).iter_errors(value))
        assert server.requests == []
    finally:
        server.close()


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"": None}, "required": []},
        {"type": {"$ref": "名字", "type": 5.5}, "properties": [1, 2]},
        {"items": [None, {"$ref": "http://127.0.0.1:9/x"}]},
    ],
)
def test_a_malformed_schema_is_walked_without_crashing(schema):
    """Found by tests/reliability/test_fuzz.py: a null or list where a subschema belongs made
    referencing's id lookup raise AttributeError out of outside_refs."""
    from flowcall.core.schemas import outside_refs

    assert isinstance(outside_refs(schema), list)
