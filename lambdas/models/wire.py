"""The base of every model the API reads or writes: JSON in camelCase, nothing unknown accepted."""

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    # defer_build: most of these serve routes an api instance may never be asked (lists, stats, bulk,
    # uploads), and some modules are imported by every function for their other names, so each
    # validator is built on its first use rather than with its module.
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", defer_build=True
    )
