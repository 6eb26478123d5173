"""A `jobPackages` folder of workflow types that exist only for the e2e tests of workflows on the
local runtime (tests/e2e/test_workflows.py); the deployed stack never names it."""
