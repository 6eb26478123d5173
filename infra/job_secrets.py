"""The secrets job types declare: one Secrets Manager secret per name, created here or referenced.

A declared name without a `jobSecrets` entry gets a secret of its own (a random value until the
operator sets it: `aws secretsmanager put-secret-value`), tagged with its name so `make run` can give
it the value of `.local/secrets.json`. A name with an entry references that existing secret. Each
worker may read only the secrets of the types it runs (`grant_access` with the group's names).
"""

from collections.abc import Iterable, Mapping
from typing import Final

from aws_cdk import Tags
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.access import Access, Resource, grant
from infra.nag import acknowledge
from infra.settings import key_suffix

# The tag that names a created secret's declared name (the local runtime fills it from a file).
NAME_TAG: Final = "offload:job-secret"


class JobSecrets(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, names: Iterable[str], referenced: Mapping[str, str]
    ) -> None:
        super().__init__(scope, construct_id)
        self.secrets: dict[str, secretsmanager.ISecret] = {}
        for name in names:
            if name in referenced:
                self.secrets[name] = secretsmanager.Secret.from_secret_complete_arn(
                    self, f"Referenced{key_suffix(name)}", referenced[name]
                )
                continue
            secret = secretsmanager.Secret(
                self,
                key_suffix(name),
                description=f"offload job secret {name!r}: set its value after the first deploy",
                generate_secret_string=secretsmanager.SecretStringGenerator(
                    password_length=32, exclude_punctuation=True
                ),
            )
            Tags.of(secret).add(NAME_TAG, name)
            acknowledge(
                secret,
                "AwsSolutions-SMG4",
                "A job type's credential for a third party (an API token): the third party issues it, so "
                "it is rotated there and stored here by hand; no rotation Lambda can make a new one.",
            )
            self.secrets[name] = secret

    def arns(self, names: Iterable[str]) -> dict[str, str]:
        return {name: self.secrets[name].secret_arn for name in names}

    def of(self, names: Iterable[str]) -> "SecretsOf":
        """The secrets `names` as one function's resource owner: it grants reading those only."""
        return SecretsOf(list(self.arns(names).values()))


class SecretsOf:
    def __init__(self, arns: list[str]) -> None:
        self._arns = arns

    def grant_access(self, grantee: iam.IGrantable, access: Access) -> None:
        if self._arns:
            grant(grantee, access, {Resource.JOB_SECRETS: self._arns})
