import pytest

from shop.contracts import (
    ALL_CONTRACTS,
    ConsumerGroup,
    consumer_queue,
    dead_letter_queue,
    delay_topic,
    message_topic,
)


def test_every_contract_has_its_own_topic():
    topics = [message_topic(contract) for contract in ALL_CONTRACTS]

    assert len(set(topics)) == len(topics)
    assert message_topic(ALL_CONTRACTS[0]) == "shop-order-created"


def test_each_consumer_group_gets_its_queues():
    assert consumer_queue(ConsumerGroup.NOTIFICATION) == "shop-notification-service"
    assert dead_letter_queue(ConsumerGroup.NOTIFICATION) == "shop-notification-service-dlq"
    assert delay_topic(ConsumerGroup.ORDER, 8) == "shop-order-service-retry-8s"


def test_a_name_no_transport_accepts_is_refused():
    with pytest.raises(ValueError, match="not a valid topic"):
        consumer_queue("Notification Service")
