"""The services' AsyncAPI 3 documents, one ``<service>.json`` each, shipped in this package
so that whoever operates the shop reads what each service sends and receives from the
installed library, without the source tree and without the services' code.

``python -m shop.messaging.asyncapi check --update`` writes them from the services' code;
the same command without ``--update`` (part of ``make test``) fails when they differ from it.

Beside what AsyncAPI itself states (a ``receive`` operation's Kafka binding names its
consumer group), two operation tags mark the channels a consumer has for itself rather than
for a contract: its delay topics, which it writes a failed message to and reads back once
due, and its dead-letter topic.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any, Final

DELAY_TOPIC_TAG: Final = "delay-topic"
"""Tags a consumer's ``receive`` operation of one of its delay topics."""
DEAD_LETTER_TOPIC_TAG: Final = "dead-letter-topic"
"""Tags a consumer's ``send`` operation of its dead letters."""


def _installed_folder() -> Path:
    folder = resources.files(__name__)
    # A wheel and the workspace's editable install both put the package on disk; a zipped
    # one could not be listed or rewritten as a folder.
    if not isinstance(folder, Path):
        raise RuntimeError(f"{__name__} must be installed as files to read its documents")
    return folder


DOCUMENT_DIR: Final = _installed_folder()
"""Where the documents are: this package's folder."""


def services() -> list[str]:
    """The services that have a document, in name order."""
    return sorted(path.stem for path in DOCUMENT_DIR.glob("*.json"))


def read_document(service: str) -> dict[str, Any]:
    """The document of ``service`` (``order-service``), parsed."""
    path = DOCUMENT_DIR / f"{service}.json"
    if not path.is_file():
        raise KeyError(f"no AsyncAPI document of {service!r} in {DOCUMENT_DIR}")
    document: dict[str, Any] = json.loads(path.read_text())
    return document
