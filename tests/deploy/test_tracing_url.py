"""Where the console and shopctl read an order's spans (``SHOP_OPS_TRACING_URL``, the
tracing backend's Jaeger query API): given to both wherever they run. Neither compose nor
any overlay runs a query backend (the spans go to an OpenTelemetry collector, compose's
only when one is added), so the setting is there and empty: no spans, never an error."""

from __future__ import annotations

from shop.ops.settings import OpsSettings

from .compose_model import ENV_EXAMPLE, environment, read_dotenv, variants
from .manifests import Manifest, container_env, containers, named

VARIABLE = "SHOP_OPS_TRACING_URL"


SECURED_BUS = {
    "transport": "kafka",
    "kafka": {
        "security_protocol": "SASL_SSL",
        "sasl_username": "console",
        "sasl_password": "s" * 32,
    },
}
"""What production asks of the console's bus (beside the point here, and required)."""


def tracing_url(value: str) -> str | None:
    return OpsSettings.model_validate(
        {"environment": "production", "tracing_url": value, "messaging": SECURED_BUS}
    ).tracing_url


def test_the_console_s_pod_is_told_of_no_tracing_backend_and_shows_no_spans(
    objects: list[Manifest],
) -> None:
    [console] = containers(named(objects, "Deployment", "console"), init=False)
    env = container_env(console, objects)
    assert env[VARIABLE] == ""
    assert tracing_url(str(env[VARIABLE])) is None


def test_compose_gives_the_console_and_shopctl_the_tracing_url_of_env() -> None:
    example = read_dotenv(ENV_EXAMPLE)
    for variant in variants():
        for variables, expected in (
            (example, None),
            ({**example, "SHOP_TRACING_URL": "http://jaeger:16686"}, "http://jaeger:16686"),
        ):
            services = variant.model(variables)["services"]
            for name in ("console", "shopctl"):
                given = environment(services[name])[VARIABLE]
                assert tracing_url(given) == expected, (variant.name, name)
