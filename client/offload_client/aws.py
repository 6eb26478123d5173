"""`SigV4Auth`: sign requests to a stack deployed with `auth=iam` (`pip install 'offload-client[aws]'`).

    from offload_client import Client
    from offload_client.aws import SigV4Auth

    client = Client(api_url, auth=SigV4Auth())

Credentials come from botocore's chain, as boto3's do: environment variables, the shared config and
credentials files (profiles, SSO, assume-role), a container's or a Lambda function's role, instance
metadata. Each request asks the chain for them, so a role's temporary credentials are refreshed as
botocore refreshes them, before they expire.
The service is `execute-api`; the region is the one in the API's URL
(`https://<id>.execute-api.<region>.amazonaws.com/...`), else the `region` given, else the chain's
(`AWS_DEFAULT_REGION` or `AWS_REGION`, the profile's).

This module is the only one that imports botocore: the base client needs only requests.
"""

from __future__ import annotations

import os
import re
from typing import Any, Final

import botocore.auth
import botocore.session
from botocore.awsrequest import AWSRequest
from requests import PreparedRequest
from requests.auth import AuthBase

SERVICE: Final = "execute-api"
# Headers a proxy or the HTTP stack may add, drop or rewrite on the way: never part of the signature.
_UNSIGNED: Final = frozenset(
    {"accept", "accept-encoding", "connection", "content-length", "expect", "transfer-encoding", "user-agent"}
)
_REGION_IN_URL: Final = re.compile(r"\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?(?::\d+)?$")


class MissingCredentials(RuntimeError):
    """botocore's credential chain found nothing to sign with."""


class SigV4Auth(AuthBase):
    def __init__(
        self,
        region: str | None = None,
        *,
        session: botocore.session.Session | None = None,
        service: str = SERVICE,
    ) -> None:
        self.region = region
        self.service = service
        self._session = session or botocore.session.get_session()

    def __call__(self, request: PreparedRequest) -> PreparedRequest:
        url = str(request.url)
        credentials = self._session.get_credentials()
        if credentials is None:
            raise MissingCredentials("no AWS credentials found (environment, profile or role) to sign with")
        body: Any = request.body or b""
        signed = AWSRequest(
            method=request.method,
            url=url,
            data=body.encode() if isinstance(body, str) else body,
            headers={name: value for name, value in request.headers.items() if name.lower() not in _UNSIGNED},
        )
        botocore.auth.SigV4Auth(
            credentials.get_frozen_credentials(), self.service, self.region_for(url)
        ).add_auth(signed)
        for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
            if name in signed.headers:
                request.headers[name] = signed.headers[name]
        return request

    def region_for(self, url: str) -> str:
        host = url.split("://", 1)[-1].split("/", 1)[0]
        found = _REGION_IN_URL.search(host)
        region = (
            (found.group(1) if found else None)
            or self.region
            or self._session.get_config_variable("region")
            or os.environ.get("AWS_REGION")  # what Lambda sets; botocore reads only AWS_DEFAULT_REGION
        )
        if not region:
            raise ValueError(f"no region in {host} and none given: SigV4Auth(region=...) or AWS_REGION")
        return str(region)
