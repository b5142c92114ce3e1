"""``shopctl mail``: the e-mails the development SMTP sink captured."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from shop.console.shopctl.terminal import Json, out, run, settings, show_json
from shop.ops.mail import captured
from shop.ops.render import moment


def mail_command(
    newest: Annotated[int, typer.Option(min=1, help="Only the newest this many.")] = 20,
    as_json: Json = False,
) -> None:
    """The e-mails the development SMTP sink captured (`SHOP_OPS_MAIL_DIR`)."""
    mails = run(captured(settings(), newest=newest))
    if as_json:
        show_json(
            [
                {
                    "file_name": m.file_name,
                    "to": m.to,
                    "subject": m.subject,
                    "date": m.date,
                    "pdfs": [p.filename for p in m.pdfs],
                }
                for m in mails
            ]
        )
        return
    table = Table(title=f"{len(mails)} captured e-mail(s)")
    for column in ("file", "date", "to", "subject", "pdf"):
        table.add_column(column, overflow="fold")
    for mail in mails:
        table.add_row(
            mail.file_name,
            moment(mail.date),
            mail.to,
            mail.subject,
            ", ".join(p.filename for p in mail.pdfs),
        )
    out.print(table)
