"""Dead letters: filtered, shown whole, redriven or purged after a confirmation page.

Each change is a POST from a form that carries the CSRF token, answered with a redirect
(so a reload repeats nothing): to the list, with a message saying what was done, or for a
redrive of every matching letter, which runs in the background, to its job's page."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import RedirectResponse
from starlette.responses import Response

from shop.console.api.dependencies import (
    LOGIN_REQUIRED,
    CsrfChecked,
    FilterText,
    FormText,
    GroupPath,
    JobId,
    LetterIdPath,
    Ops,
    Redrives,
    Settings,
)
from shop.console.api.rendering import render
from shop.console.api.security import flash
from shop.console.domain.errors import NotFound
from shop.console.domain.payloads import readable_body
from shop.console.ports import LetterQuery
from shop.console.service_layer.redrives import AlreadyRunning

router = APIRouter(dependencies=[LOGIN_REQUIRED])


def _query(
    group: FilterText = "",
    message_type: FilterText = "",
    error_type: FilterText = "",
    text: FilterText = "",
) -> LetterQuery:
    return _letter_query(group, message_type, error_type, text)


def _form_query(
    group: FormText = "",
    message_type: FormText = "",
    error_type: FormText = "",
    text: FormText = "",
) -> LetterQuery:
    return _letter_query(group, message_type, error_type, text)


def _letter_query(group: str, message_type: str, error_type: str, text: str) -> LetterQuery:
    return LetterQuery(
        group=group.strip() or None,
        message_type=message_type.strip() or None,
        error_type=error_type.strip() or None,
        text=text.strip() or None,
    )


FilterQuery = Annotated[LetterQuery, Depends(_query)]
FilterForm = Annotated[LetterQuery, Depends(_form_query)]


Cursor = Annotated[str, Query(max_length=300, pattern=r"^([A-Za-z0-9._-]+/[0-9]{0,18})?$")]
"""A page's ``next_cursor``: ``group/after``."""


@router.get("/dead-letters")
async def dead_letters(
    request: Request, ops: Ops, query: FilterQuery, cursor: Cursor = ""
) -> Response:
    page = await ops.dead_letters(query, cursor=cursor or None)
    return render(
        request,
        "dead_letters.html",
        query=query,
        groups=await ops.groups(),
        letters=page.letters,
        next_cursor=page.next_cursor,
        first_page=not cursor,
    )


@router.get("/dead-letters/redrive-matching")
async def confirm_redrive_matching(request: Request, ops: Ops, query: FilterQuery) -> Response:
    page = await ops.dead_letters(query)
    return render(
        request,
        "confirm_redrive_matching.html",
        query=query,
        letters=page.letters,
        redrivable=[letter for letter in page.letters if not letter.truncated],
        more=page.next_cursor is not None,
    )


@router.post("/dead-letters/redrive-matching")
async def redrive_matching(
    request: Request,
    _: CsrfChecked,
    ops: Ops,
    settings: Settings,
    jobs: Redrives,
    query: FilterForm,
) -> Response:
    try:
        job = jobs.start(
            query.description,
            lambda: ops.redrive_matching(query, per_second=settings.redrive_per_second),
        )
    except AlreadyRunning as running:
        flash(request, "error", f"Nothing started: {running}. It is shown here.")
        job = running.job
    return RedirectResponse(f"/dead-letters/redrives/{job.id}", status_code=303)


@router.get("/dead-letters/redrives/{job_id}")
async def redrive_job(request: Request, job_id: JobId, jobs: Redrives) -> Response:
    job = jobs.get(job_id)
    if job is None:
        raise NotFound("no such redrive: the console forgets them when it restarts")
    return render(request, "redrive_job.html", job=job)


@router.get("/dead-letters/{group}/{letter_id}")
async def dead_letter(
    request: Request, group: GroupPath, letter_id: LetterIdPath, ops: Ops
) -> Response:
    letter = await ops.dead_letter(group, letter_id)
    return render(request, "dead_letter.html", letter=letter, body=readable_body(letter.body))


@router.get("/dead-letters/{group}/{letter_id}/redrive")
async def confirm_redrive(
    request: Request, group: GroupPath, letter_id: LetterIdPath, ops: Ops
) -> Response:
    letter = await ops.dead_letter(group, letter_id)
    return render(request, "confirm.html", letter=letter, action="redrive")


@router.post("/dead-letters/{group}/{letter_id}/redrive")
async def redrive(
    request: Request, _: CsrfChecked, group: GroupPath, letter_id: LetterIdPath, ops: Ops
) -> Response:
    letter = await ops.redrive(group, letter_id)
    flash(
        request,
        "success",
        f"Redriven: dead letter {letter.id} ({letter.message_type or 'unknown type'}) went "
        f"back to {letter.group}.",
    )
    return RedirectResponse("/dead-letters", status_code=303)


@router.get("/dead-letters/{group}/{letter_id}/purge")
async def confirm_purge(
    request: Request, group: GroupPath, letter_id: LetterIdPath, ops: Ops
) -> Response:
    letter = await ops.dead_letter(group, letter_id)
    return render(request, "confirm.html", letter=letter, action="purge")


@router.post("/dead-letters/{group}/{letter_id}/purge")
async def purge(
    request: Request, _: CsrfChecked, group: GroupPath, letter_id: LetterIdPath, ops: Ops
) -> Response:
    purged = await ops.purge(group, letter_id)
    flash(
        request,
        "success",
        f"Purged: dead letter {', '.join(purged.ids)} of {purged.group} deleted from "
        f"{purged.service}'s store, body and all ({purged.count} deleted).",
    )
    return RedirectResponse("/dead-letters", status_code=303)
