"""The synthesized CloudFormation template, reproduced locally: `provision` creates its resources in
moto and reads what runs (functions, event sources, schedules, the REST API).

- `model`: the spec types (`Provisioned`, `FunctionSpec`, `EventSourceMapping`...) and `UnsupportedTemplateError`;
- `intrinsics`: the intrinsic functions the stack uses, resolved against what was created;
- `resources`: the creators of queues, tables, the bucket, the topic and the secret;
- `readers`: the specs of functions, event source mappings, schedules and the API;
- `provision`: the checks and the order that ties them together.
"""

from local_runtime.template.intrinsics import referenced_id
from local_runtime.template.model import (
    ApiKeySpec,
    ApiSpec,
    EventSourceMapping,
    FunctionSpec,
    GatewayResponse,
    Provisioned,
    Resource,
    Route,
    Schedule,
    UnsupportedTemplateError,
    UsagePlanLimits,
)
from local_runtime.template.provision import check_supported, provision
from local_runtime.template.resources import verify_email_identity

__all__ = [
    "ApiKeySpec",
    "ApiSpec",
    "EventSourceMapping",
    "FunctionSpec",
    "GatewayResponse",
    "Provisioned",
    "Resource",
    "Route",
    "Schedule",
    "UnsupportedTemplateError",
    "UsagePlanLimits",
    "check_supported",
    "provision",
    "referenced_id",
    "verify_email_identity",
]
