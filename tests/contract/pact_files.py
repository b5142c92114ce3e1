"""The pacts as data, and the files committed from them in ``pacts/``.

A consumer's test module states its expectations once; the same objects are fed to its
handlers and written to its pact file, so what is committed is what was tested. The
committed files are what the producers are verified against: a test compares each with a
fresh rendering, so that neither can drift from the other unnoticed.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pact import Pact

PACTS_DIR: Final = Path(__file__).parent / "pacts"
UPDATE_VARIABLE: Final = "SHOP_UPDATE_PACTS"
"""Set to ``1`` to write the consumers' pacts into ``pacts/`` instead of comparing them."""


@dataclass(frozen=True, slots=True)
class Expectation:
    """One message a consumer relies on: its name (see :mod:`.messages`) and the body it
    needs, whose matchers say what of each field it needs (a type, a pattern, a value)."""

    description: str
    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ConsumerPact:
    """Everything one consumer states about the messages of one provider."""

    consumer: str
    provider: str
    expectations: tuple[Expectation, ...]

    @property
    def file_name(self) -> str:
        return f"{self.consumer}-{self.provider}.json"

    def build(self, *only: Expectation) -> Pact:
        """The pact of all the expectations, or of ``only`` these (to test one at a time)."""
        pact = Pact(self.consumer, self.provider).with_specification("V4")
        for expectation in only or self.expectations:
            if expectation not in self.expectations:
                raise ValueError(f"{expectation.description!r} is not in {self.file_name}")
            (
                pact.upon_receiving(expectation.description, "Async").with_body(
                    expectation.body, content_type="application/json"
                )
            )
        return pact


def assert_committed(consumer_pact: ConsumerPact, scratch: Path) -> None:
    """Fail, with a diff, when the committed pact is not the one ``consumer_pact`` writes;
    with ``SHOP_UPDATE_PACTS=1``, write it to ``pacts/`` instead."""
    if os.environ.get(UPDATE_VARIABLE) == "1":
        consumer_pact.build().write_file(PACTS_DIR, overwrite=True)
        return
    consumer_pact.build().write_file(scratch, overwrite=True)
    fresh = _contract_of(scratch / consumer_pact.file_name)
    committed_path = PACTS_DIR / consumer_pact.file_name
    assert committed_path.exists(), (
        f"{committed_path} is missing: run `{UPDATE_VARIABLE}=1 pytest tests/contract` "
        "and commit it"
    )
    committed = _contract_of(committed_path)
    if fresh != committed:
        diff = difflib.unified_diff(
            _lines(committed), _lines(fresh), f"committed {committed_path.name}", "stated now"
        )
        raise AssertionError(
            f"{committed_path.name} differs from what {consumer_pact.consumer} states; if the "
            f"change is meant, run `{UPDATE_VARIABLE}=1 pytest tests/contract` and commit "
            "the pact with it:\n" + "".join(diff)
        )


def _contract_of(path: Path) -> dict[str, Any]:
    """The pact without the versions of the library that wrote it, which are no part of
    what the consumer states."""
    pact: dict[str, Any] = json.loads(path.read_text())
    pact.get("metadata", {}).pop("pactRust", None)
    return pact


def _lines(pact: dict[str, Any]) -> list[str]:
    return [f"{line}\n" for line in json.dumps(pact, indent=2, sort_keys=True).splitlines()]
