"""`make run` gives each declared job secret the value of `.local/secrets.json`, or says how to set one."""

import json

import boto3
from moto import mock_aws

from infra.synth import synthesize
from local_runtime.job_secrets import declared_secrets, fill_secrets
from local_runtime.template import provision
from tests.support.user_package import write_package


def test_a_declared_secret_gets_the_files_value_or_a_message_saying_how(tmp_path):
    """Seen to fail with `fill_secrets` looking the value up by logical id instead of the declared name."""
    package = write_package(tmp_path)
    template = synthesize(
        {"jobPackages": [str(package)], "jobSettings": {"sync_crm": {"crmUrl": "http://127.0.0.1:1/"}}}
    )
    assert sorted(declared_secrets(template).values()) == ["sync_crm/crm_token"]
    with mock_aws():
        provisioned = provision(template)
        said: list[str] = []
        # without a value: a random one, and the line to add
        assert fill_secrets(template, provisioned, boto3.client, said.append, tmp_path / "absent.json") == {
            "sync_crm/crm_token": False
        }
        assert said == [
            f"note: job type 'sync_crm''s secret 'crm_token' has a random value: set it in "
            f'{tmp_path / "absent.json"} ({{"sync_crm": {{"crm_token": "..."}}}}) and start again'
        ]
        # with one
        values = tmp_path / "secrets.json"
        values.write_text(json.dumps({"sync_crm": {"crm_token": "from-the-file"}}))
        assert fill_secrets(template, provisioned, boto3.client, said.append, values) == {
            "sync_crm/crm_token": True
        }
        (logical_id,) = declared_secrets(template)
        secret = boto3.client("secretsmanager").get_secret_value(
            SecretId=provisioned.resources[logical_id].ref
        )
        assert secret["SecretString"] == "from-the-file"
