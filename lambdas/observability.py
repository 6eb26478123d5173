"""Powertools Logger, Tracer and Metrics shared by every function (service and namespace from config)."""

from aws_lambda_powertools import Logger, Metrics, Tracer

from lambdas import config

logger = Logger(service=config.SERVICE_NAME)
tracer = Tracer(service=config.SERVICE_NAME)
metrics = Metrics(namespace=config.METRICS_NAMESPACE, service=config.SERVICE_NAME)


def log_transition(
    job_id: str, job_type: str, from_status: str, to_status: str, attempt: int, error: str | None = None
) -> None:
    """One line per job state change: what the local runtime shows and what operators search for."""
    fields: dict[str, object] = {
        "event": "job_transition",
        "jobId": job_id,
        "jobType": job_type,
        "from": from_status,
        "to": to_status,
        "attempt": attempt,
    }
    if error:
        fields["error"] = error
    logger.info(f"job {job_id} {from_status} -> {to_status}", extra=fields)
