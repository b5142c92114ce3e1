"""The committed AsyncAPI documents, one per service, and the check against the code.

Services are found through the ``shop.asyncapi`` entry point group: each service's
``pyproject.toml`` names a function returning its :class:`ServiceBus`, so this library
never imports a service by name.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Final

from shop.contracts.asyncapi import DOCUMENT_DIR
from shop.messaging.asyncapi.document import ServiceBus, build_document

ENTRY_POINT_GROUP: Final = "shop.asyncapi"
DEFAULT_DOCUMENT_DIR = DOCUMENT_DIR
"""The documents' package in the contracts library (``shop.contracts.asyncapi``), which
ships them: in the workspace, ``contracts/src/shop/contracts/asyncapi`` of the source tree."""
UPDATE_COMMAND: Final = "python -m shop.messaging.asyncapi check --update"


def discover() -> list[ServiceBus]:
    """Every service that declares its bus, in name order."""
    services: dict[str, ServiceBus] = {}
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        describe: Callable[[], ServiceBus] = entry_point.load()
        service = describe()
        if service.name != entry_point.name:
            raise ValueError(
                f"entry point {entry_point.name!r} ({entry_point.value}) describes "
                f"{service.name!r}: name the entry point after the service"
            )
        if service.name in services:
            raise ValueError(f"two entry points describe {service.name!r}")
        services[service.name] = service
    return [services[name] for name in sorted(services)]


def document_path(directory: Path, service: str) -> Path:
    return directory / f"{service}.json"


def render(document: dict[str, Any]) -> str:
    """Stable text of a document, so that a diff shows only real changes."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def current_documents(services: Iterable[ServiceBus]) -> dict[str, str]:
    """The documents as the code defines them now, rendered, by service."""
    return {service.name: render(build_document(service)) for service in services}


def write_documents(directory: Path, services: Iterable[ServiceBus]) -> list[Path]:
    """Rewrite the documents from the code; drop those of services that no longer exist."""
    directory.mkdir(parents=True, exist_ok=True)
    documents = current_documents(services)
    for path in directory.glob("*.json"):
        if path.stem not in documents:
            path.unlink()
    written = []
    for service, text in documents.items():
        path = document_path(directory, service)
        path.write_text(text)
        written.append(path)
    return written


@dataclass
class DocumentReport:
    """Outcome of comparing the services' documents with the committed ones."""

    stale: list[Path] = field(default_factory=list)
    """Committed, but no longer what the code describes."""
    missing: list[Path] = field(default_factory=list)
    """A service without a committed document."""
    unknown: list[Path] = field(default_factory=list)
    """A committed document of no service."""

    @property
    def passed(self) -> bool:
        return not (self.stale or self.missing or self.unknown)


def check(directory: Path, services: Iterable[ServiceBus]) -> DocumentReport:
    """Compare each service's document, as built from the code, with the committed one."""
    report = DocumentReport()
    documents = current_documents(services)
    for service, text in documents.items():
        path = document_path(directory, service)
        if not path.exists():
            report.missing.append(path)
        elif path.read_text() != text:
            report.stale.append(path)
    report.unknown = sorted(p for p in directory.glob("*.json") if p.stem not in documents)
    return report
