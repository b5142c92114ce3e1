"""notification-service: confirmation, receipt and cancellation emails."""
