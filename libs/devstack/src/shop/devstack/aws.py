"""An SQS + SNS endpoint for development and tests: moto's server in a child process, or a
real endpoint you name (``SHOP_DEVSTACK_AWS_ENDPOINT``)."""

from __future__ import annotations

import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from shop.devstack.errors import DevstackError
from shop.devstack.ports import free_port
from shop.devstack.process import ManagedProcess, answers_ok, port_accepts

DEV_REGION = "ap-southeast-3"  # Jakarta, where the shop's customers are
DEV_CREDENTIALS = ("devstack", "devstack")


@dataclass(frozen=True)
class AwsEndpoint:
    """Enough to build an SNS or SQS client: endpoint URL, region and credentials."""

    url: str | None
    region: str = DEV_REGION
    access_key_id: str = DEV_CREDENTIALS[0]
    secret_access_key: str = DEV_CREDENTIALS[1]

    def client_kwargs(self) -> dict[str, str]:
        """Keyword arguments for ``session.create_client("sqs" | "sns", **kwargs)``."""
        kwargs = {
            "region_name": self.region,
            "aws_access_key_id": self.access_key_id,
            "aws_secret_access_key": self.secret_access_key,
        }
        if self.url:
            kwargs["endpoint_url"] = self.url
        return kwargs


class MotoServer:
    """moto's HTTP server: real SQS/SNS semantics (redrive, visibility, raw delivery); slow.

    Run through :mod:`shop.devstack.moto_server`, which makes its queues safe for
    concurrent requests; what it does to each message is journaled in ``sqs-journal.jsonl``
    beside its log (:mod:`shop.devstack.sqs_journal`)."""

    name = "aws"

    def __init__(self, workdir: Path, *, port: int | None = None, timeout: float = 60) -> None:
        self.port = port or free_port()
        self.timeout = timeout
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = ManagedProcess(
            "moto",
            [
                sys.executable,
                "-m",
                "shop.devstack.moto_server",
                "-H",
                "127.0.0.1",
                "-p",
                str(self.port),
                "--journal",
                str(workdir / "sqs-journal.jsonl"),
            ],
            workdir / "moto.log",
        )
        self.endpoint = AwsEndpoint(url=self.url)

    def spawn(self) -> None:
        if port_accepts("127.0.0.1", self.port):
            raise DevstackError(f"moto: port {self.port} is already in use")
        self.process.start()

    def wait_ready(self) -> None:
        self.process.wait_until(self._answers, self.timeout, f"answering on {self.url}")

    def start(self) -> AwsEndpoint:
        self.spawn()
        self.wait_ready()
        return self.endpoint

    def stop(self) -> None:
        self.process.stop()

    def reset(self) -> None:
        """Forget every queue and topic (moto's own reset API)."""
        request = urllib.request.Request(f"{self.url}/moto-api/reset", method="POST")
        with urllib.request.urlopen(request, timeout=10):
            pass

    def _answers(self) -> bool:
        return answers_ok(f"{self.url}/moto-api/data.json")
