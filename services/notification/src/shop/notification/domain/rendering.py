"""The words of the shop's e-mails: each order event becomes a subject, a plain-text part and
an HTML part, from the Jinja2 templates in ``templates/``; a reversal of the payment gets the
notice :func:`~shop.notification.domain.reversals.reversal_of` chooses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jinja2 import (
    BaseLoader,
    Environment,
    PackageLoader,
    StrictUndefined,
    select_autoescape,
)

from shop.contracts import OrderPaymentReversed
from shop.contracts.orders import OrderFacts
from shop.notification.domain.emails import OrderEmail
from shop.notification.domain.money import require_rupiah, rupiah, wib
from shop.notification.domain.reversals import ReversalNotice, reversal_of


@dataclass(frozen=True, slots=True)
class ShopIdentity:
    """Who the e-mails and invoices come from, as a customer reads it."""

    name: str
    address: str
    """One line, e.g. ``Jl. Kemang Raya 12, Jakarta Selatan 12730``."""
    support_email: str
    website: str
    """A full URL, e.g. ``https://glowlab.example``: the HTML part links to it."""


@dataclass(frozen=True, slots=True)
class RenderedEmail:
    """What an e-mail says; who it goes to and how it is sent are decided elsewhere."""

    subject: str
    text: str
    html: str


def template_environment(loader: BaseLoader | None = None) -> Environment:
    """The Jinja2 environment the e-mails are rendered with; ``loader`` defaults to the
    package's own templates."""
    environment = Environment(
        loader=loader or PackageLoader("shop.notification", "templates"),
        # The templates are named ``*.html.j2``: Jinja2 checks the full suffix, so plain
        # "html" alone would leave the HTML parts unescaped.
        autoescape=select_autoescape(["html.j2", "html"]),
        # A misspelt variable must fail the render, not send a customer an empty gap.
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters["rupiah"] = rupiah
    environment.filters["wib"] = wib
    return environment


class EmailRenderer:
    """Renders the e-mails of ``domain/emails.py``, each from its kind's templates; a
    reversal notice from those of the notice its reversal gets."""

    def __init__(self, shop: ShopIdentity, environment: Environment | None = None) -> None:
        self._shop = shop
        self._environment = environment or template_environment()

    def render(self, email: OrderEmail, event: OrderFacts) -> RenderedEmail:
        if isinstance(event, OrderPaymentReversed):
            return self.payment_reversal(event)
        subject = email.subject.format(number=event.order_number)
        return self._render(email.kind.value, subject, event)

    def payment_reversal(self, event: OrderPaymentReversed) -> RenderedEmail:
        reversal = reversal_of(event)
        subject = _REVERSAL_SUBJECTS[reversal.notice].format(number=event.order_number)
        if reversal.notice is ReversalNotice.PARTIAL_REFUND and reversal.refunded_in_full:
            subject = f"Refund for order {event.order_number} completed"
        return self._render(reversal.notice.value, subject, event, reversal=reversal)

    def _render(self, kind: str, subject: str, event: OrderFacts, **facts: object) -> RenderedEmail:
        # The templates print every amount as Rupiah; another currency would be misstated.
        require_rupiah(event.currency)
        context: dict[str, Any] = {
            "subject": subject,
            "event": event,
            "shop": self._shop,
            **facts,
        }
        text = self._environment.get_template(f"{kind}.txt.j2").render(context)
        html = self._environment.get_template(f"{kind}.html.j2").render(context)
        return RenderedEmail(subject=subject, text=text, html=html)


_REVERSAL_SUBJECTS: dict[ReversalNotice, str] = {
    ReversalNotice.REFUND: "Refund for order {number}",
    ReversalNotice.PARTIAL_REFUND: "Partial refund for order {number}",
    ReversalNotice.LATE_PAYMENT_REFUND: "Your payment for cancelled order {number} refunded",
    ReversalNotice.CHARGEBACK: "Payment for order {number} reversed by your bank",
    ReversalNotice.VOID: "Card payment for order {number} cancelled, nothing charged",
}
