"""The built-in job types: every module in this package that defines `JOB_TYPE` is one.

This is a package of job types like any user's (`lambdas/jobs/packages.py`): adding a built-in type is
adding a module named after it here; nothing else lists the types. Modules whose name starts with `_`
are helpers, not types.
"""


def register_builtin_types() -> None:
    """Register every built-in type by its module's name (idempotent); the module loads on first lookup."""
    from lambdas.jobs.packages import register_job_types

    register_job_types()
