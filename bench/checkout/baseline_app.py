"""The baselines of ``bench_checkout.py``: ``POST /v1/orders`` as a bare FastAPI endpoint on a
raw asyncpg pool, no ORM, no models: how fast could this checkout be?

``POST /v1/orders`` does the same work as order-service's checkout, against the same schema
(the service's own migrations), in one transaction and with the same statements, so the same
round trips (BEGIN, six statements, COMMIT): verify the bearer JWT (HS256, pyjwt), claim the
idempotency key, read the products (no lock) and check their stock, write the order with its
items, write the ``order.created`` outbox row (the same envelope JSON and headers) with its
``pg_notify``, store the answer with the key, and last take the stock in the service's
statement, which locks the products until the commit; a price changed meanwhile starts the
transaction again, as in the service. It answers 201 with the same JSON body and
``Location`` header.

``POST /stock-first/v1/orders`` is the naive checkout, the second baseline: the same work,
but the products locked first (``SELECT … FOR UPDATE``) and their stock taken at once, so
that on one product every checkout waits for the whole transaction of the one before.

Configured by ``BASELINE_DATABASE_URL``, ``BASELINE_JWT_SECRET`` and ``BASELINE_POOL_SIZE``;
served by uvicorn: ``python -m uvicorn --app-dir bench/checkout baseline_app:app``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import asyncpg
import jwt
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

DATABASE_URL = os.environ.get("BASELINE_DATABASE_URL", "postgresql://postgres@127.0.0.1/order")
JWT_SECRET = os.environ.get("BASELINE_JWT_SECRET", "development-only-secret-do-not-deploy")
POOL_SIZE = int(os.environ.get("BASELINE_POOL_SIZE", "32"))

SKU = re.compile(r"^[A-Z0-9][A-Z0-9-]*$")
KEY = re.compile(r"^[\x21-\x7e]+$")
MAX_LINES, MAX_QUANTITY = 50, 100
ALPHABET = "23456789ABCDEFGHJKMNPQRSTVWXYZ"
ATTEMPTS = 3
"""Order numbers are random, and a price may change while the order is written: then the
transaction starts again, as the service's does."""
OUTBOX_CHANNEL = "shop_outbox"

CLAIM = """
INSERT INTO idempotency_keys (customer_id, key, request_hash) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING RETURNING key"""
STORED = """
SELECT request_hash, response_status, response_body FROM idempotency_keys
WHERE customer_id = $1 AND key = $2"""
READ = """
SELECT sku, name, price, stock FROM products WHERE sku = ANY($1::varchar[]) AND active"""
# The service's statement (shop.order.adapters.checkout): locked in sku order, each line
# taken only if that much is left; the rows as locked, before the taking.
TAKE_LAST = """
WITH locked AS MATERIALIZED (
    SELECT sku, name, price, stock FROM products WHERE sku = ANY($1::varchar[]) AND active
    ORDER BY sku FOR NO KEY UPDATE),
taken AS (
    UPDATE products SET stock = products.stock - wanted.quantity
    FROM locked, unnest($1::varchar[], $2::int[]) AS wanted (sku, quantity)
    WHERE products.sku = locked.sku AND wanted.sku = locked.sku
      AND products.stock >= wanted.quantity)
SELECT sku, name, price, stock FROM locked"""
# The naive checkout's: lock first, take at once.
LOCK_FIRST = """
SELECT sku, name, price, stock FROM products WHERE sku = ANY($1::varchar[]) AND active
ORDER BY sku FOR UPDATE"""
TAKE_FIRST = """
UPDATE products SET stock = products.stock - wanted.quantity
FROM unnest($1::varchar[], $2::int[]) AS wanted (sku, quantity) WHERE products.sku = wanted.sku"""
ORDER = """
WITH placed AS (
    INSERT INTO orders (id, number, customer_id, customer_email, status, total, currency,
                        created_at, updated_at)
    VALUES ($1, $2, $3, $4, 'pending', $5, 'IDR', $6, $6))
INSERT INTO order_items (order_id, line_no, sku, name, quantity, unit_price)
SELECT $1, * FROM unnest($7::smallint[], $8::varchar[], $9::varchar[], $10::int[], $11::bigint[])"""
# The event alone: the service schedules nothing (the payment window is payment-service's).
OUTBOX = f"""
WITH added AS (
    INSERT INTO outbox (event_id, key, message_type, headers, body, due_at)
    VALUES ($1, $2, 'order.created', $3::jsonb, $4, NULL))
SELECT pg_notify('{OUTBOX_CHANNEL}', '')"""
ANSWER = """
UPDATE idempotency_keys SET order_id = $3, response_status = 201, response_body = $4
WHERE customer_id = $1 AND key = $2"""

Catalogue = dict[str, asyncpg.Record]


