"""What the payment rules refuse. The API turns each into a problem document; a refused
notification stores nothing."""

from __future__ import annotations


class DomainError(Exception):
    """A request or message the rules refuse; sending it again unchanged will not help."""


class InvalidSignature(DomainError):
    """The notification is not proven to come from the gateway: its signature is missing,
    malformed, wrong, or its time is outside the tolerance (a replay). The reason names
    which, never the secret or the signature."""


class InvalidNotification(DomainError):
    """The notification is signed but says something the shop does not understand (an
    unknown type or status, an amount that is not whole Rupiah)."""


class PaymentNotOpened(Exception):
    """A notification for an order whose payment is not opened yet (the webhook outran
    OrderCreated). Not a refusal: retried until it appears."""


class AmountMismatch(DomainError):
    """The gateway was paid another amount or currency than the order's: nothing is paid,
    a person settles it."""


class NotificationNotKept(DomainError):
    """A command to process a notification no webhook kept."""


class GatewayUnavailable(Exception):
    """The gateway's API could not be asked or did not answer usefully (a timeout, a refused
    connection, a 5xx, a 429): nothing is known, so nothing is decided; retried."""


class GatewayRefused(DomainError):
    """The gateway's API refused the request and will refuse it again (a 4xx other than
    429: a refund over what is left, a key it does not know, bad credentials)."""
