"""``shopctl dlq``: the dead letters of every consumer group: list, show, redrive, purge."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from shop.console.shopctl.terminal import Json, fail, out, run, settings, show_json
from shop.ops import deadletters as dlq
from shop.ops.render import moment, shorten

ServiceOption = Annotated[
    str | None, typer.Option("--service", help="Only this service's groups (order-service, …).")
]
GroupOption = Annotated[str | None, typer.Option("--group", help="Only this consumer group.")]
TypeOption = Annotated[
    str | None, typer.Option("--type", help="Only this message type (order.created, …).")
]
ErrorOption = Annotated[
    str | None, typer.Option("--error", help="Only this error type (PermanentError, …).")
]
ContainsOption = Annotated[
    str | None,
    typer.Option("--contains", help="Only letters with this text in their error, key or body."),
]


def _query(
    service: str | None,
    group: str | None,
    message_type: str | None,
    error: str | None,
    contains: str | None,
) -> dlq.DeadLetterQuery:
    return dlq.DeadLetterQuery(
        service=service,
        group=group,
        message_type=message_type,
        error_type=error,
        contains=contains,
    )


def _letters_table(letters: list[dlq.DeadLetterEntry], more: bool) -> Table:
    title = f"{len(letters)} dead letter(s)" + (" on this page" if more else "")
    table = Table(title=title)
    for column in ("id", "group", "type", "key", "error", "attempts", "last failure"):
        table.add_column(column, overflow="fold")
    for letter in letters:
        error = shorten(f"{letter.error_type}: {letter.error_message}", 70)
        if letter.malformed:
            error = f"[malformed: {'; '.join(letter.problems)}] {error}"
        table.add_row(
            letter.id,
            letter.group,
            letter.message_type or "?",
            letter.key or "",
            error,
            str(letter.attempts),
            moment(letter.last_failure_at),
        )
    return table


def _counts_table(title: str, counts: list[dlq.GroupCount], *, with_ids: bool = False) -> Table:
    table = Table(title=title)
    table.add_column("service")
    table.add_column("group")
    table.add_column("dead letters", justify="right")
    if with_ids:
        table.add_column("ids", overflow="fold")
    for count in counts:
        ids = [", ".join(count.ids)] if with_ids else []
        table.add_row(count.service, count.group, str(count.count), *ids)
    return table


def dlq_list(  # noqa: PLR0917 - typer reads each option from a parameter
    service: ServiceOption = None,
    group: GroupOption = None,
    message_type: TypeOption = None,
    error: ErrorOption = None,
    contains: ContainsOption = None,
    limit: Annotated[
        int, typer.Option(min=1, max=dlq.MAX_PAGE, help="Dead letters on one page.")
    ] = dlq.PAGE,
    cursor: Annotated[
        str | None, typer.Option(help="Where the page starts: the cursor a page ended with.")
    ] = None,
    as_json: Json = False,
) -> None:
    """List the dead letters of every consumer group (or those the filters choose), a page
    at a time; the next page's cursor is printed under the page."""
    query = _query(service, group, message_type, error, contains)
    page = run(dlq.page_dead_letters(settings(), query, cursor=cursor, limit=limit))
    if as_json:
        show_json({"dead_letters": page.letters, "next_cursor": page.next_cursor})
        return
    out.print(_letters_table(page.letters, page.next_cursor is not None))
    if page.next_cursor is not None:
        out.print(f"next page: --cursor {page.next_cursor}")


def dlq_show(
    letter_id: Annotated[str, typer.Argument(metavar="ID", help="The dead letter's id.")],
    group: Annotated[
        str | None, typer.Option(help="Its consumer group (needed when two have the id).")
    ] = None,
    as_json: Json = False,
) -> None:
    """Show one dead letter: why it is there, its headers and its body."""
    letter = run(dlq.show_dead_letter(settings(), letter_id, group=group))
    if as_json:
        show_json(letter)
        return
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for name, value in (
        ("id", letter.id),
        ("service", letter.service),
        ("group", letter.group),
        ("source", letter.source),
        ("type", letter.message_type or "?"),
        ("key", letter.key or ""),
        ("error", f"{letter.error_type}: {letter.error_message}"),
        ("attempts", str(letter.attempts)),
        ("first failure", moment(letter.first_failure_at)),
        ("last failure", moment(letter.last_failure_at)),
        ("truncated", "yes (cannot be redriven)" if letter.truncated else "no"),
    ):
        table.add_row(name, value)
    for name, value in sorted(letter.headers.items()):
        table.add_row(f"header {name}", value)
    out.print(table)
    out.print(Text(letter.body.decode("utf-8", errors="replace")))


def dlq_redrive(  # noqa: PLR0917 - typer reads each option from a parameter
    letter_id: Annotated[
        str | None,
        typer.Argument(metavar="[ID]", help="One dead letter; without it, all that match."),
    ] = None,
    service: ServiceOption = None,
    group: GroupOption = None,
    message_type: TypeOption = None,
    error: ErrorOption = None,
    contains: ContainsOption = None,
    per_second: Annotated[float, typer.Option(min=0.01, help="At most this many a second.")] = 10.0,
    as_json: Json = False,
) -> None:
    """Give dead letters back to the consumer that failed them (and to it alone)."""
    if letter_id is not None:
        if service or message_type or error or contains:
            fail("redrive one letter by its id (with --group), or many by filters, not both")
        letter = run(dlq.redrive_dead_letter(settings(), letter_id, group=group))
        if as_json:
            show_json([dlq.GroupCount(letter.service, letter.group, 1)])
        else:
            out.print(f"redrove {letter.id} to {letter.group}")
        return
    query = _query(service, group, message_type, error, contains)
    counts = run(dlq.redrive_dead_letters(settings(), query, per_second=per_second))
    if as_json:
        show_json(counts)
    else:
        out.print(_counts_table(f"redrove {dlq.count(counts)}", counts))


def dlq_purge(  # noqa: PLR0917 - typer reads each option from a parameter
    service: ServiceOption = None,
    group: GroupOption = None,
    message_type: TypeOption = None,
    error: ErrorOption = None,
    contains: ContainsOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask first.")] = False,
    as_json: Json = False,
) -> None:
    """Remove the dead letters that match, for good (asks first unless --yes)."""
    query = _query(service, group, message_type, error, contains)
    shop = settings()
    if not yes:
        first = run(dlq.page_dead_letters(shop, query, limit=dlq.MAX_PAGE))
        if not first.letters and first.next_cursor is None:
            out.print("no dead letter matches")
            return
        how_many = f"{len(first.letters)}{' or more' if first.next_cursor else ''}"
        if not typer.confirm(f"Purge {how_many} dead letter(s) for good?", err=True):
            fail("nothing purged")
    counts = run(dlq.purge_dead_letters(shop, query))
    if as_json:
        show_json(counts)
    else:
        title = f"purged {dlq.count(counts)}: deleted from the services' stores, bodies and all"
        out.print(_counts_table(title, counts, with_ids=True))
