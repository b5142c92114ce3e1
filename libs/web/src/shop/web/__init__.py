"""What every service's HTTP API needs, once: errors as problem documents
(:mod:`shop.web.problems`), a body-size guard (:mod:`shop.web.guards`), request metrics
by route template (:mod:`shop.web.metrics`) and a span per request
(:mod:`shop.web.tracing`)."""
