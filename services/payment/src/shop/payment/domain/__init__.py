"""Pure rules of payments: the gateways' signatures, what their notifications mean, the
payment's states, and every domain error (errors.py). No I/O here."""
