"""What every service's HTTP API needs, once: errors as problem documents
(:mod:`shop.web.problems`), a body-size guard (:mod:`shop.web.guards`) and request metrics
by route template (:mod:`shop.web.metrics`)."""
