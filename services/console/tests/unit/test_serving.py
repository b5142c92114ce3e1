"""How the console is served: nothing stands in front of it (operators reach it through a
port-forward, which connects from the pod's own loopback), so no forwarding header is
believed: a client naming its own address in X-Forwarded-For would get fresh login tries."""

from __future__ import annotations

from fastapi import FastAPI

from shop.console.api.__main__ import server_config

from .fakes import SETTINGS


def test_the_console_believes_no_forwarded_address() -> None:
    config = server_config(FastAPI(), SETTINGS)
    assert config.proxy_headers is False
