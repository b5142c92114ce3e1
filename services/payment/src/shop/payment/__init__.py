"""payment-service: payment gateways' webhooks taken once and answered fast; a worker that
applies each payment once and publishes PaymentReceived."""
