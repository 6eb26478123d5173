"""The console's two methods: the only ones a browser may call without an API key.

A browser opening a page cannot send `x-api-key`, and the console's files hold no data: the page asks
for the key and sends it on every call to the data routes, which keep requiring it.
"""

from typing import Final

from aws_cdk import aws_apigateway as apigateway

CONSOLE_PATH: Final = "console"


def add_console_routes(
    api: apigateway.RestApi, integration: apigateway.Integration, validator: apigateway.IRequestValidator
) -> None:
    console = api.root.add_resource(CONSOLE_PATH)
    console.add_method("GET", integration, api_key_required=False, request_validator=validator)
    console.add_resource("{file}").add_method(
        "GET",
        integration,
        api_key_required=False,
        request_validator=validator,
        request_parameters={"method.request.path.file": True},
    )
