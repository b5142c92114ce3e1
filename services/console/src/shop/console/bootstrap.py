"""The one place that wires concrete adapters into the console: order-service's orders
(through its internal API), :mod:`shop.ops` over the running shop, the AsyncAPI documents
on disk. Unit
tests wire fakes through ``build_app(settings, sources=…)``."""

from __future__ import annotations

from fastapi import FastAPI

from shop.console.adapters.asyncapi import DocumentFolder
from shop.console.adapters.ops import ShopOperations
from shop.console.adapters.orders import ServiceOrderDirectory
from shop.console.api.app import create_app
from shop.console.ports import Sources
from shop.console.settings import ConsoleSettings
from shop.messaging.logging import configure_logging
from shop.ops.settings import OpsSettings


def shop_sources(settings: ConsoleSettings, ops: OpsSettings) -> Sources:
    return Sources(
        orders=ServiceOrderDirectory(ops),
        operations=ShopOperations(ops),
        documents=DocumentFolder(settings.asyncapi_dir),
    )


def build_app(
    settings: ConsoleSettings,
    ops: OpsSettings | None = None,
    *,
    sources: Sources | None = None,
) -> FastAPI:
    """The console; where the shop is comes from ``ops`` (``SHOP_OPS_*`` by default, as
    for ``shopctl``)."""
    configure_logging(json=settings.log_json)
    if sources is None:
        sources = shop_sources(settings, OpsSettings() if ops is None else ops)
    return create_app(settings, sources)
