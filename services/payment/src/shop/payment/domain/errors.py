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


class AmountMismatch(DomainError):
    """The gateway was paid another amount or currency than the order's: nothing is paid,
    a person settles it."""


class NotificationNotKept(DomainError):
    """A command to process a notification no webhook kept."""


class GatewayUnavailable(Exception):
    """The gateway's API could not be asked or did not answer usefully (a timeout, a refused
    connection, a 5xx, a 429): nothing is known, so nothing is decided; retried.
    ``retry_after``: the gateway said when to ask again (seconds); ``too_fast``: it said
    the shop asks too often (a 429); ``answered``: the gateway itself answered the last
    try (its circuit breaker is told so), rather than nobody or its proxy (no reply, a
    5xx)."""

    answered_by_default = False

    def __init__(
        self,
        reason: str,
        *,
        retry_after: float | None = None,
        too_fast: bool = False,
        answered: bool | None = None,
    ) -> None:
        super().__init__(reason)
        self.retry_after = retry_after
        self.too_fast = too_fast
        self.answered = self.answered_by_default if answered is None else answered


class GatewayRefused(DomainError):
    """The gateway's API refused the request and will refuse it again (a 4xx other than
    429: a refund over what is left, a key it does not know, bad credentials)."""


class GatewayNotConfigured(DomainError):
    """A notification or payment of a gateway this shop does not take payments through."""


class NotificationDisputed(DomainError):
    """A notification claimed what the gateway's own record does not bear out (an edited or
    forged body, or a gateway that lost a charge): flagged for a person. The payment
    follows the gateway's record all the same."""


class RefundByHandRefused(DomainError):
    """A refund an operator says was made by hand that cannot be recorded: no refund is due
    on the payment, or the amount is not what is due."""


class ChargeMovedOn(GatewayUnavailable):
    """The gateway refused a refund of a charge that changed meanwhile (a capture that
    settled): asked again, the call that fits it now is made."""

    answered_by_default = True


class RefundNotListed(GatewayUnavailable):
    """The gateway accepted a refund that its status does not list yet: asked again later
    (the refund key makes asking again safe)."""

    answered_by_default = True
