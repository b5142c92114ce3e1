"""What each process answers on, asked over HTTP as a probe or the ingress controller
would ask: the services' FastAPI apps (built by their own ``create_app``) and the
workers' health server. A path is served when it answers anything but 404."""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
import urllib.error
import urllib.request

import httpx
from fastapi import FastAPI
from prometheus_client import CollectorRegistry
from pydantic_settings import BaseSettings

from shop.messaging.health import HealthServer

from .processes import Process
from .settings_env import environment

METHODS = ("GET", "POST")


@functools.cache
def _app(module: str, settings: type[BaseSettings]) -> FastAPI:
    """``python -m module``'s app: its package's ``app.create_app`` with the settings'
    development defaults (every gateway's route, for one), and no adapters (a route that
    needs one fails with 500, not 404)."""
    create_app = importlib.import_module(f"{module}.app").create_app
    parameters = list(inspect.signature(create_app).parameters.values())[1:]
    adapters = [
        None
        for p in parameters
        if p.default is inspect.Parameter.empty and p.kind is not p.KEYWORD_ONLY
    ]
    with environment({}):
        defaults = settings(environment="development")
    app: FastAPI = create_app(defaults, *adapters)
    return app


@functools.cache
def api_serves(module: str, settings: type[BaseSettings], path: str) -> bool:
    return asyncio.run(_api_answers(_app(module, settings), path))


async def _api_answers(app: FastAPI, path: str) -> bool:
    # No lifespan: the app's start and stop would reach for the adapters it lacks.
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
        for method in METHODS:
            if (await client.request(method, path)).status_code != 404:
                return True
    return False


def serves(process: Process, path: str) -> bool:
    """Whether the process answers ``path`` on the port it listens on (an API's app, or a
    worker's health server)."""
    if process.role == "api":
        return api_serves(process.module, process.settings[0], path)
    if process.role == "worker":
        return worker_serves(path)
    return False


@functools.cache
def worker_serves(path: str) -> bool:
    """Whether the workers' health server (shop.messaging's, which every worker runs)
    answers ``path``."""
    return asyncio.run(_health_answers(path)) != 404


async def _health_answers(path: str) -> int:
    server = HealthServer(CollectorRegistry(), lambda: {"running": True}, host="127.0.0.1", port=0)
    await server.start()
    try:
        return await asyncio.to_thread(_status, f"http://127.0.0.1:{server.port}{path}")
    finally:
        await server.stop()


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return error.code
