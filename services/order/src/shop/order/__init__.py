"""order-service: the checkout gateway (HTTP API, worker, outbox relay)."""
