"""My job types: every module here that defines `JOB_TYPE` is one (named after the module)."""
