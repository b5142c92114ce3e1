"""What the processes' own records say a blow interrupted: the e-mails a notification
worker's log shows being sent (a "sending e-mail" line with no outcome after it) at the
moment of the blow or of a handler's timeout, and the e-mails the SMTP sink took and then
dropped the connection on.
Each duplicate e-mail must be explained by such evidence (see ``invariants``)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from shop.notification.domain.kinds import NotificationKey, NotificationKind
from shop.simulators.mail import ProviderJournal

from .invariants import SendBlow, local_part

SENDING: Final = "sending e-mail"
PUT_OFF: Final = "another delivery is sending"
"""A second delivery of an event finding its e-mail held by the first: its failure says
nothing of the first one's send."""
TIMED_OUT: Final = "HandlerTimedOut"
SEND_OUTCOMES: Final = frozenset({"e-mail sent", "e-mail sent twice"})
"""Lines that close a send: the e-mail was recorded (or found recorded by another)."""


@dataclass(frozen=True)
class LogSlice:
    """One life of one process: its log from ``offset`` on."""

    path: Path
    offset: int


@dataclass(frozen=True)
class BlowSite:
    """A blow as the monkey notes it; its evidence is read once the run is over."""

    what: str
    target: str
    at: float
    """Wall-clock time: when it had landed (the process dead, the database down)."""
    lives: tuple[LogSlice, ...]
    """The lives of the notification workers it may have cut short mid-send."""
    began: float | None = None
    """When it began to land, for a blow that takes a while (Postgres stopping): a send
    that fails from then on failed by it."""


def database_restart(stopping_at: float, back_at: float, lives: tuple[LogSlice, ...]) -> BlowSite:
    """Postgres restarted, as a blow on the sends under way (``stopping_at``: when it
    began to stop; ``back_at``: when it took connections again). Its evidence is read up
    to ``back_at``: no send can begin while the database is down (its hold and its "not
    sent yet" are read there), so a send logged after the stop had begun before it, on a
    connection the stop cut, and its record fails once it is written, whenever its
    "sending" line came."""
    return BlowSite("database restarted", "postgres", back_at, lives, began=stopping_at)


def _lines(life: LogSlice) -> Iterator[dict[str, Any]]:
    if not life.path.exists():
        return
    with life.path.open("rb") as log:
        log.seek(life.offset)
        for raw in log:
            try:
                line = json.loads(raw)
            except ValueError:
                continue  # a line cut by a SIGKILL, or a library's own print
            if isinstance(line, dict):
                yield line


def _when(line: dict[str, Any]) -> float | None:
    try:
        return datetime.fromisoformat(str(line["timestamp"])).timestamp()
    except (KeyError, ValueError):
        return None


def _email_of(line: dict[str, Any]) -> str | None:
    try:
        key = NotificationKey(
            uuid.UUID(str(line["order_id"])),
            NotificationKind(str(line["kind"])),
            str(line.get("reference", "")),
        )
    except (KeyError, ValueError):
        return None
    return local_part(key.message_id("evidence"))


def open_sends(life: LogSlice, at: float, *, failures_from: float | None = None) -> set[str]:
    """The e-mails the log shows being sent at ``at``: a "sending e-mail" line before it
    with neither an outcome of the send nor a failure of its delivery between. A failure
    from ``failures_from`` on is the blow's doing: it cuts the send, which stays cut
    whatever a later try of the same e-mail does before ``at``."""
    sending: dict[str, str] = {}  # e-mail → the event whose delivery is sending it
    cut: set[str] = set()
    for line in _lines(life):
        when = _when(line)
        if when is not None and when > at:
            break
        event, email = line.get("event"), _email_of(line)
        if event == SENDING and email is not None:
            sending[email] = str(line.get("event_id"))
        elif event in SEND_OUTCOMES and email is not None:
            sending.pop(email, None)
        elif (
            line.get("level") in {"warning", "error"}
            and "event_id" in line
            and PUT_OFF not in str(line.get("error", ""))
        ):
            failed = str(line["event_id"])
            by_the_blow = failures_from is not None and (when is None or when >= failures_from)
            if by_the_blow:
                cut.update(e for e, d in sending.items() if d == failed)
            # The delivery failed (a retry, a dead letter): its send, if any, did not go.
            sending = {e: d for e, d in sending.items() if d != failed}
    return set(sending) | cut


def evidence(site: BlowSite) -> SendBlow:
    found: set[str] = set()
    for life in site.lives:
        found |= open_sends(life, site.at, failures_from=site.began)
    return SendBlow(site.what, site.target, site.at, frozenset(found))


def dropped_replies(mail_dir: Path) -> list[SendBlow]:
    """Each e-mail the sink took and then hung up on before its reply: one blow each."""
    return [
        SendBlow("provider dropped its reply", entry.message_id, entry.at,
                 frozenset({local_part(entry.message_id)}))
        for entry in ProviderJournal(mail_dir).read()
        if entry.what == "dropped reply"
    ]  # fmt: skip


SLACK: Final = 1.0
"""Seconds between two moments one process noted in that order, on a loaded machine: a
timeout is logged after the cancelled send has cleaned up."""


def timed_out_sends(
    logs: list[Path], handler_timeout: float, never_taken: Collection[str]
) -> list[SendBlow]:
    """Each delivery given up at its handler's timeout while its e-mail was being sent:
    one blow each, since the provider may have taken the e-mail before the send was cut,
    and the retry sends it again. A loaded machine makes sends outlast the timeout, not
    only the provider's hang; the e-mails it hung on (``never_taken``, Message-IDs) it
    never took, and their timeouts explain nothing. The send must have begun within
    ``handler_timeout`` of the timeout: one begun earlier was another delivery's (cut by a
    kill, say), not this one's. (Which copy in the sink came from the cut send, its time
    cannot tell on a loaded machine: the sink may write it after the retry began.)"""
    hung = {local_part(message_id) for message_id in never_taken}
    blows = []
    for path in logs:
        sending: dict[str, tuple[str, float]] = {}  # delivery (event) → its e-mail, since
        for line in _lines(LogSlice(path, 0)):
            event, email, delivery = line.get("event"), _email_of(line), line.get("event_id")
            when = _when(line)
            if event == SENDING and email is not None and when is not None:
                sending[str(delivery)] = (email, when)
            elif event in SEND_OUTCOMES and email is not None:
                sending = {d: sent for d, sent in sending.items() if sent[0] != email}
            elif (
                line.get("level") in {"warning", "error"}
                and delivery is not None
                and PUT_OFF not in str(line.get("error", ""))
            ):
                cut = sending.pop(str(delivery), None)
                if (
                    cut is not None
                    and cut[0] not in hung
                    and line.get("error_type") == TIMED_OUT
                    and when is not None
                    and when - cut[1] <= handler_timeout + SLACK
                ):
                    what = "handler timed out"
                    blows.append(SendBlow(what, str(delivery), when, frozenset({cut[0]})))
    return blows


def handler_timeouts(logs: list[Path]) -> int:
    """Deliveries given up at their handler's timeout (and retried), as the logs tell."""
    return sum(
        line.get("error_type") == TIMED_OUT for path in logs for line in _lines(LogSlice(path, 0))
    )
