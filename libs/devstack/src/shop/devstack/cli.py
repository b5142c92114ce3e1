"""``python -m shop.devstack up``: run the development infrastructure until Ctrl-C/SIGTERM."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Annotated, Final

import typer
from rich.console import Console
from rich.table import Table

from shop.devstack.errors import DevstackError
from shop.devstack.procfile import (
    TRANSPORTS,
    Placeholders,
    Procfile,
    ShopProcess,
    ShopProcesses,
    load,
)
from shop.devstack.settings import DevstackSettings
from shop.devstack.stack import Devstack, Endpoints
from shop.simulators.mail import ProviderFaults

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
console = Console()

READY_LINE: Final = "ready — press Ctrl-C to stop"
"""Printed once every part (and every shop process) is up; tests wait for it."""


def _describe_processes(processes: list[ShopProcess]) -> Table:
    table = Table("process", "reach it at", "log", title="shop processes")
    for process in processes:
        table.add_row(process.name, process.url or "-", f"logs/{process.name}.log")
    return table


def _describe(endpoints: Endpoints) -> Table:
    table = Table("part", "listens at", title="shop devstack")
    table.add_row("postgres", endpoints.postgres.url())
    table.add_row("kafka", endpoints.kafka.bootstrap_servers)
    table.add_row("sqs/sns", endpoints.aws.url or "(default AWS endpoint)")
    table.add_row("smtp sink", f"{endpoints.smtp.host}:{endpoints.smtp.port}")
    table.add_row("emails", str(endpoints.mail_dir))
    return table


def _start_processes(procfile: Procfile, workdir: Path) -> ShopProcesses:
    processes = ShopProcesses(procfile.processes, workdir, base_env=dict(os.environ))
    try:
        processes.start()
    except BaseException:
        processes.stop()
        raise
    return processes


@app.callback()
def main() -> None:
    """Embedded infrastructure for the shop: Postgres, Kafka, SQS/SNS, SMTP."""


@app.command()
def up(
    workdir: Annotated[
        Path | None,
        typer.Option(help="Keep data, logs and received emails here (default: a temp folder)."),
    ] = None,
    procfile: Annotated[
        Path | None,
        typer.Option(help="Also run the shop's processes this TOML file describes."),
    ] = None,
    transport: Annotated[
        str,
        typer.Option(
            envvar="SHOP_TRANSPORT",
            help=f"The bus the shop's processes use: {' or '.join(TRANSPORTS)}.",
        ),
    ] = "kafka",
    any_ports: Annotated[
        bool,
        typer.Option(
            "--any-ports",
            help="Free ports only, never the usual ones (8001, …): for a stack beside another.",
        ),
    ] = False,
) -> None:
    """Start every part, print where it listens, stop them all on Ctrl-C or SIGTERM."""
    if transport not in TRANSPORTS:
        raise typer.BadParameter(f"--transport must be {' or '.join(TRANSPORTS)}, not {transport}")
    settings = DevstackSettings()
    if workdir is not None:
        settings = settings.model_copy(update={"workdir": workdir.resolve()})

    stop_requested = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop_requested.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)

    stack = Devstack(settings)
    try:
        endpoints = stack.start()
    except DevstackError as error:
        console.print(f"[red]devstack failed to start:[/] {error}", highlight=False)
        raise typer.Exit(code=1) from error
    processes: ShopProcesses | None = None
    # Faults a demo left behind when it was killed would outlive it: each run starts without.
    ProviderFaults.clear(endpoints.mail_dir)
    try:
        console.print(_describe(endpoints))
        if procfile is not None:
            placeholders = Placeholders(endpoints, stack.workdir, preferred_ports=not any_ports)
            loaded = load(procfile, placeholders, transport=transport)
            shop_env = loaded.write_shop_env(stack.workdir)
            processes = _start_processes(loaded, stack.workdir)
            console.print(_describe_processes(processes.processes))
            console.print(f"bus: {transport}; settings for shopctl and the console: {shop_env}")
            if loaded.try_commands:
                console.print("try:", highlight=False)
                for command in loaded.try_commands:
                    console.print(f"  {command}", highlight=False, soft_wrap=True)
        console.print(READY_LINE, highlight=False)
        while not stop_requested.wait(0.5):
            pass
    except DevstackError as error:
        console.print(f"[red]shop processes failed to start:[/] {error}", highlight=False)
        raise typer.Exit(code=1) from error
    finally:
        console.print("stopping…", highlight=False)
        if processes is not None:
            processes.stop()
        stack.stop()
    console.print("stopped", highlight=False)
