"""The e-mails the development SMTP sink captured, one ``.eml`` file each in its folder
(``SHOP_OPS_MAIL_DIR``; ``make run`` keeps them in ``.devstack/mail``). Development only: a
real provider keeps no such folder."""

from __future__ import annotations

import asyncio
import email
import email.policy
from dataclasses import dataclass
from datetime import datetime
from email.message import EmailMessage
from email.utils import parsedate_to_datetime
from pathlib import Path

from shop.ops.errors import OpsError
from shop.ops.settings import OpsSettings


@dataclass(frozen=True, slots=True)
class PdfAttachment:
    filename: str
    content: bytes


@dataclass(frozen=True, slots=True)
class CapturedMail:
    file_name: str
    """``00001.eml``: the sink numbers them in the order they arrived."""
    to: str
    subject: str
    date: datetime | None
    html: str
    """The HTML part ('' when there is none)."""
    pdfs: tuple[PdfAttachment, ...]


def read_mail(path: Path) -> CapturedMail:
    message: EmailMessage = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    html = message.get_body(preferencelist=("html",))
    pdfs = []
    for part in message.iter_attachments():
        if part.get_content_type() == "application/pdf":
            payload = part.get_payload(decode=True)
            content = payload if isinstance(payload, bytes) else b""
            pdfs.append(PdfAttachment(filename=part.get_filename() or "", content=content))
    return CapturedMail(
        file_name=path.name,
        to=str(message["To"] or ""),
        subject=str(message["Subject"] or ""),
        date=_date(message["Date"]),
        html="" if html is None else str(html.get_content()),
        pdfs=tuple(pdfs),
    )


def _date(header: object) -> datetime | None:
    if header is None:
        return None
    try:
        return parsedate_to_datetime(str(header))
    except (TypeError, ValueError):
        return None


def _mail_dir(settings: OpsSettings) -> Path:
    if settings.mail_dir is None:
        raise OpsError("SHOP_OPS_MAIL_DIR is not set: name the SMTP sink's folder of e-mails")
    if not settings.mail_dir.is_dir():
        raise OpsError(f"no folder of captured e-mails at {settings.mail_dir}")
    return settings.mail_dir


def mail_files(settings: OpsSettings) -> list[Path]:
    """The captured files, oldest first."""
    return sorted(_mail_dir(settings).glob("*.eml"))


async def captured(settings: OpsSettings, *, newest: int | None = None) -> list[CapturedMail]:
    """The captured e-mails, oldest first (only the ``newest`` ones when given)."""
    files = mail_files(settings)
    if newest is not None:
        files = files[-newest:] if newest > 0 else []
    return await asyncio.to_thread(lambda: [read_mail(path) for path in files])


async def captured_named(settings: OpsSettings, file_name: str) -> CapturedMail | None:
    """The captured e-mail of one file, read alone (None when there is no such file, or the
    name is not a plain file name of the folder)."""
    folder = _mail_dir(settings)
    if Path(file_name).name != file_name or not file_name.endswith(".eml"):
        return None
    path = folder / file_name
    if not path.is_file():
        return None
    return await asyncio.to_thread(read_mail, path)
