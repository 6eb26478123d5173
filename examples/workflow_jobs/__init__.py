"""Workflow types for docs/job-types.md ("Workflows"): every module that defines `JOB_TYPE` is one."""
