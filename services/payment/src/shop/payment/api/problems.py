"""payment-service's problem documents: a refused signature is a 401 that names why (never
the secret or the signature); a notification the shop cannot read is a 422; one that finds
the database away is a 503 that says to send it again. Everything else
about problem documents is :mod:`shop.web.problems`."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse

from shop.database.driver import DATABASE_FAILURES, connection_lost, timed_out
from shop.payment.domain.errors import DomainError, InvalidNotification, InvalidSignature
from shop.payment.domain.shop_format import SIGNATURE_HEADER
from shop.web import problems
from shop.web.problems import ProblemDocument, problem


class Problem(ProblemDocument):
    """An RFC 9457 problem document."""


def _domain_problem(error: DomainError) -> JSONResponse:
    match error:
        case InvalidSignature():
            return problem(
                401,
                "Invalid signature",
                str(error),
                headers={"WWW-Authenticate": SIGNATURE_HEADER},
            )
        case InvalidNotification():
            return problem(422, "Notification not understood", str(error))
        case _:
            return problem(422, "Notification refused", str(error))


def install(app: FastAPI, routers: Sequence[APIRouter]) -> None:
    """Answer every error with a problem document, and document it so in the OpenAPI."""
    problems.install(app, routers, model=Problem)

    @app.exception_handler(DomainError)
    async def domain_error(_: Request, error: DomainError) -> JSONResponse:
        return _domain_problem(error)

    # The gateway sends a notification again until it is answered 2xx: a 503 while the
    # database is away loses nothing.
    problems.answer_unavailable(
        app, DATABASE_FAILURES, unreachable=connection_lost, too_slow=timed_out, what="database"
    )
