"""The concerns of handling one delivery, each a middleware of its own (Watermill's
router, in the shop's words): a middleware is given the delivery being handled and the
rest of the chain, and returns its outcome. :func:`shop.messaging.pipeline.standard_middlewares`
lists them in the order every worker runs them; a new concern is a new middleware there,
not an edit of the others."""

from shop.messaging.middlewares.breakers import Breakers
from shop.messaging.middlewares.chain import Handling, Middleware, Next, compose
from shop.messaging.middlewares.dead_letters import DeadLetters
from shop.messaging.middlewares.decoding import Decoding
from shop.messaging.middlewares.inbox import Inbox
from shop.messaging.middlewares.logs import Logging
from shop.messaging.middlewares.observing import Observing, OutcomeObserver, OutcomeRecord
from shop.messaging.middlewares.outage import Outage
from shop.messaging.middlewares.rate_limits import RateLimits
from shop.messaging.middlewares.retries import Retries
from shop.messaging.middlewares.routing import Routing
from shop.messaging.middlewares.slots import Slots
from shop.messaging.middlewares.spans import Spans
from shop.messaging.middlewares.timeout import HandlerTimedOut, Timeout

__all__ = [
    "Breakers",
    "DeadLetters",
    "Decoding",
    "HandlerTimedOut",
    "Handling",
    "Inbox",
    "Logging",
    "Middleware",
    "Next",
    "Observing",
    "Outage",
    "OutcomeObserver",
    "OutcomeRecord",
    "RateLimits",
    "Retries",
    "Routing",
    "Slots",
    "Spans",
    "Timeout",
    "compose",
]
