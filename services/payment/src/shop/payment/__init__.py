"""payment-service: signed gateway webhooks in, PaymentReceived out."""
