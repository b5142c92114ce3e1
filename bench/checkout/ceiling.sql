-- The checkout's transaction as order-service runs it (adapters/checkout.py), statement for
-- statement, for pgbench: the database's own ceiling for it. One line an order, of the
-- product drawn from :products; an OrderCreated-sized outbox row; the answer stored with the key.
\set customer random(1, 64)
\set product random(1, :products)
\set quantity random(1, 3)
BEGIN;
INSERT INTO idempotency_keys (customer_id, key, request_hash)
VALUES ('cust_ceiling_' || :customer::text, gen_random_uuid()::text, 'hash')
ON CONFLICT DO NOTHING RETURNING key AS claimed \gset
SELECT sku, name, price, stock FROM products
WHERE sku = ANY(ARRAY['CEILING-' || lpad(:product::text, 4, '0')]::varchar[]) AND active \gset read_
WITH placed AS (
    INSERT INTO orders (id, number, customer_id, customer_email, status, total, currency,
                        created_at, updated_at)
    VALUES (gen_random_uuid(), 'SHOP-' || substr(md5(random()::text), 1, 10),
            'cust_ceiling_' || :customer::text, 'ceiling@example.com', 'pending', :read_price::bigint * :quantity::int,
            'IDR', now(), now())
    RETURNING id)
INSERT INTO order_items (order_id, line_no, sku, name, quantity, unit_price)
SELECT placed.id, 1, :read_sku::varchar, :read_name::varchar, :quantity::int, :read_price::bigint FROM placed
RETURNING order_id \gset
WITH added AS (
    INSERT INTO outbox (event_id, key, message_type, headers, body, due_at)
    VALUES (gen_random_uuid(), :order_id::text, 'order.created',
            '{"message_type": "order.created", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}'::jsonb,
            convert_to(repeat('x', 900), 'UTF8'), NULL))
SELECT pg_notify('shop_outbox', '');
UPDATE idempotency_keys SET order_id = :order_id::uuid, response_status = 201,
    response_body = repeat('y', 600)
WHERE customer_id = 'cust_ceiling_' || :customer::text AND key = :claimed::text;
WITH locked AS MATERIALIZED (
    SELECT sku, name, price, stock FROM products WHERE sku = ANY(ARRAY[:read_sku::varchar]) AND active
    ORDER BY sku FOR NO KEY UPDATE),
taken AS (
    UPDATE products SET stock = products.stock - wanted.quantity
    FROM locked, unnest(ARRAY[:read_sku::varchar], ARRAY[:quantity::int]) AS wanted (sku, quantity)
    WHERE products.sku = locked.sku AND wanted.sku = locked.sku
      AND products.stock >= wanted.quantity)
SELECT sku, name, price, stock FROM locked;
COMMIT;
