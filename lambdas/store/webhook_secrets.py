"""The webhook secrets table: one item per client (`client`, its API key id).

An item holds the current secret, the rotated-out ones still valid (`previous`, each with its
`validUntil` in epoch seconds), `rotatedAt` and a `version`. Writes are conditional: the first write
of a client's item only if none exists (two first uses at once keep one secret), a rotation only over
the version it read. The table is encrypted at rest (AWS managed key, infra/tables.py).
"""

from typing import Any

from lambdas.models.webhook_secrets import ClientSecrets, RetiredSecret
from lambdas.store import schema
from lambdas.store.clients import client
from lambdas.store.errors import ConditionFailedError, domain_errors
from lambdas.store.expressions import marshal, unmarshal


class WebhookSecretStore:
    def __init__(self, table_name: str) -> None:
        self._table = table_name

    def get(self, client_id: str) -> ClientSecrets | None:
        response = client("dynamodb").get_item(
            TableName=self._table,
            Key={schema.WEBHOOK_SECRETS_PK: {"S": client_id}},
            ConsistentRead=True,
        )
        item = response.get("Item")
        return None if item is None else _from_item(unmarshal(item))

    def create(self, secrets: ClientSecrets) -> bool:
        """Write a client's first item; False if it already has one."""
        return self._put(secrets, "attribute_not_exists(#pk)", {"#pk": schema.WEBHOOK_SECRETS_PK}, {})

    def replace(self, secrets: ClientSecrets, read_version: int) -> bool:
        """Write a rotated item; False if another rotation wrote it since `read_version` was read."""
        return self._put(
            secrets, "#version = :read", {"#version": "version"}, {":read": {"N": str(read_version)}}
        )

    def _put(
        self, secrets: ClientSecrets, condition: str, names: dict[str, str], values: dict[str, Any]
    ) -> bool:
        params: dict[str, Any] = {
            "TableName": self._table,
            "Item": marshal(_to_item(secrets)),
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
        }
        if values:
            params["ExpressionAttributeValues"] = values
        try:
            with domain_errors():
                client("dynamodb").put_item(**params)
        except ConditionFailedError:
            return False
        return True


def _to_item(secrets: ClientSecrets) -> dict[str, Any]:
    item: dict[str, Any] = {
        schema.WEBHOOK_SECRETS_PK: secrets.client,
        "current": secrets.current,
        "previous": [{"secret": old.secret, "validUntil": int(old.valid_until)} for old in secrets.previous],
        "version": secrets.version,
    }
    if secrets.rotated_at is not None:
        item["rotatedAt"] = int(secrets.rotated_at)
    return item


def _from_item(item: dict[str, Any]) -> ClientSecrets:
    rotated = item.get("rotatedAt")
    return ClientSecrets(
        client=str(item[schema.WEBHOOK_SECRETS_PK]),
        current=str(item["current"]),
        previous=tuple(
            RetiredSecret(str(old["secret"]), float(old["validUntil"])) for old in item.get("previous", [])
        ),
        rotated_at=None if rotated is None else float(rotated),
        version=int(item["version"]),
    )
