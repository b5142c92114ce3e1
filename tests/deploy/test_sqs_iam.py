"""On SNS/SQS each service's AWS role (overlays/prod-sqs/iam) lets its processes do what
they do and keeps every other service out: only the service that sends a message type
publishes to its topic, each queue is used by its own service only, the console only
reads the queues' lengths. The needs come from the services' own descriptions of their
bus; the policies are read as IAM would (wildcards, a string or a list)."""

from __future__ import annotations

import copy
import fnmatch
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shop.contracts import ALL_CONTRACTS
from shop.messaging.naming import Naming
from shop.messaging.transports.kafka.topology import event_topics

from .kafka_rights import CONSOLE, service_buses
from .manifests import of_kind
from .repository import OVERLAYS_DIR
from .shop_k8s import overlay_objects

IAM_DIR = OVERLAYS_DIR / "prod-sqs" / "iam"
ROLE_ANNOTATION = "eks.amazonaws.com/role-arn"
QUEUE_WORK = (
    "sqs:ChangeMessageVisibility",
    "sqs:DeleteMessage",
    "sqs:ReceiveMessage",
    "sqs:SendMessage",
    "sqs:SetQueueAttributes",
)
"""What touches a queue's messages or its policy: its own service's alone."""

Policy = dict[str, Any]


@dataclass(frozen=True)
class Need:
    role: str
    action: str
    resource: str


def _listed(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def allowed(policy: Policy, action: str, resource: str) -> bool:
    return any(
        statement["Effect"] == "Allow"
        and any(fnmatch.fnmatchcase(action, a) for a in _listed(statement["Action"]))
        and any(fnmatch.fnmatchcase(resource, r) for r in _listed(statement["Resource"]))
        for statement in policy["Statement"]
    )


def roles() -> dict[str, str]:
    """Each ServiceAccount's role name (the last part of its role's ARN)."""
    return {
        account["metadata"]["name"]: account["metadata"]["annotations"][ROLE_ANNOTATION].split("/")[
            -1
        ]
        for account in of_kind(overlay_objects("prod-sqs"), "ServiceAccount")
    }


def policies(folder: Path = IAM_DIR) -> dict[str, Policy]:
    return {path.stem: json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))}


def _account() -> str:
    accounts = {
        a["metadata"]["annotations"][ROLE_ANNOTATION].split(":")[4]
        for a in of_kind(overlay_objects("prod-sqs"), "ServiceAccount")
    }
    (account,) = accounts
    return str(account)


def _region() -> str:
    (bus,) = [
        c
        for c in of_kind(overlay_objects("prod-sqs"), "ConfigMap")
        if "SQS__REGION" in c.get("data", {})
    ]
    return str(bus["data"]["SQS__REGION"])


def needs() -> set[Need]:
    region, account = _region(), _account()
    naming = Naming("prod")
    role_of = roles()

    def sns(name: str) -> str:
        return f"arn:aws:sns:{region}:{account}:{name}"

    def sqs(name: str) -> str:
        return f"arn:aws:sqs:{region}:{account}:{name}"

    found: set[Need] = set()
    for bus in service_buses():
        role = role_of[bus.name]
        found.add(Need(role, "sns:ListTopics", "*"))
        for contract in ALL_CONTRACTS:
            found.add(Need(role, "sns:CreateTopic", sns(naming.topic(contract))))
            found.add(Need(role, "sns:GetTopicAttributes", sns(naming.topic(contract))))
        found |= {Need(role, "sns:Publish", sns(naming.topic(c))) for c in bus.publishes}
        for router in bus.routers:
            found |= {Need(role, "sns:Subscribe", sns(t)) for t in event_topics(naming, router)}
            for queue in (naming.queue(router.group), naming.dead_letters(router.group)):
                for action in (
                    *QUEUE_WORK,
                    "sqs:CreateQueue",
                    "sqs:GetQueueUrl",
                    "sqs:GetQueueAttributes",
                ):
                    found.add(Need(role, action, sqs(queue)))
            for action in ("sqs:GetQueueUrl", "sqs:GetQueueAttributes"):
                found.add(Need(role_of[CONSOLE], action, sqs(naming.queue(router.group))))
    return found


def unmet(by_role: dict[str, Policy]) -> list[str]:
    return sorted(
        f"{need.role} may not {need.action} {need.resource}"
        for need in needs()
        if not allowed(by_role.get(need.role, {"Statement": []}), need.action, need.resource)
    )


def overreach(by_role: dict[str, Policy]) -> list[str]:
    """A role that may publish a message type its service does not send, or work another
    service's queue, or any action on every resource but listing the topics."""
    wanted = needs()
    problems = []
    exclusive = {
        (n.action, n.resource): n.role for n in wanted if n.action in (*QUEUE_WORK, "sns:Publish")
    }
    for role, policy in by_role.items():
        for (action, resource), owner in exclusive.items():
            if owner != role and allowed(policy, action, resource):
                problems.append(f"{role} may {action} {resource}")
        for statement in policy["Statement"]:
            if "*" in _listed(statement["Resource"]) and _listed(statement["Action"]) != [
                "sns:ListTopics"
            ]:
                problems.append(f"{role}: {statement['Action']} on every resource")
            if any("*" in action for action in _listed(statement["Action"])):
                problems.append(f"{role}: {statement['Action']}")
    consoles = by_role.get(roles()[CONSOLE], {"Statement": []})
    for statement in consoles["Statement"]:
        extra = set(_listed(statement["Action"])) - {"sqs:GetQueueUrl", "sqs:GetQueueAttributes"}
        if extra:
            problems.append(f"the console may {sorted(extra)}")
    return sorted(problems)


def test_a_policy_per_role_the_service_accounts_name() -> None:
    assert set(policies()) == set(roles().values())


def test_each_role_may_do_what_its_service_does() -> None:
    assert unmet(policies()) == []


def test_no_role_may_publish_another_s_messages_or_work_another_s_queue() -> None:
    assert overreach(policies()) == []


def test_a_role_that_publishes_what_it_does_not_send_is_caught() -> None:
    changed = copy.deepcopy(policies())
    order = changed["prod-shop-order-service"]
    order["Statement"].append(
        {
            "Effect": "Allow",
            "Action": "sns:Publish",
            "Resource": "arn:aws:sns:*:*:prod-shop-payment-*",
        }
    )
    changed["prod-shop-console"]["Statement"].append(
        {"Effect": "Allow", "Action": "sqs:*", "Resource": "*"}
    )

    problems = overreach(changed)

    assert (
        "prod-shop-order-service may sns:Publish "
        "arn:aws:sns:ap-southeast-3:123456789012:prod-shop-payment-received"
    ) in problems
    assert "prod-shop-console: sqs:* on every resource" in problems


def test_a_role_that_cannot_receive_from_its_queue_is_caught() -> None:
    role = "prod-shop-notification-service"
    changed = copy.deepcopy(policies())
    for statement in changed[role]["Statement"]:
        statement["Action"] = [a for a in _listed(statement["Action"]) if a != "sqs:ReceiveMessage"]

    assert (
        f"{role} may not sqs:ReceiveMessage "
        "arn:aws:sqs:ap-southeast-3:123456789012:prod-shop-notification-service"
    ) in unmet(changed)
