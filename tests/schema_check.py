"""A small JSON Schema checker for the subset docs/json.schema.json uses (type, const, enum,
required, properties, additionalProperties false, items, oneOf, $ref to #/$defs/...); the tests
use ``jsonschema`` instead where it is installed. Returns the list of violations (empty: valid)."""

from __future__ import annotations

from typing import Any

_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _is(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES[name])


def check(value: Any, schema: dict, root: dict | None = None, where: str = "$") -> list[str]:
    root = root if root is not None else schema
    if "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/$defs/"), ref
        return check(value, root["$defs"][ref.removeprefix("#/$defs/")], root, where)
    errors: list[str] = []
    if "oneOf" in schema:
        passing = [s for s in schema["oneOf"] if not check(value, s, root, where)]
        if len(passing) != 1:
            errors.append(f"{where}: matches {len(passing)} of oneOf, expected exactly 1")
        return errors
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is(value, n) for n in names):
            return [f"{where}: expected {names}, got {type(value).__name__}"]
    if "const" in schema and (value != schema["const"] or type(value) is not type(schema["const"])):
        errors.append(f"{where}: expected {schema['const']!r}, got {value!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value:
                errors.append(f"{where}: missing {key!r}")
        props = schema.get("properties", {})
        for key, item in value.items():
            if key in props:
                errors += check(item, props[key], root, f"{where}.{key}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{where}: unexpected key {key!r}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += check(item, schema["items"], root, f"{where}[{i}]")
    return errors
