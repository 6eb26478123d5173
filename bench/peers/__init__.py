"""What a user would write instead of each offload function: the floors of `bench.first_call`.

Each module is a whole Lambda function as its docs teach it (Powertools, pydantic, boto3), doing what
the offload function of the same name does on the same first call, and nothing offload does besides
(no logging, metrics, tracing, limits or fan-out). They read the same environment as offload's
functions, so they run against the same tables and queues, and they are byte-compiled as the asset is.
"""
