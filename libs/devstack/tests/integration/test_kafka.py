import asyncio

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from shop.devstack import KafkaCluster


async def consume(cluster: KafkaCluster, topic: str, group: str, count: int) -> list[bytes]:
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=cluster.bootstrap_servers,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        # Tansu holds a group's rebalance for about a session timeout; keep it short.
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
    )
    await consumer.start()
    received: list[bytes] = []
    try:
        async with asyncio.timeout(30):
            while len(received) < count:
                batches = await consumer.getmany(timeout_ms=500)
                for records in batches.values():
                    received.extend(record.value for record in records if record.value)
        await consumer.commit()
    finally:
        await consumer.stop()
    return received


async def test_produce_and_consume_through_a_consumer_group(
    kafka_cluster: KafkaCluster, unique_name: str
):
    topic, group = f"{unique_name}-orders", f"{unique_name}-group"
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
    finally:
        await admin.close()

    producer = AIOKafkaProducer(bootstrap_servers=kafka_cluster.bootstrap_servers)
    await producer.start()
    try:
        for number in range(9):
            await producer.send_and_wait(
                topic, f"order-{number}".encode(), key=b"k%d" % (number % 3)
            )
    finally:
        await producer.stop()

    first = await consume(kafka_cluster, topic, group, 9)
    assert sorted(first) == sorted(f"order-{n}".encode() for n in range(9))

    producer = AIOKafkaProducer(bootstrap_servers=kafka_cluster.bootstrap_servers)
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"order-9", key=b"k0")
    finally:
        await producer.stop()

    # The group committed its offsets: a new member resumes after them.
    assert await consume(kafka_cluster, topic, group, 1) == [b"order-9"]
