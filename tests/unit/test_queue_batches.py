"""JobQueue.send_new against SQS's partial answers, with botocore's Stubber (no network)."""

from botocore.stub import Stubber

from lambdas.store import clients
from lambdas.store.queue import JobQueue, job_message

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"


def _answer(entries: list[dict[str, str]], refused: set[str]) -> dict[str, list[dict[str, object]]]:
    return {
        "Successful": [
            {"Id": e["Id"], "MessageId": f"m-{e['Id']}", "MD5OfMessageBody": "0" * 32}
            for e in entries
            if e["Id"] not in refused
        ],
        "Failed": [{"Id": i, "SenderFault": False, "Code": "InternalError"} for i in sorted(refused)],
    }


def test_send_new_sends_batches_of_ten_and_returns_the_ids_sqs_refused() -> None:
    """Broken line: `send_new`'s `chunk[int(f["Id"])]` reading another key (every refusal then raises)."""
    ids = [f"job-{n}" for n in range(12)]
    batches = [ids[:10], ids[10:]]
    with Stubber(clients.client("sqs")) as stub:
        for batch, refused in zip(batches, [{"1"}, {"0"}], strict=True):
            entries = [
                {"Id": str(i), "MessageBody": job_message(job, "t", ""), "MessageGroupId": "-"}
                for i, job in enumerate(batch)
            ]
            stub.add_response(
                "send_message_batch", _answer(entries, refused), {"QueueUrl": URL, "Entries": entries}
            )

        refused_ids = JobQueue(URL).send_new("t", "", ids)

        stub.assert_no_pending_responses()
    assert refused_ids == ["job-1", "job-10"]
