"""What the services' settings classes read from the environment, found by walking the
pydantic-settings models (their env_prefix, nested models joined by ``__``), and settings
made from exactly the variables a deployment file gives a process."""

from __future__ import annotations

import json
import os
import secrets
import typing
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel, SecretStr
from pydantic_settings import BaseSettings

from shop.console.domain.passwords import hash_password
from shop.messaging.settings import MessagingSettings

LOOPBACK = ("127.0.0.1", "localhost")


def is_loopback(host: str) -> bool:
    """Whether a process listening on ``host`` is reachable from its own machine only."""
    return host in LOOPBACK or host.startswith("127.") or host == "::1"


def _prefix(settings: type[BaseSettings]) -> tuple[str, str]:
    config = settings.model_config
    return str(config.get("env_prefix", "")), str(config.get("env_nested_delimiter") or "__")


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (``KafkaSettings``, ``X | None``…)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for argument in typing.get_args(annotation) for model in _models(argument)]


def _holds_secret(annotation: Any) -> bool:
    if annotation is SecretStr:
        return True
    return any(_holds_secret(argument) for argument in typing.get_args(annotation))


def _walk(prefix: str, delimiter: str, model: type[BaseModel]) -> Iterator[tuple[str, Any]]:
    for name, field in model.model_fields.items():
        variable = f"{prefix}{name}".upper()
        yield variable, field.annotation
        for nested in _models(field.annotation):
            yield from _walk(variable + delimiter, delimiter, nested)


def known_variables(settings: type[BaseSettings]) -> set[str]:
    """Every variable the class reads: each field, and each field of a nested model (a
    nested model may also be given whole, as JSON, by its own name)."""
    prefix, delimiter = _prefix(settings)
    return {variable for variable, _ in _walk(prefix, delimiter, settings)}


def secret_variables(settings: type[BaseSettings]) -> set[str]:
    """The variables that carry a secret: a ``SecretStr`` field, or a database URL (its
    password is in it)."""
    prefix, delimiter = _prefix(settings)
    return {
        variable
        for variable, annotation in _walk(prefix, delimiter, settings)
        if _holds_secret(annotation) or variable.endswith("DATABASE_URL")
    }


def owner(variable: str, classes: typing.Iterable[type[BaseSettings]]) -> type[BaseSettings] | None:
    """The class among ``classes`` whose prefix the variable has."""
    for settings in classes:
        if variable.upper().startswith(_prefix(settings)[0].upper()):
            return settings
    return None


def unknown_variables(
    env: Mapping[str, object], classes: typing.Iterable[type[BaseSettings]]
) -> list[str]:
    """The variables of ``env`` that none of ``classes`` reads (each looked up in the
    class of its prefix; a variable of no class's prefix is unknown too)."""
    classes = list(classes)
    unknown = []
    for variable in env:
        settings = owner(variable, classes)
        if settings is None or variable.upper() not in known_variables(settings):
            unknown.append(variable)
    return sorted(unknown)


def stand_in(variable: str) -> str:
    """A value of the right shape for a secret the manifests only name (a Secret's key):
    never a development default, so production's checks judge the rest."""
    token = secrets.token_urlsafe(32)
    if variable.endswith("DATABASE_URL"):
        return f"postgresql://role:{token}@postgres.example:5432/shop"
    if variable.endswith("WEBHOOK_SECRETS"):
        return json.dumps([f"whsec_{token}"])
    if variable.endswith("PASSWORD_HASH"):
        return str(hash_password(token))
    return token


@contextmanager
def environment(env: Mapping[str, str]) -> Iterator[None]:
    """The process environment holding, of the shop's variables, exactly ``env`` (and no
    env file: OpsSettings would read .devstack/shop.env otherwise)."""
    saved = dict(os.environ)
    try:
        for name in list(os.environ):
            if name.startswith("SHOP_"):
                del os.environ[name]
        os.environ.update(env)
        os.environ.setdefault("SHOP_OPS_ENV_FILE", os.devnull)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def load(
    settings: type[BaseSettings], env: Mapping[str, str], process: str | None = None
) -> BaseSettings:
    """The settings a process given ``env`` would start with (raises as it would): a
    service's settings told which ``process`` reads them, as its entry point tells them."""
    named = (
        {"process": process} if process is not None and "process" in settings.model_fields else {}
    )
    with environment(env):
        return settings(**named)


def loopback_defaults(instance: BaseModel, env: Mapping[str, str], prefix: str) -> list[str]:
    """Variables left at a default that points at the process's own machine (a database
    on 127.0.0.1, the SMTP relay on localhost…): in a container, nothing is there. Parts
    the settings do not use are skipped (another transport's, a tracing exporter's that
    is off)."""
    given = {name.upper() for name in env}
    return sorted(_loopback(instance, given, prefix.upper()))


def _unused(model: BaseModel, field: str) -> bool:
    transport = getattr(model, "transport", None)
    if transport is not None and field in {"kafka", "sqs"}:
        return bool(field != transport)
    exporter = getattr(model, "exporter", None)
    return exporter is not None and field == "otlp_endpoint" and exporter != "otlp"


def _loopback(model: BaseModel, given: set[str], prefix: str) -> Iterator[str]:
    for field in type(model).model_fields:
        if _unused(model, field):
            continue
        variable = f"{prefix}{field.upper()}"
        value = getattr(model, field)
        if variable in given:
            continue
        if isinstance(value, BaseModel):
            yield from _loopback(value, given, variable + "__")
        elif isinstance(value, str) and any(host in value for host in LOOPBACK):
            yield variable


def messaging_of(instance: BaseModel) -> MessagingSettings:
    """The bus settings a service's settings hold."""
    messaging = getattr(instance, "messaging", None)
    if not isinstance(messaging, MessagingSettings):
        raise TypeError(f"{type(instance).__name__} has no bus settings")
    return messaging


def environment_variable(settings: type[BaseSettings]) -> str:
    """The variable that says where a process of these settings runs (it has no default)."""
    return f"{_prefix(settings)[0]}ENVIRONMENT".upper()


def unnamed_environments(
    env: Mapping[str, object], classes: typing.Iterable[type[BaseSettings]]
) -> list[str]:
    """The environment variables of ``classes`` that ``env`` leaves unset or empty: the
    deployment file must say it, not the image's default nor nothing."""
    return sorted(
        variable for variable in map(environment_variable, classes) if not env.get(variable)
    )
