"""Every dependency and parameter the routes declare, as an ``Annotated`` type. Each is a
coroutine that reads what ``bootstrap`` put in ``app.state``: FastAPI runs a plain function
in its thread pool, which is far slower on a path that must answer fast."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from shop.payment.domain.shop_format import SIGNATURE_HEADER
from shop.payment.ports import WebhookStore
from shop.payment.settings import PaymentSettings


async def _settings(request: Request) -> PaymentSettings:
    settings: PaymentSettings = request.app.state.settings
    return settings


async def _store(request: Request) -> WebhookStore:
    store: WebhookStore = request.app.state.store
    return store


Settings = Annotated[PaymentSettings, Depends(_settings)]
Store = Annotated[WebhookStore, Depends(_store)]
Signature = Annotated[
    str | None,
    Header(
        alias=SIGNATURE_HEADER,
        max_length=2000,
        description='`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`; several '
        "`v1=` may be given. Missing, malformed, wrong or stale: 401.",
        examples=[
            "t=1796287800,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd"
        ],
    ),
]
