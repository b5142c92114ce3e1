"""A folder of AsyncAPI documents (``<service>.json``): by default the ones the contracts
library ships (:mod:`shop.contracts.asyncapi`), which ``python -m shop.messaging.asyncapi
check`` holds to the code."""

from __future__ import annotations

import functools
from pathlib import Path

from shop.console.domain.asyncapi import DocumentView, read_document_text
from shop.console.domain.errors import NotFound


class DocumentFolder:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def services(self) -> list[str]:
        return sorted(path.stem for path in self.directory.glob("*.json"))

    def document(self, service: str) -> DocumentView:
        return _read(self._path(service), service)

    def raw(self, service: str) -> bytes:
        return self._path(service).read_bytes()

    def _path(self, service: str) -> Path:
        if service not in self.services():
            raise NotFound(f"no AsyncAPI document of {service!r} in {self.directory}")
        return self.directory / f"{service}.json"


@functools.lru_cache(maxsize=16)
def _cached(path: Path, service: str, modified: float) -> DocumentView:
    return read_document_text(service, path.read_text())


def _read(path: Path, service: str) -> DocumentView:
    # Keyed by the file's modification time: an edited document is read again.
    return _cached(path, service, path.stat().st_mtime)
