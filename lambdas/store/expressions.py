"""Two small builders of DynamoDB parameters, with placeholders generated: `Update` (an UpdateItem's
SET/ADD/REMOVE clauses and its condition) and `Query` (a Query's key condition, filter, index and page).

Attribute names go through `#` placeholders, so reserved words (`status`) are never an issue. In an
update's condition, `#name` stands for the attribute `name` and `:value` for an entry of `values`.
Values are plain Python values (str, int, Decimal), marshalled here.
"""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

# The store's one pair of converters between Python values and DynamoDB's typed attribute values.
_serializer = TypeSerializer()
_deserializer = TypeDeserializer()
_NAME_PLACEHOLDER = re.compile(r"#(\w+)")
# The comparisons a Query may put on its sort key (DynamoDB's key conditions, `BETWEEN` not needed yet).
_SORT_OPERATORS = frozenset({"=", "<", "<=", ">", ">=", "begins_with"})


def marshal(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _serializer.serialize(v) for k, v in values.items()}


def unmarshal(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _deserializer.deserialize(v) for k, v in item.items()}


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


@dataclass(frozen=True)
class Query:
    """One Query: the partition key `key` (attribute, value), optionally a `sort` condition (attribute,
    operator, value), on the table or one of its `index`es; `filters` keep only items whose attribute
    equals the value (all of them). `newest_first` reads the sort key descending; `projection` returns
    only those attributes, `count` only the count (Select=COUNT); `start` is the ExclusiveStartKey
    (unmarshalled)."""

    table: str
    key: tuple[str, Any]
    sort: tuple[str, str, Any] | None = None
    index: str | None = None
    filters: Mapping[str, Any] = field(default_factory=dict)
    limit: int | None = None
    newest_first: bool = False
    projection: Sequence[str] = ()
    count: bool = False
    start: Mapping[str, Any] | None = None
    consistent: bool = False

    def params(self) -> dict[str, Any]:
        """The keyword arguments of boto3's `query` (and of its paginator's `paginate`)."""
        attribute, value = self.key
        names = {"#k": attribute}
        values: dict[str, Any] = {":k": value}
        condition = "#k = :k"
        if self.sort is not None:
            sort_attribute, operator, sort_value = self.sort
            if operator not in _SORT_OPERATORS:
                raise ValueError(f"no key condition {operator!r} on a sort key")
            names["#s"], values[":s"] = sort_attribute, sort_value
            condition += " AND begins_with(#s, :s)" if operator == "begins_with" else f" AND #s {operator} :s"
        params: dict[str, Any] = {"TableName": self.table, "KeyConditionExpression": condition}
        if self.index is not None:
            params["IndexName"] = self.index
        filters = []
        for i, (name, wanted) in enumerate(self.filters.items()):
            names[f"#f{i}"], values[f":f{i}"] = name, wanted
            filters.append(f"#f{i} = :f{i}")
        if filters:
            params["FilterExpression"] = " AND ".join(filters)
        if self.projection:
            names.update({f"#p{i}": name for i, name in enumerate(self.projection)})
            params["ProjectionExpression"] = ", ".join(f"#p{i}" for i in range(len(self.projection)))
        if self.count:
            params["Select"] = "COUNT"
        if self.newest_first:
            params["ScanIndexForward"] = False
        if self.limit is not None:
            params["Limit"] = self.limit
        if self.start is not None:
            params["ExclusiveStartKey"] = marshal(self.start)
        if self.consistent:
            params["ConsistentRead"] = True
        params["ExpressionAttributeNames"] = names
        params["ExpressionAttributeValues"] = marshal(values)
        return params
