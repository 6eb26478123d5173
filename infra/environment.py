"""A function's environment, written from its settings (`lambdas.models.settings`).

The stack offers one mapping of every environment value it knows (env var name -> value); each function
gets exactly the variables its settings declare, so nothing is listed by hand and a settings change
reaches the template by itself. A required variable the stack cannot supply, or a value its settings
refuse (a bound the function would reject at cold start), fails the synth instead of the function.
"""

from collections.abc import Iterable, Mapping

from aws_cdk import Token

from lambdas.models.settings import Environment, SettingsError


class FunctionEnvironmentError(ValueError):
    """The stack cannot give a function the environment its settings require."""


def environment_for(models: Iterable[type[Environment]], offered: Mapping[str, str]) -> dict[str, str]:
    """The variables the settings declare and the stack offers, checked as the function will check them."""
    environment: dict[str, str] = {}
    for model in models:
        own = _variables(model, offered)
        _validate(model, own)
        environment.update(own)
    return environment


def _variables(model: type[Environment], offered: Mapping[str, str]) -> dict[str, str]:
    environment: dict[str, str] = {}
    missing = []
    for variable in model.variables():
        if variable.name in offered:
            environment[variable.name] = offered[variable.name]
        elif variable.required:
            missing.append(variable.name)
    if missing:
        raise FunctionEnvironmentError(
            f"{model.__name__} requires {', '.join(missing)}, which the stack does not set"
        )
    return environment


def _validate(model: type[Environment], environment: Mapping[str, str]) -> None:
    """Validate the concrete values; a deploy-time value (a token such as a table name) is only known
    to be a string here, so what the settings say of those is left to the function's cold start."""
    try:
        model.load(environment)
    except SettingsError as error:
        refused = [
            f"{name or model.__name__}: {why}"
            for name, why in error.problems
            if not (name and Token.is_unresolved(environment.get(name, "")))
        ]
        if refused:
            raise FunctionEnvironmentError(
                f"invalid {model.__name__} environment: {'; '.join(refused)}"
            ) from None
