"""Delivery for the shop's services: outbox, relay, idempotent consumers, retries, dead letters."""
