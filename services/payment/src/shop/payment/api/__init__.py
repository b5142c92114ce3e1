"""The webhooks the payment gateways call."""
