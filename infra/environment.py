"""A function's environment, written from its settings model (`lambdas.models.settings`).

The stack offers one mapping of every environment value it knows (env var name -> value); each function
gets exactly the variables its model declares (the fields' aliases), so nothing is listed by hand and a
model change reaches the template by itself. A required variable the stack cannot supply, or a value its
model refuses (a bound the function would reject at cold start), fails the synth instead of the function.
"""

from collections.abc import Iterable, Mapping

from aws_cdk import Token
from pydantic import BaseModel, ValidationError


class FunctionEnvironmentError(ValueError):
    """The stack cannot give a function the environment its settings model requires."""


def environment_for(models: Iterable[type[BaseModel]], offered: Mapping[str, str]) -> dict[str, str]:
    """The variables the models declare and the stack offers, checked as the function will check them."""
    environment: dict[str, str] = {}
    for model in models:
        own = _variables(model, offered)
        _validate(model, own)
        environment.update(own)
    return environment


def _variables(model: type[BaseModel], offered: Mapping[str, str]) -> dict[str, str]:
    environment: dict[str, str] = {}
    missing = []
    for name, field in model.model_fields.items():
        variable = field.alias or name
        if variable in offered:
            environment[variable] = offered[variable]
        elif field.is_required():
            missing.append(variable)
    if missing:
        raise FunctionEnvironmentError(
            f"{model.__name__} requires {', '.join(missing)}, which the stack does not set"
        )
    return environment


def _validate(model: type[BaseModel], environment: Mapping[str, str]) -> None:
    """Validate the concrete values; a deploy-time value (a token such as a table name) is only known
    to be a string here, so what the model says of those is left to the function's cold start."""
    try:
        model.model_validate(environment)
    except ValidationError as error:
        refused = [
            f"{'.'.join(map(str, problem['loc'])) or model.__name__}: {problem['msg']}"
            for problem in error.errors(include_url=False)
            if not (problem["loc"] and Token.is_unresolved(environment.get(str(problem["loc"][0]), "")))
        ]
        if refused:
            raise FunctionEnvironmentError(
                f"invalid {model.__name__} environment: {'; '.join(refused)}"
            ) from None
