#!/usr/bin/env python3
"""`cdk synth` / `cdk deploy` here: offload's stack, with this project's job types (cdk.json's context)."""

from infra.synth import build_app

app, _ = build_app()
app.synth()
