"""Hypothesis strategies for values that match a JSON Schema: the subset pydantic and OpenAPI emit here.

Enough for the API's request schemas and the job types' payload models (objects, arrays, strings with
patterns and lengths, bounded numbers, anyOf, enums and local `$ref`s). Lengths are capped so that the
examples stay small; the bounds themselves are the other fuzz test's business.
"""

from typing import Any

from hypothesis import strategies as st

ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=30,
)
_MAX_GENERATED = 40


def from_json_schema(schema: dict[str, Any], root: dict[str, Any] | None = None) -> st.SearchStrategy[Any]:
    root = schema if root is None else root
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        return from_json_schema(target, root)
    if "anyOf" in schema or "oneOf" in schema:
        return st.one_of([from_json_schema(s, root) for s in schema.get("anyOf", schema.get("oneOf"))])
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "object":
        return _object(schema, root)
    if kind == "array":
        low = schema.get("minItems", 0)
        high = min(schema.get("maxItems", low + 3), low + 3)
        return st.lists(from_json_schema(schema.get("items", {}), root), min_size=low, max_size=high)
    if kind == "string":
        return _string(schema)
    if kind == "integer":
        low, high = schema.get("minimum"), schema.get("maximum")
        return st.integers(None if low is None else int(low), None if high is None else int(high))
    if kind == "number":
        return st.floats(schema.get("minimum"), schema.get("maximum"), allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return ANY_JSON


def _object(schema: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy[Any]:
    properties = schema.get("properties", {})
    if not properties:
        return st.dictionaries(st.text(max_size=10), ANY_JSON, max_size=4)
    required = set(schema.get("required", ()))
    return st.fixed_dictionaries(
        {name: from_json_schema(s, root) for name, s in properties.items() if name in required},
        optional={name: from_json_schema(s, root) for name, s in properties.items() if name not in required},
    )


def _string(schema: dict[str, Any]) -> st.SearchStrategy[str]:
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    if "pattern" in schema:
        matching = st.from_regex(schema["pattern"], fullmatch=True)
        return matching.filter(lambda s: low <= len(s) <= (high or len(s)))
    return st.text(min_size=low, max_size=max(low, min(high or _MAX_GENERATED, _MAX_GENERATED)))
