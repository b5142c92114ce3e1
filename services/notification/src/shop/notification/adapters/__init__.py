"""I/O only: the SMTP provider, the fault-injecting wrapper around it, and the record of
sent e-mails in Postgres (tables, sent log)."""
