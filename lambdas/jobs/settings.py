"""Settings of the job types: each type declares the environment it needs, read on first use.

A type's settings are not part of a function's start-up settings because only the functions that run
(or check) that type need them: the API function never needs the webhook secret's ARN, for example.
They are still validated in one place and fail loudly: a missing SENDER_EMAIL makes every `send_email`
job fail with a clear error instead of sending from a made-up address.
"""

import functools
import os
from collections.abc import Callable, Mapping
from typing import Protocol, Self, TypeVar

from pydantic import BaseModel, ConfigDict


class _Loadable(Protocol):
    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None) -> Self: ...


class _Clearable(Protocol):
    def cache_clear(self) -> None: ...


S = TypeVar("S", bound=_Loadable)

_caches: list[_Clearable] = []


class TypeSettings(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None) -> Self:
        return cls.model_validate(dict(os.environ if environ is None else environ))


def cached(model: type[S]) -> Callable[[], S]:
    """A getter that loads `model` from the environment once; `reset()` forgets every such value.

    Works for these models and for the functions' own settings (`lambdas.models.settings`).
    """

    @functools.cache
    def get() -> S:
        return model.load()

    _caches.append(get)
    return get


def forget_on_reset(cache: _Clearable) -> None:
    """Have `reset()` also clear another cache (anything with `cache_clear`, e.g. an lru_cache)."""
    _caches.append(cache)


def reset() -> None:
    """Forget every cached setting and value (tests call it between cases, like clients.reset)."""
    for cache in _caches:
        cache.cache_clear()
