"""The provider side: a producer's messages checked against every pact in ``pacts/`` that
names it as the provider, by the Pact verifier."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pact import Verifier
from pact.types import Message

from .pact_files import PACTS_DIR


@dataclass(frozen=True, slots=True)
class Verification:
    provider: str
    passed: bool
    consumers: frozenset[str]
    """Whose pacts were verified."""
    output: str
    """The verifier's report: each pact by its consumer, each mismatch by its field."""


def verify_provider(provider: str, messages: Mapping[str, Message]) -> Verification:
    """Check ``messages`` (by the names the pacts give them) against ``provider``'s pacts."""
    verifier = (
        Verifier(provider)
        .message_handler(dict(messages))
        .add_source(PACTS_DIR)
        .set_error_on_empty_pact()
        .set_coloured_output(enabled=False)
    )
    try:
        verifier.verify()
        passed = True
    except RuntimeError:
        # The verifier reports a failed verification this way; what failed is in its output.
        passed = False
    consumers = frozenset(
        result["consumer"] for result in verifier.results.get("interactionResults", [])
    )
    return Verification(provider, passed, consumers, str(verifier.output(strip_ansi=True)))
