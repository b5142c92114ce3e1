"""I/O only: the Postgres side of the ports (tables, the webhook events, the payments)."""
