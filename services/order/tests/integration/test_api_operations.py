"""The HTTP API on a real database: health, readiness and metrics answer as documented,
and a path or method nobody serves is a problem document."""

from __future__ import annotations

import uuid

import httpx

from .api_helpers import assert_problem, place


async def test_health_and_readiness_answer_200_when_the_database_does(
    client: httpx.AsyncClient,
) -> None:
    assert (await client.get("/healthz")).status_code == 200
    ready = await client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "database": "ok"}


async def test_metrics_count_requests_by_route_template_not_by_raw_path(
    client: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    order = await place(client, auth, ("CLEANSER-GEL-150", 1))
    for _ in range(2):
        assert (await client.get(f"/v1/orders/{order['id']}", headers=auth)).status_code == 200
    await client.get(f"/v1/orders/{uuid.uuid4()}", headers=auth)

    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert 'http_requests_total{method="GET",route="/v1/orders/{order_id}",status="200"} 2.0' in (
        text
    )
    assert 'http_requests_total{method="GET",route="/v1/orders/{order_id}",status="404"} 1.0' in (
        text
    )
    assert 'http_requests_total{method="POST",route="/v1/orders",status="201"} 1.0' in text
    assert order["id"] not in text
    assert 'http_request_duration_seconds_count{method="GET",route="/v1/orders/{order_id}"}' in (
        text
    )


async def test_a_path_nobody_serves_is_a_404_problem(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/nothing-here")
    assert_problem(response, 404, "Not Found")


async def test_a_method_a_route_does_not_take_is_405_with_allow(
    client: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    response = await client.delete("/v1/orders", headers=auth)
    assert_problem(response, 405, "Method Not Allowed")
    allowed = set(response.headers["allow"].replace(" ", "").split(","))
    assert {"GET", "POST"} <= allowed
    assert "DELETE" not in allowed
