"""One route per gateway, each a small adapter that proves the notification came from its
gateway and says what it means, in front of one shared intake. No payment logic runs here:
the notification is kept and queued, and the gateway gets its ``200`` at once, for a new
notification and a repeat alike."""

from __future__ import annotations

import hashlib
import time
import uuid
from typing import Any, Literal, TypeVar

import structlog
from fastapi import APIRouter, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

from shop.payment.api.dependencies import Settings, Signature, Store
from shop.payment.api.problems import Problem
from shop.payment.api.schemas import MidtransNotification, ShopNotification
from shop.payment.domain import midtrans, shop_format
from shop.payment.domain.errors import InvalidNotification
from shop.payment.domain.notifications import Notification, Provider
from shop.payment.service_layer.intake import take_notification

log = structlog.get_logger("shop.payment.api")
router = APIRouter(prefix="/v1/payments", tags=["webhooks"])

ModelT = TypeVar("ModelT", bound=BaseModel)


class Accepted(BaseModel):
    status: Literal["accepted"] = "accepted"
    repeat: bool
    """True when this notification had been received before (nothing new was done)."""


def _responses(unauthorized: str) -> dict[int | str, dict[str, Any]]:
    return {
        401: {"model": Problem, "description": unauthorized},
        413: {"model": Problem, "description": "Body over the size limit (64 KiB)"},
        422: {
            "model": Problem,
            "description": "Not JSON, fields missing or wrong, unknown type or status",
        },
    }


def _body_of(model: type[BaseModel]) -> dict[str, Any]:
    """The body as documentation only: it is read raw, since the signature is over its bytes.
    FastAPI never sees the model, so the models it nests are not among the document's
    components: they are written out in place, where a reference to them would dangle."""
    schema = model.model_json_schema()
    definitions = schema.pop("$defs", {})
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": _inlined(schema, definitions)}},
        }
    }


def _inlined(schema: Any, definitions: dict[str, Any]) -> Any:
    if isinstance(schema, list):
        return [_inlined(item, definitions) for item in schema]
    if not isinstance(schema, dict):
        return schema
    reference = schema.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/$defs/"):
        siblings = {key: value for key, value in schema.items() if key != "$ref"}
        definition = definitions[reference.removeprefix("#/$defs/")]
        return _inlined({**definition, **siblings}, definitions)
    return {key: _inlined(value, definitions) for key, value in schema.items()}


def _parsed(model: type[ModelT], body: bytes) -> ModelT:
    try:
        return model.model_validate_json(body)
    except ValidationError as error:
        # Named as FastAPI names a body it validated itself: `body.data.amount`, …
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in error.errors(include_url=False)]
        ) from error


async def _take(store: Store, notification: Notification, body: bytes) -> Accepted:
    new = await take_notification(store, notification, body)
    log.info(
        "payment notification taken" if new else "payment notification repeated",
        provider=notification.provider.value,
        provider_event_id=notification.provider_event_id,
        order_id=str(notification.order_id),
        meaning=notification.meaning.value,
    )
    return Accepted(repeat=not new)


@router.post(
    "/webhook",
    summary="A notification in the shop's own signed format",
    responses=_responses("Signature missing, malformed, wrong, or outside the time tolerance"),
    openapi_extra=_body_of(ShopNotification),
)
async def shop_webhook(
    request: Request, settings: Settings, store: Store, signature: Signature = None
) -> Accepted:
    body = await request.body()
    shop_format.verify(
        signature,
        body,
        [secret.get_secret_value() for secret in settings.webhook_secrets],
        now=time.time(),
        tolerance=settings.signature_tolerance_seconds,
    )
    sent = _parsed(ShopNotification, body)
    notification = Notification(
        provider=Provider.SHOP,
        provider_event_id=sent.event_id,
        type=sent.type,
        meaning=shop_format.MEANINGS[sent.type],
        order_id=sent.data.order_id,
        amount=sent.data.amount,
        currency=sent.data.currency,
        provider_payment_id=sent.data.provider_payment_id,
    )
    return await _take(store, notification, body)


@router.post(
    "/webhooks/midtrans",
    summary="Midtrans' HTTP notification",
    responses=_responses("signature_key does not match"),
    openapi_extra=_body_of(MidtransNotification),
)
async def midtrans_webhook(request: Request, settings: Settings, store: Store) -> Accepted:
    body = await request.body()
    sent = _parsed(MidtransNotification, body)
    midtrans.verify(
        sent.signature_key,
        order_id=sent.order_id,
        status_code=sent.status_code,
        gross_amount=sent.gross_amount,
        server_key=settings.midtrans_server_key.get_secret_value(),
    )
    try:
        order_id = uuid.UUID(sent.order_id)
    except ValueError:
        raise InvalidNotification(
            "order_id is not an order id of this shop (it sends the order's id to Midtrans)"
        ) from None
    notification = Notification(
        provider=Provider.MIDTRANS,
        provider_event_id=_midtrans_event_id(sent, body),
        type=sent.transaction_status,
        meaning=midtrans.meaning(sent.transaction_status, sent.fraud_status, sent.status_code),
        order_id=order_id,
        amount=midtrans.whole_rupiah(sent.gross_amount),
        currency=sent.currency,
        provider_payment_id=sent.transaction_id,
    )
    return await _take(store, notification, body)


def _midtrans_event_id(sent: MidtransNotification, body: bytes) -> str:
    """Midtrans notifies several times per transaction: an event is the transaction at one
    status (a held card capture and its release are two). A refund or chargeback status
    comes once per refund, so its event is also told apart by its body: a repeat of the
    same notification is byte for byte the same, a second partial refund is not."""
    status = ":".join(filter(None, (sent.transaction_status, sent.fraud_status)))
    event_id = f"{sent.transaction_id}:{status}"
    if sent.transaction_status in midtrans.REVERSAL_STATUSES:
        event_id += ":" + hashlib.sha256(body).hexdigest()[:16]
    return event_id