class Changed(Exception):
    """A product's name or price changed while the order was written with the old ones."""


class Refused(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    app.state.pool = await asyncpg.create_pool(DATABASE_URL, min_size=POOL_SIZE, max_size=POOL_SIZE)
    try:
        yield
    finally:
        await app.state.pool.close()


app = FastAPI(lifespan=lifespan)


def problem(status: int, detail: str) -> Response:
    return JSONResponse(
        {"type": "about:blank", "status": status, "detail": detail},
        status_code=status,
        media_type="application/problem+json",
    )


def customer_of(authorization: str | None) -> tuple[str, str]:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise Refused(401, "an Authorization: Bearer <token> header is required")
    try:
        claims = jwt.decode(
            token, JWT_SECRET, algorithms=["HS256"], options={"require": ["sub", "exp"]}
        )
    except jwt.InvalidTokenError as error:
        raise Refused(401, f"invalid token: {error}") from error
    subject, email = claims.get("sub"), claims.get("email")
    if not isinstance(subject, str) or not subject or len(subject) > 200:
        raise Refused(401, "the token's sub claim must name the customer")
    if not isinstance(email, str) or email.count("@") != 1 or len(email) > 320:
        raise Refused(401, "the token's email claim must be an email address")
    return subject, email


def lines_of(raw: bytes) -> list[tuple[str, int]]:
    try:
        body = json.loads(raw)
    except ValueError as error:
        raise Refused(422, "the body is not JSON") from error
    items = body.get("items") if isinstance(body, dict) and len(body) == 1 else None
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_LINES:
        raise Refused(422, f"items: 1 to {MAX_LINES} lines")
    lines: dict[str, int] = {}
    for item in items:
        if not isinstance(item, dict) or item.keys() != {"sku", "quantity"}:
            raise Refused(422, "a line is {sku, quantity}")
        sku, quantity = item["sku"], item["quantity"]
        if not isinstance(sku, str) or not 1 <= len(sku) <= 64 or not SKU.match(sku):
            raise Refused(422, "sku: not a sku")
        if type(quantity) is not int or not 1 <= quantity <= MAX_QUANTITY:
            raise Refused(422, f"quantity: 1 to {MAX_QUANTITY}")
        if sku in lines:
            raise Refused(422, f"{sku} appears on two lines")
        lines[sku] = quantity
    return list(lines.items())


def fingerprint(lines: list[tuple[str, int]]) -> str:
    """The same canonical JSON the service hashes."""
    items = [{"quantity": quantity, "sku": sku} for sku, quantity in lines]
    return hashlib.sha256(json.dumps({"items": items}, sort_keys=True).encode()).hexdigest()


def timestamp(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def order_number() -> str:
    symbols = "".join(secrets.choice(ALPHABET) for _ in range(8))
    return f"SK-{symbols[:4]}-{symbols[4:]}"


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def refuse_short(wanted: dict[str, int], catalogue: Catalogue) -> None:
    unknown = [sku for sku in sorted(wanted) if sku not in catalogue]
    if unknown:
        raise Refused(422, f"unknown products: {', '.join(unknown)}")
    for sku in sorted(wanted):
        if catalogue[sku]["stock"] < wanted[sku]:
            raise Refused(409, f"not enough {sku}")


def changed(read: asyncpg.Record, locked: asyncpg.Record) -> bool:
    return (read["name"], read["price"]) != (locked["name"], locked["price"])


async def replay(
    connection: asyncpg.Connection, customer_id: str, key: str, request_hash: str
) -> tuple[int, str, str, bool] | None:
    """None when the key is claimed now; the stored answer when it was before."""
    if await connection.fetchval(CLAIM, customer_id, key, request_hash) is not None:
        return None
    stored = await connection.fetchrow(STORED, customer_id, key)
    if stored["request_hash"] != request_hash:
        raise Refused(422, "this Idempotency-Key was used with a different request body")
    body = stored["response_body"]
    return stored["response_status"], body, json.loads(body)["id"], True


async def write_order(
    connection: asyncpg.Connection,
    customer: tuple[str, str],
    lines: list[tuple[str, int]],
    catalogue: Catalogue,
    key: str,
) -> tuple[int, str, str, bool]:
    """The order, its event and the answer stored with the key: three statements."""
    customer_id, email = customer
    order_id, number, placed_at = uuid.uuid4(), order_number(), datetime.now(UTC)
    order_key = str(order_id)
    items = [
        {
            "sku": sku,
            "name": catalogue[sku]["name"],
            "quantity": quantity,
            "unit_price": catalogue[sku]["price"],
        }
        for sku, quantity in lines
    ]
    total = sum(item["quantity"] * item["unit_price"] for item in items)
    await connection.execute(
        ORDER,
        order_id,
        number,
        customer_id,
        email,
        total,
        placed_at,
        list(range(1, len(items) + 1)),
        [item["sku"] for item in items],
        [item["name"] for item in items],
        [item["quantity"] for item in items],
        [item["unit_price"] for item in items],
    )

    event_id = str(uuid.uuid4())
    created = timestamp(placed_at)
    envelope = {
        "event_id": event_id,
        "type": "order.created",
        "version": 1,
        "occurred_at": timestamp(datetime.now(UTC)),
        "key": order_key,
        "correlation_id": event_id,
        "causation_id": None,
        "traceparent": None,
        "payload": {
            "order_id": order_key,
            "order_number": number,
            "customer_id": customer_id,
            "customer_email": email,
            "lines": items,
            "total": total,
            "currency": "IDR",
            "placed_at": created,
        },
    }
    headers = {
        "x-message-type": "order.created",
        "x-event-id": event_id,
        "x-correlation-id": event_id,
    }
    await connection.execute(
        OUTBOX, uuid.UUID(event_id), order_key, compact(headers), compact(envelope).encode()
    )

    answer = compact(
        {
            "id": order_key,
            "number": number,
            "status": "pending",
            "lines": [
                {**item, "line_total": item["quantity"] * item["unit_price"]} for item in items
            ],
            "total": total,
            "currency": "IDR",
            "created_at": created,
        }
    )
    await connection.execute(ANSWER, customer_id, key, order_id, answer)
    return 201, answer, order_key, False


async def checkout(
    connection: asyncpg.Connection,
    customer: tuple[str, str],
    lines: list[tuple[str, int]],
    key: str,
    request_hash: str,
) -> tuple[int, str, str, bool]:
    """The service's transaction: the answer's status, JSON body, order id, and whether
    replayed."""
    if (replayed := await replay(connection, customer[0], key, request_hash)) is not None:
        return replayed
    wanted = dict(lines)
    skus = sorted(wanted)
    read = {row["sku"]: row for row in await connection.fetch(READ, skus)}
    refuse_short(wanted, read)
    answer = await write_order(connection, customer, lines, read, key)
    locked = {
        row["sku"]: row
        for row in await connection.fetch(TAKE_LAST, skus, [wanted[sku] for sku in skus])
    }
    refuse_short(wanted, locked)
    if any(changed(read[sku], locked[sku]) for sku in skus):
        raise Changed
    return answer


async def stock_first_checkout(
    connection: asyncpg.Connection,
    customer: tuple[str, str],
    lines: list[tuple[str, int]],
    key: str,
    request_hash: str,
) -> tuple[int, str, str, bool]:
    """The naive transaction: the products locked and their stock taken first."""
    if (replayed := await replay(connection, customer[0], key, request_hash)) is not None:
        return replayed
    wanted = dict(lines)
    skus = sorted(wanted)
    locked = {row["sku"]: row for row in await connection.fetch(LOCK_FIRST, skus)}
    refuse_short(wanted, locked)
    await connection.execute(TAKE_FIRST, skus, [wanted[sku] for sku in skus])
    return await write_order(connection, customer, lines, locked, key)


Transaction = Callable[
    [asyncpg.Connection, tuple[str, str], list[tuple[str, int]], str, str],
    Awaitable[tuple[int, str, str, bool]],
]


async def serve(request: Request, transaction: Transaction) -> Response:
    try:
        customer = customer_of(request.headers.get("authorization"))
        content_type = request.headers.get("content-type", "")
        if content_type.split(";")[0].strip().lower() != "application/json":
            raise Refused(415, "send the body as application/json")
        key = request.headers.get("idempotency-key")
        if not key or len(key) > 200 or not KEY.match(key):
            raise Refused(400, "an Idempotency-Key header is required")
        lines = lines_of(await request.body())
        request_hash = fingerprint(lines)
        pool: asyncpg.Pool = request.app.state.pool
        async with pool.acquire() as connection:
            for attempt in range(1, ATTEMPTS + 1):
                try:
                    async with connection.transaction():
                        status, answer, order_id, replayed = await transaction(
                            connection, customer, lines, key, request_hash
                        )
                    break
                except Changed:
                    if attempt == ATTEMPTS:
                        raise
                except asyncpg.UniqueViolationError as error:  # order numbers are random
                    if error.constraint_name != "uq_orders_number" or attempt == ATTEMPTS:
                        raise
    except Refused as refused:
        return problem(refused.status, refused.detail)
    headers = {"Location": f"/v1/orders/{order_id}"}
    if replayed:
        headers["Idempotent-Replayed"] = "true"
    return Response(answer, status_code=status, headers=headers, media_type="application/json")


@app.post("/v1/orders")
async def place_order(request: Request) -> Response:
    return await serve(request, checkout)


@app.post("/stock-first/v1/orders")
async def place_order_stock_first(request: Request) -> Response:
    return await serve(request, stock_first_checkout)
