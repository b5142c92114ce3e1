"""The e-mails the development SMTP sink captured: the list, each one's HTML (in a
sandboxed frame, with no script and nothing fetched from elsewhere) and its PDFs.
Development only: elsewhere these pages do not exist."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Path, Request
from starlette.responses import Response

from shop.console.api.dependencies import LOGIN_REQUIRED, MailName, Ops, Settings
from shop.console.api.rendering import render
from shop.console.domain.errors import NotFound
from shop.ops.mail import CapturedMail


async def _development_only(settings: Settings) -> None:
    if not settings.shows_captured_mail:
        raise HTTPException(404, "captured e-mails exist in development only")


router = APIRouter(dependencies=[LOGIN_REQUIRED, Depends(_development_only)])

MAIL_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; "
    "frame-ancestors 'self'; sandbox"
)
"""The e-mail's own HTML: its inline styles, nothing else (no script, no fetch, no form),
and framed by the console's pages only."""


async def _mail(ops: Ops, name: str) -> CapturedMail:
    # One file read, not the whole folder: the frame and each PDF ask again.
    found = await ops.captured_mail_named(name)
    if found is None:
        raise NotFound(f"no captured e-mail {name!r}")
    return found


@router.get("/mail")
async def mails(request: Request, ops: Ops) -> Response:
    return render(request, "mails.html", mails=await ops.captured_mail())


@router.get("/mail/{name}")
async def mail(request: Request, name: MailName, ops: Ops) -> Response:
    return render(request, "mail.html", mail=await _mail(ops, name))


@router.get("/mail/{name}/html")
async def mail_html(name: MailName, ops: Ops) -> Response:
    found = await _mail(ops, name)
    return Response(
        found.html,
        media_type="text/html; charset=utf-8",
        headers={
            "Content-Security-Policy": MAIL_CSP,
            "X-Frame-Options": "SAMEORIGIN",
        },
    )


@router.get("/mail/{name}/pdf/{index}")
async def mail_pdf(name: MailName, index: Annotated[int, Path(ge=0, le=100)], ops: Ops) -> Response:
    found = await _mail(ops, name)
    if index >= len(found.pdfs):
        raise NotFound(f"{name} has no PDF number {index + 1}")
    pdf = found.pdfs[index]
    filename = "".join(c for c in pdf.filename if c.isalnum() or c in "._-") or "attachment.pdf"
    return Response(
        pdf.content,
        media_type="application/pdf",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
