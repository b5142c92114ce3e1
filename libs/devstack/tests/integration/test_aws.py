import json
from pathlib import Path

from aiobotocore.session import get_session

from shop.devstack import AwsEndpoint, DevstackSettings


async def test_sns_fans_out_raw_messages_and_sqs_redrives_poison_to_its_dlq(
    aws_endpoint: AwsEndpoint,
    unique_name: str,
    devstack_settings: DevstackSettings,
    devstack_workdir: Path,
):
    session = get_session()
    kwargs = aws_endpoint.client_kwargs()
    async with (
        session.create_client("sns", **kwargs) as sns,
        session.create_client("sqs", **kwargs) as sqs,
    ):
        topic_arn = (await sns.create_topic(Name=f"{unique_name}-order-created"))["TopicArn"]

        async def queue(name: str, attributes: dict[str, str]) -> tuple[str, str]:
            url = (await sqs.create_queue(QueueName=name, Attributes=attributes))["QueueUrl"]
            arn = (await sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"]))[
                "Attributes"
            ]["QueueArn"]
            return url, arn

        dlq_url, dlq_arn = await queue(f"{unique_name}-notification-dlq", {})
        redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "2"})
        # Visibility 0: a message received and not deleted is visible again at once, as if
        # its consumer had failed; each receive counts towards maxReceiveCount.
        mail_url, mail_arn = await queue(
            f"{unique_name}-notification", {"RedrivePolicy": redrive, "VisibilityTimeout": "0"}
        )
        pay_url, pay_arn = await queue(f"{unique_name}-payment", {})
        for arn in (mail_arn, pay_arn):
            await sns.subscribe(
                TopicArn=topic_arn,
                Protocol="sqs",
                Endpoint=arn,
                Attributes={"RawMessageDelivery": "true"},
            )

        body = json.dumps({"type": "order.created", "key": "o-1"})
        await sns.publish(TopicArn=topic_arn, Message=body)

        async def bodies(url: str) -> list[str]:
            reply = await sqs.receive_message(QueueUrl=url, WaitTimeSeconds=2)
            return [message["Body"] for message in reply.get("Messages", [])]

        # Both subscribers get the body itself, not an SNS notification wrapping it.
        assert await bodies(pay_url) == [body]
        assert await bodies(mail_url) == [body]  # first receive
        assert await bodies(mail_url) == [body]  # second receive: maxReceiveCount reached
        assert await bodies(mail_url) == []  # moved to the dead-letter queue instead
        assert await bodies(dlq_url) == [body]

    if devstack_settings.aws_endpoint:
        return  # a server someone else runs keeps no journal of ours
    # The journal beside moto's log tells each message's story: the one SNS message reached
    # both queues, then went from the notification queue to its dead-letter queue.
    journal = [json.loads(line) for line in (devstack_workdir / "aws" / "sqs-journal.jsonl").open()]
    ours = [entry for entry in journal if entry["queue"].startswith(unique_name)]
    added = {
        entry["queue"].removeprefix(f"{unique_name}-") for entry in ours if entry["op"] == "add"
    }
    assert added == {"payment", "notification", "notification-dlq"}
    [first, moved] = [e["id"] for e in ours if e["op"] == "add" and "notification" in e["queue"]]
    assert moved == first  # the same message, moved by the redrive
