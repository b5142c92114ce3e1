"""``make run``'s command as a test runs it: ``python -m shop.devstack up`` with the shop's
procfile, on the transport asked for, in a folder of the test's own. It yields where each
part listens (from the ``shop.env`` it writes for the tools) and, on the way out, stops it
with SIGTERM and checks that it exited 0 and left no process behind."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import Any, TypeVar

import psutil

from shop.devstack.testing import wait_for_ready
from shop.ops.payments import NoPaymentOpened, payment_due
from shop.ops.settings import OpsSettings
from shop.simulators import gateway

ROOT = Path(__file__).resolve().parents[2]

T = TypeVar("T")


@dataclass(frozen=True)
class Reply:
    status: int
    headers: Message
    """Looked up by name in any case (``Content-Type``, ``content-type``)."""
    text: str

    def json(self) -> Any:
        return json.loads(self.text)


def http_reply(
    method: str, url: str, body: object = None, headers: dict[str, str] | None = None
) -> Reply:
    """One HTTP request; a refusal (4xx, 5xx) is a reply like any other, not an error."""
    data = json.dumps(body).encode() if body is not None else None
    sent = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(sent, timeout=10) as reply:
            return Reply(reply.status, reply.headers, reply.read().decode())
    except urllib.error.HTTPError as error:
        return Reply(error.code, error.headers, error.read().decode())


def http(
    method: str, url: str, body: object = None, headers: dict[str, str] | None = None
) -> tuple[int, str]:
    reply = http_reply(method, url, body, headers)
    return reply.status, reply.text


def until(check: Callable[[], T | None], what: str, within: float = 90) -> T:
    """Poll ``check`` until it gives something true, and return that."""
    deadline = time.monotonic() + within
    while not (outcome := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)
    return outcome


@dataclass(frozen=True)
class RunningShop:
    workdir: Path
    banner: str
    env: dict[str, str]
    """``shop.env``: where shopctl and the console find each part."""
    process_env: dict[str, str]

    @property
    def order_api(self) -> str:
        return self.env["SHOP_OPS_ORDER_API_URL"]

    @property
    def mail_dir(self) -> Path:
        return Path(self.env["SHOP_OPS_MAIL_DIR"])

    def log(self, process: str) -> str:
        return (self.workdir / "logs" / f"{process}.log").read_text(errors="replace")

    @contextmanager
    def paused(self, process: str) -> Iterator[None]:
        """``process`` of this stack (``order-worker``…) stopped (SIGSTOP) for the block: its
        connections stay open, nothing it does happens; SIGCONT after, whatever happened."""
        folder = str(self.workdir)
        found = [
            candidate
            for candidate in psutil.process_iter(["cmdline"])
            if _is_process(candidate, process, folder)
        ]
        assert len(found) == 1, f"{len(found)} {process} processes of {folder}"
        [stopped] = found
        stopped.send_signal(signal.SIGSTOP)
        try:
            yield
        finally:
            stopped.send_signal(signal.SIGCONT)

    def ops_settings(self) -> OpsSettings:
        """What ``shopctl`` reads for this stack: its ``shop.env``."""
        # Named, never patched into os.environ: stacks and scenarios run side by side in
        # threads, and a patch races every thread iterating the environment (httpx does, for
        # its proxies, in each client it makes).
        return OpsSettings(_env_file=self.workdir / "shop.env")

    def stock_of(self, sku: str) -> int:
        """How many of ``sku`` the catalogue says are in stock."""
        reply = http_reply("GET", f"{self.order_api}/v1/products/{sku}")
        assert reply.status == 200, reply.text
        return int(reply.json()["in_stock"])

    def customer_token(self) -> str:
        """A token from ``shopctl token``, as a developer gets one."""
        env = {**self.process_env, "SHOP_OPS_ENV_FILE": str(self.workdir / "shop.env")}
        return subprocess.run(
            [sys.executable, "-m", "shop.console.shopctl", "token"],
            capture_output=True, text=True, check=True, cwd=ROOT, env=env,
        ).stdout.strip()  # fmt: skip

    def checkout(
        self, token: str, sku: str, quantity: int = 1, *, traceparent: str | None = None
    ) -> dict[str, object]:
        headers = {
            "Authorization": f"Bearer {token}",
            "Idempotency-Key": str(uuid.uuid4()),
            "Content-Type": "application/json",
        }
        if traceparent is not None:
            headers["traceparent"] = traceparent  # as a traced frontend would send it
        status, body = http(
            "POST",
            f"{self.order_api}/v1/orders",
            {"items": [{"sku": sku, "quantity": quantity}]},
            headers,
        )
        assert status == 201, body
        return dict(json.loads(body))

    def order_status(self, token: str, order: dict[str, object]) -> str:
        _, body = http(
            "GET",
            f"{self.order_api}/v1/orders/{order['id']}",
            headers={"Authorization": f"Bearer {token}"},
        )
        return str(json.loads(body)["status"])

    def gateway_pays(self, order: dict[str, object]) -> bool:
        """The customer pays ``order`` at the development payment gateway, for the amount
        payment-service opened its payment for: the gateway records the charge and notifies
        payment-service; False while payment-service has not opened the payment yet."""
        try:
            due = asyncio.run(payment_due(self.ops_settings(), str(order["number"])))
        except NoPaymentOpened:
            return False  # its OrderCreated has not reached payment-service yet
        payment = gateway.Payment(due.order_id, due.amount, due.currency)
        answers = asyncio.run(gateway.pay_at_gateway(self.env["SHOP_OPS_GATEWAY_URL"], payment))
        return all(answer.accepted for answer in answers)


def read_env_file(path: Path) -> dict[str, str]:
    env: dict[str, str] = {}
    for line in path.read_text().splitlines():
        name, _, value = line.partition("=")
        env[name] = value
    return env


START_ATTEMPTS = 3
PORT_IN_USE = "address already in use"


@contextmanager
def running_shop(
    workdir: Path, transport: str, extra_env: dict[str, str] | None = None
) -> Iterator[RunningShop]:
    """``make run`` on ``transport``, in ``workdir``; stopped with SIGTERM at the end.

    Its processes listen on free ports (``--any-ports``), never make run's usual ones, which
    the stacks the suite runs side by side would all want. The devstack chooses each port
    before the process that is to listen on it starts, so another stack starting at the
    same moment may still take one first. Such a start is stopped and made again, in a
    folder of its own: the shop did nothing wrong, and its tests must not fail for it."""
    env = {**os.environ, "COLUMNS": "200", "SHOP_TRANSPORT": transport, **(extra_env or {})}
    for attempt in range(1, START_ATTEMPTS + 1):
        folder = workdir if attempt == 1 else workdir.with_name(f"{workdir.name}-{attempt}")
        with _make_run(folder, env) as banner:
            if banner is None and attempt < START_ATTEMPTS:
                continue
            assert banner is not None, f"another stack took this one's ports {attempt} times"
            assert f"bus: {transport}" in banner, banner
            yield RunningShop(folder, banner, read_env_file(folder / "shop.env"), env)
            return


@contextmanager
def _make_run(workdir: Path, env: dict[str, str]) -> Iterator[str | None]:
    """``make run``'s command in ``workdir``: what it printed once ready, or None when
    another process took one of the ports it chose; stopped with SIGTERM at the end."""
    process = subprocess.Popen(
        [sys.executable, "-m", "shop.devstack", "up", "--workdir", str(workdir),
         "--procfile", str(ROOT / "devstack.toml"), "--any-ports"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env,
    )  # fmt: skip
    children: list[psutil.Process] = []
    banner: str | None = None
    try:
        try:
            banner = wait_for_ready(process)
        except AssertionError as error:
            if PORT_IN_USE not in str(error):
                raise
        else:
            children = psutil.Process(process.pid).children(recursive=True)
            if _ports_served_by_others(workdir, children):
                banner = None
        yield banner
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            code: int | None = process.wait(timeout=90)
        except subprocess.TimeoutExpired:
            code = None
            process.kill()  # it did not stop by itself: take it and its children down
            for child in children:
                if child.is_running():
                    child.kill()
            process.wait(timeout=30)
        _, alive = psutil.wait_procs(children, timeout=20)
    # After the stop, so that a failing test's own error is the one reported.
    assert alive == [], f"left running: {[p.pid for p in alive]}"
    if banner is not None:
        assert code == 0, f"make run's command exited {code} on SIGTERM"


def _ports_served_by_others(workdir: Path, children: list[psutil.Process]) -> list[int]:
    """The ports of this stack's processes (those ``shop.env`` names) on which a process of
    another stack listens: its readiness check took that one's answer for its own, and its
    own process could not listen there."""
    ports = {
        int(port)
        for value in read_env_file(workdir / "shop.env").values()
        if (port := value.removeprefix("http://127.0.0.1:")).isdigit()
    }
    ours = {child.pid for child in children}
    return sorted(
        connection.laddr.port
        for connection in psutil.net_connections(kind="tcp")
        if connection.status == psutil.CONN_LISTEN
        and connection.laddr.port in ports
        and connection.pid is not None  # unknown when the process is another user's
        and connection.pid not in ours
    )


def _is_process(candidate: psutil.Process, process: str, folder: str) -> bool:
    """Whether ``candidate`` is ``process`` (``order-worker`` runs ``shop.order.worker``) of
    the stack in ``folder`` (its environment names the folder's files)."""
    module = "shop." + process.replace("-", ".")
    try:
        command = candidate.info["cmdline"] or []
        return module in command and any(folder in value for value in candidate.environ().values())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
