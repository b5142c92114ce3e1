"""AsyncAPI 3 documents of the services' buses: what each service publishes and consumes,
built with FastStream's AsyncAPI support from the contracts and the services' routers, and
committed in the contracts library, which ships them (:mod:`shop.contracts.asyncapi`;
``python -m shop.messaging.asyncapi check``)."""

from shop.messaging.asyncapi.document import ServiceBus, build_document, unwired
from shop.messaging.asyncapi.documents import DEFAULT_DOCUMENT_DIR, check, discover

__all__ = ["DEFAULT_DOCUMENT_DIR", "ServiceBus", "build_document", "check", "discover", "unwired"]
