"""What a job type declared besides its work: its settings and its secrets, as its worker holds them.

The stack writes each worker's types' settings (CDK context `jobSettings`, checked against each type's
`settings_model` at synth) and the ARNs of the secrets they declared into the worker's environment
(`JobTypesSettings`). The worker checks every type's settings again when it starts (`check`), so a
value changed by hand in the console stops the function at its start, not a job mid-way. A job's
context gets its type's settings and a `secret(name)` limited to the names its type declared.
"""

import functools
from collections.abc import Callable
from threading import Lock
from typing import Any

from pydantic import ValidationError

from lambdas.jobs import registry
from lambdas.jobs.base import JobType, PermanentJobError, SecretNotDeclaredError
from lambdas.models.settings import JobTypesSettings
from lambdas.redaction import remember

# Secrets Manager is read at most once per five minutes per secret and process (Powertools' cache).
SECRET_MAX_AGE_SECONDS = 300


class TypeSettingsError(registry.UnusableTypeError, ValueError):
    """A type's settings do not satisfy its `settings_model` (none given is a type added after synth)."""


class TypeConfig:
    def __init__(self, settings: JobTypesSettings, read_secret: Callable[[str], str] | None = None) -> None:
        self._settings = settings
        self._read_secret = read_secret or _read_secret
        self._validated: dict[str, Any] = {}
        self._lock = Lock()

    def check(self) -> None:
        """Validate the settings of every type this function was given settings for."""
        for name in self._settings.job_settings:
            self.settings_for(registry.get(name))

    def declared(self, job_type: JobType[Any]) -> dict[str, Any]:
        """The `JobContext` fields of what `job_type` declared: `type_settings` and `secret`."""
        return {"type_settings": self.settings_for(job_type), "secret": self.secret_reader(job_type)}

    def settings_for(self, job_type: JobType[Any]) -> Any:
        """The type's settings as its model reads them; None for a type without a settings model."""
        if job_type.settings_model is None:
            return None
        with self._lock:
            if job_type.name not in self._validated:
                raw = self._settings.job_settings.get(job_type.name, {})
                try:
                    self._validated[job_type.name] = job_type.settings_model.model_validate(raw)
                except ValidationError as error:
                    raise TypeSettingsError(
                        f"job type {job_type.name!r}: invalid settings: {error}"
                    ) from None
            return self._validated[job_type.name]

    def secret_reader(self, job_type: JobType[Any]) -> Callable[[str], str]:
        """`context.secret` for a job of `job_type`: only the names the type declared."""
        return functools.partial(self._secret, job_type.name, frozenset(job_type.secrets))

    def _secret(self, type_name: str, declared: frozenset[str], name: str) -> str:
        if name not in declared:
            raise SecretNotDeclaredError(f"job type {type_name!r} declares no secret {name!r}")
        arn = self._settings.job_secrets.get(type_name, {}).get(name)
        if arn is None:
            # The stack creates one for every declared name: a worker without it runs another template.
            raise PermanentJobError(f"secret {name!r} of job type {type_name!r} is not in this function")
        value = self._read_secret(arn)
        remember(value)
        return value


def _read_secret(arn: str) -> str:
    # Imported on first use, as the webhook signing secret is: most functions never read a secret.
    from aws_lambda_powertools.utilities import parameters

    value = parameters.get_secret(arn, max_age=SECRET_MAX_AGE_SECONDS)
    return value if isinstance(value, str) else value.decode()
