import json

from aiobotocore.session import get_session

from shop.devstack import AwsEndpoint


async def test_sns_fans_out_raw_messages_and_sqs_redrives_poison_to_its_dlq(
    aws_endpoint: AwsEndpoint, unique_name: str
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
