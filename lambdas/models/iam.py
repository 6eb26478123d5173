"""IAM callers (CDK context `auth=iam`): which IAM roles are offload's clients, and which its operators.

The stack writes the mapping into the api function's environment (`IAM_CALLERS`, this model as JSON);
the function reads who signed a request from API Gateway's request context, never from a header:
`requestContext.identity.userArn`, which for a role's session is the session's ARN,
`arn:<partition>:sts::<account>:assumed-role/<role name>/<session name>`. A role's session ARN has no
path, and a role's name is unique in its account, so a role is matched by (partition, account, name).

A client's name is the owner of the jobs it submits (and the `client` of its webhook secret); every
operator role is the one caller named `operator`, which sees every job.
"""

import re
from typing import Final, Self

from pydantic import BaseModel, ConfigDict, model_validator

from lambdas import config
from lambdas.models.caller import Caller

_NAME: Final = r"[\w+=,.@-]{1,64}"
ROLE_ARN: Final = re.compile(rf"arn:(aws[a-z-]*):iam::(\d{{12}}):role/(?:[\w+=,.@-]+/)*({_NAME})")
SESSION_ARN: Final = re.compile(rf"arn:(aws[a-z-]*):sts::(\d{{12}}):assumed-role/({_NAME})/{_NAME}")


def role_of(arn: str | None) -> tuple[str, str, str] | None:
    """(partition, account, role name) of a role's ARN or of one of its sessions' ARNs; None otherwise."""
    for pattern in (ROLE_ARN, SESSION_ARN):
        found = pattern.fullmatch(arn or "")
        if found:
            return found.group(1), found.group(2), found.group(3)
    return None


class IamCallers(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    clients: dict[str, str]  # client name -> role ARN
    operators: tuple[str, ...] = ()  # role ARNs

    @model_validator(mode="after")
    def _roles_once(self) -> Self:
        roles = [*self.clients.values(), *self.operators]
        unknown = [arn for arn in roles if role_of(arn) is None]
        if unknown:
            raise ValueError(f"not IAM role ARNs: {', '.join(unknown)}")
        if len({role_of(arn) for arn in roles}) != len(roles):
            raise ValueError("a role is mapped more than once")
        if config.OPERATOR_KEY_NAME in self.clients:
            raise ValueError(f"{config.OPERATOR_KEY_NAME!r} is the operators' name, not a client's")
        return self

    def caller(self, user_arn: str | None) -> Caller | None:
        """The caller a signed request's principal is, or None when its role is not mapped."""
        role = role_of(user_arn)
        if role is None:
            return None
        for name, arn in self.clients.items():
            if role_of(arn) == role:
                return Caller(owner=name)
        if any(role_of(arn) == role for arn in self.operators):
            return Caller(owner=config.OPERATOR_KEY_NAME, operator=True)
        return None

    @property
    def role_arns(self) -> tuple[str, ...]:
        return (*self.clients.values(), *self.operators)
