"""A small UpdateItem builder: SET/ADD/REMOVE clauses and a condition, with placeholders generated.

Attribute names in the update go through `#` placeholders, so reserved words (`status`) are never an
issue. In a condition, `#name` stands for the attribute `name` and `:value` for an entry of `values`.
"""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from boto3.dynamodb.types import TypeSerializer

_serializer = TypeSerializer()
_NAME_PLACEHOLDER = re.compile(r"#(\w+)")


def marshal(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _serializer.serialize(v) for k, v in values.items()}


@dataclass(frozen=True)
class Update:
    assign: Mapping[str, Any]
    condition: str
    values: Mapping[str, Any] = field(default_factory=dict)
    add: Mapping[str, int] = field(default_factory=dict)
    remove: Sequence[str] = ()

    def params(self) -> dict[str, Any]:
        """UpdateExpression, ConditionExpression and the attribute names and values they use."""
        names = {f"#{name}": name for name in _NAME_PLACEHOLDER.findall(self.condition)}
        values = dict(self.values)
        clauses = []
        for keyword, prefix, pairs, template in (
            ("SET", "s", self.assign.items(), "{name} = {value}"),
            ("ADD", "a", self.add.items(), "{name} {value}"),
        ):
            parts = []
            for i, (attr, value) in enumerate(pairs):
                names[f"#{prefix}{i}"], values[f":{prefix}{i}"] = attr, value
                parts.append(template.format(name=f"#{prefix}{i}", value=f":{prefix}{i}"))
            if parts:
                clauses.append(f"{keyword} " + ", ".join(parts))
        if self.remove:
            names.update({f"#r{i}": attr for i, attr in enumerate(self.remove)})
            clauses.append("REMOVE " + ", ".join(f"#r{i}" for i in range(len(self.remove))))
        params: dict[str, Any] = {"UpdateExpression": " ".join(clauses), "ExpressionAttributeNames": names}
        if self.condition:
            params["ConditionExpression"] = self.condition
        if values:
            params["ExpressionAttributeValues"] = marshal(values)
        return params

    def applied_to(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """The (unmarshalled) item as this update leaves it, given the item it was applied to."""
        after = {k: v for k, v in item.items() if k not in self.remove}
        after.update(self.assign)
        for attr, amount in self.add.items():
            after[attr] = after.get(attr, 0) + amount
        return after
