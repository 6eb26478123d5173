"""The secrets job types declare: one Secrets Manager secret per name, created here or referenced.

A secret belongs to the type that declares it: two types declaring the same name get two secrets. A
declared secret without a `jobSecrets` entry gets a secret of its own (a random value until the operator
sets it: `aws secretsmanager put-secret-value`), tagged `<type>/<name>` so `make run` can give it the
value of `.local/secrets.json`. One with an entry references that existing secret. Each worker may read
only the secrets of the types it runs (`of` with the group's types' secrets).
"""

from collections.abc import Iterable, Mapping
from typing import Final

from aws_cdk import Tags
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.access import Access, Resource, grant
from infra.job_types import SecretKey
from infra.nag import acknowledge
from infra.settings import key_suffix

# The tag that names a created secret's declared name (the local runtime fills it from a file).
NAME_TAG: Final = "offload:job-secret"


class JobSecrets(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        declared: Iterable[SecretKey],
        referenced: Mapping[SecretKey, str],
    ) -> None:
        super().__init__(scope, construct_id)
        self.secrets: dict[SecretKey, secretsmanager.ISecret] = {}
        for key in declared:
            type_name, name = key
            # `.` cannot be in a type's or a secret's name: the ids of two keys never meet.
            suffix = f"{key_suffix(type_name)}.{key_suffix(name)}"
            if key in referenced:
                self.secrets[key] = secretsmanager.Secret.from_secret_complete_arn(
                    self, f"Referenced{suffix}", referenced[key]
                )
                continue
            secret = secretsmanager.Secret(
                self,
                suffix,
                description=f"offload job type {type_name!r}'s secret {name!r}: set its value after the first deploy",
                generate_secret_string=secretsmanager.SecretStringGenerator(
                    password_length=32, exclude_punctuation=True
                ),
            )
            Tags.of(secret).add(NAME_TAG, f"{type_name}/{name}")
            acknowledge(
                secret,
                "AwsSolutions-SMG4",
                "A job type's credential for a third party (an API token): the third party issues it, so "
                "it is rotated there and stored here by hand; no rotation Lambda can make a new one.",
            )
            self.secrets[key] = secret

    def arns(self, keys: Iterable[SecretKey]) -> dict[str, dict[str, str]]:
        """By type, then name: what a worker's environment holds (`JOB_SECRETS`)."""
        found: dict[str, dict[str, str]] = {}
        for type_name, name in keys:
            found.setdefault(type_name, {})[name] = self.secrets[(type_name, name)].secret_arn
        return found

    def of(self, keys: Iterable[SecretKey]) -> "SecretsOf":
        """The secrets `keys` as one function's resource owner: it grants reading those only."""
        return SecretsOf([self.secrets[key].secret_arn for key in keys])


class SecretsOf:
    def __init__(self, arns: list[str]) -> None:
        self._arns = arns

    def grant_access(self, grantee: iam.IGrantable, access: Access) -> None:
        if self._arns:
            grant(grantee, access, {Resource.JOB_SECRETS: self._arns})
