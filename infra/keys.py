"""The API keys: one per client (CDK context clientKeys) and one operator key.

A client key sees and acts on the jobs it submitted; the operator key sees every job and alone may start
bulk actions. The api function tells them apart by the key's id (API Gateway passes it in the request
context), so the operator key's id is part of the api function's environment. Keys stand apart from
the REST API because of that: the function needs the id before the API that invokes it exists.

Each key carries its name and role as tags, which is how the local runtime finds them in the template.
"""

from aws_cdk import Tags
from aws_cdk import aws_apigateway as apigateway
from constructs import Construct

from infra.settings import Settings, key_suffix
from lambdas import config
from lambdas.config import KeyRole


class ApiKeys(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, settings: Settings) -> None:
        super().__init__(scope, construct_id)
        self.clients: dict[str, apigateway.ApiKey] = {
            name: self._key(f"Client{key_suffix(name)}", name, KeyRole.CLIENT)
            for name in settings.client_keys
        }
        self.operator = self._key("Operator", config.OPERATOR_KEY_NAME, KeyRole.OPERATOR)

    @property
    def all(self) -> list[apigateway.ApiKey]:
        return [*self.clients.values(), self.operator]

    def _key(self, construct_id: str, name: str, role: KeyRole) -> apigateway.ApiKey:
        key = apigateway.ApiKey(self, construct_id, description=f"offload {role} key ({name})")
        Tags.of(key).add(config.KEY_NAME_TAG, name)
        Tags.of(key).add(config.KEY_ROLE_TAG, role.value)
        return key

    def outputs(self) -> dict[str, str]:
        """Stack output name -> key id: `ApiKeyId<Name>` per client, `OperatorKeyId`, and the first
        client's again as `ApiKeyId`, the name clients of the one-key stack read."""
        return {
            "ApiKeyId": next(iter(self.clients.values())).key_id,
            **{f"ApiKeyId{key_suffix(name)}": key.key_id for name, key in self.clients.items()},
            "OperatorKeyId": self.operator.key_id,
        }
