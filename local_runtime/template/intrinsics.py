"""The intrinsic functions the synthesized stack uses, resolved against the resources created locally.

Only `Ref`, `Fn::GetAtt`, `Fn::Join`, `Fn::Select`, `Fn::Split` and `Fn::Sub` are understood: those are
what `cdk synth` emits for this stack. Anything else (conditions, `Fn::If`, imports...) raises
`UnsupportedTemplateError` naming the function, rather than a value the deployed stack would not have.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from local_runtime.template.model import Resource, UnsupportedTemplateError


class Resolver:
    """Resolves template values; `resource` creates (or returns) the resource a reference names."""

    def __init__(
        self,
        pseudo_parameters: Mapping[str, str],
        parameters: Mapping[str, Mapping[str, Any]],
        resource: Callable[[str], Resource],
    ) -> None:
        self._pseudo = pseudo_parameters
        self._parameters = parameters
        self._resource = resource
        self._functions: dict[str, Callable[[Any], Any]] = {
            "Ref": self._ref,
            "Fn::GetAtt": self._get_att,
            "Fn::Join": self._join,
            "Fn::Select": self._select,
            "Fn::Split": self._split,
            "Fn::Sub": self._sub,
        }

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref" or key.startswith("Fn::") or key == "Condition":
                function = self._functions.get(key)
                if function is None:
                    raise UnsupportedTemplateError(f"the intrinsic function {key} is not supported locally")
                return function(arg)
        return {k: self.resolve(v) for k, v in value.items()}

    def resolve_str(self, value: Any) -> str:
        resolved = self.resolve(value)
        if isinstance(resolved, bool):
            return "true" if resolved else "false"
        if isinstance(resolved, int | float | str):
            return str(resolved)
        return json.dumps(resolved)

    def attribute(self, logical_id: str, attribute: str) -> str:
        resource = self._resource(logical_id)
        if attribute not in resource.attributes:
            raise UnsupportedTemplateError(
                f"attribute {attribute!r} of {logical_id} ({resource.type}) is not known locally"
            )
        return resource.attributes[attribute]

    def _ref(self, name: str) -> Any:
        if name in self._pseudo:
            return self._pseudo[name]
        if name.startswith("AWS::"):
            raise UnsupportedTemplateError(f"the pseudo parameter {name} is not supported locally")
        if name in self._parameters:
            if "Default" not in self._parameters[name]:
                raise UnsupportedTemplateError(f"parameter {name!r} has no default")
            return self._parameters[name]["Default"]
        return self._resource(name).ref

    def _get_att(self, arg: Any) -> str:
        logical_id, attribute = arg.split(".", 1) if isinstance(arg, str) else arg
        return self.attribute(logical_id, self.resolve(attribute))

    def _join(self, arg: Any) -> str:
        delimiter, items = arg
        return str(self.resolve(delimiter)).join(self.resolve_str(i) for i in self.resolve(items))

    def _select(self, arg: Any) -> Any:
        index, items = arg
        return self.resolve(items)[int(self.resolve(index))]

    def _split(self, arg: Any) -> list[str]:
        delimiter, source = arg
        return self.resolve_str(source).split(self.resolve(delimiter))

    def _sub(self, arg: Any) -> str:
        text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])

        def replace(match: re.Match[str]) -> str:
            token = match.group(1)
            if token.startswith("!"):
                return "${" + token[1:] + "}"
            if token in variables:
                return self.resolve_str(variables[token])
            if "." in token and not token.startswith("AWS::"):
                logical_id, attribute = token.split(".", 1)
                return self.attribute(logical_id, attribute)
            return self.resolve_str({"Ref": token})

        return re.sub(r"\$\{([^}]+)\}", replace, text)


def referenced_id(reference: Any) -> str | None:
    """The logical id a `Ref` or `Fn::GetAtt` points to, without resolving it."""
    if isinstance(reference, dict) and len(reference) == 1:
        ((key, arg),) = reference.items()
        if key == "Ref":
            return str(arg)
        if key == "Fn::GetAtt":
            return str(arg.split(".", 1)[0] if isinstance(arg, str) else arg[0])
    return None


def referenced_ids(value: Any) -> Iterator[str]:
    """Every logical id referenced anywhere inside `value`."""
    target = referenced_id(value)
    if target is not None:
        yield target
    elif isinstance(value, dict):
        for item in value.values():
            yield from referenced_ids(item)
    elif isinstance(value, list):
        for item in value:
            yield from referenced_ids(item)
