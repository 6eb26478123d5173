#!/usr/bin/env python3
"""CDK entry point (`cdk synth`, `cdk deploy`): one environment-agnostic stack, checked by cdk-nag."""

from infra.synth import build_app

app, _ = build_app()
app.synth()
