"""`offload`: submit jobs and follow them, on the local runtime (default) or a deployed stack.

Where it sends requests, first match wins:
1. `--url` and `--api-key` (or OFFLOAD_URL and OFFLOAD_API_KEY);
2. `--outputs-file outputs.json` written by `cdk deploy --outputs-file`: the stack's ApiUrl, and the
   key's value read once through API Gateway with your AWS credentials (unless `--api-key` is given);
3. the local runtime started by `make run` (it writes .local/runtime.json).
`--key NAME` picks another key of the local runtime or of the outputs file: a client's, or `operator`
(the only key that sees every job and may start a bulk retry).

It never prints a traceback: every failure is one line on stderr and an exit code (docs/local.md).
"""
