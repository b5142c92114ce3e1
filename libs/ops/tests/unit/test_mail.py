from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime
from pathlib import Path

import pytest

from shop.ops.errors import OpsError
from shop.ops.mail import captured, captured_named, read_mail
from shop.ops.settings import OpsSettings

SENT = datetime(2026, 12, 3, 9, 30, tzinfo=UTC)


def receipt_file(folder: Path, name: str, subject: str = "Receipt for SK-7KQ4-M2XD") -> Path:
    message = EmailMessage()
    message["From"] = "Skincare Shop <orders@skincare-shop.example>"
    message["To"] = "ayu@example.com"
    message["Subject"] = subject
    message["Date"] = format_datetime(SENT)
    message.set_content("Thank you.")
    message.add_alternative("<p>Thank you.</p>", subtype="html")
    message.add_attachment(
        b"%PDF-1.4 invoice", maintype="application", subtype="pdf", filename="invoice.pdf"
    )
    path = folder / name
    path.write_bytes(message.as_bytes())
    return path


def test_a_captured_email_is_read_with_its_html_and_its_pdfs(tmp_path: Path) -> None:
    mail = read_mail(receipt_file(tmp_path, "00001.eml"))
    assert (mail.file_name, mail.to, mail.subject, mail.date) == (
        "00001.eml",
        "ayu@example.com",
        "Receipt for SK-7KQ4-M2XD",
        SENT,
    )
    assert "<p>Thank you.</p>" in mail.html
    assert [(pdf.filename, pdf.content) for pdf in mail.pdfs] == [
        ("invoice.pdf", b"%PDF-1.4 invoice")
    ]


def test_the_captured_emails_come_oldest_first_and_newest_keeps_the_last(tmp_path: Path) -> None:
    for number in (2, 1, 3):
        receipt_file(tmp_path, f"{number:05d}.eml", subject=f"mail {number}")
    (tmp_path / "provider-faults.json").write_text("{}")
    settings = OpsSettings(environment="test", mail_dir=tmp_path)
    assert [m.subject for m in asyncio.run(captured(settings))] == ["mail 1", "mail 2", "mail 3"]
    assert [m.subject for m in asyncio.run(captured(settings, newest=2))] == ["mail 2", "mail 3"]


def test_without_a_mail_folder_the_reason_says_which_setting(tmp_path: Path) -> None:
    with pytest.raises(OpsError, match="SHOP_OPS_MAIL_DIR"):
        asyncio.run(captured(OpsSettings(environment="test")))
    with pytest.raises(OpsError, match="no folder"):
        asyncio.run(captured(OpsSettings(environment="test", mail_dir=tmp_path / "missing")))


def test_one_captured_email_is_read_by_its_name_and_nothing_outside_the_folder(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "mail"
    folder.mkdir()
    receipt_file(folder, "00001.eml")
    receipt_file(tmp_path, "outside.eml")
    settings = OpsSettings(environment="test", mail_dir=folder)
    found = asyncio.run(captured_named(settings, "00001.eml"))
    assert found is not None
    assert found.pdfs[0].content == b"%PDF-1.4 invoice"
    assert asyncio.run(captured_named(settings, "00002.eml")) is None
    assert asyncio.run(captured_named(settings, "../outside.eml")) is None
