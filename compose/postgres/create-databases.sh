#!/bin/sh
# Runs once, when the data volume is new (the image's /docker-entrypoint-initdb.d): one
# database per service, owned by that service's own role, as in production. No other role
# reads them: the console and shopctl read each service through its internal API. The
# passwords come from the container's environment (compose.yaml, or the dev overlay's
# Secret postgres-passwords).
set -eu

psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
    -v order_password="$ORDER_DB_PASSWORD" \
    -v payment_password="$PAYMENT_DB_PASSWORD" \
    -v notification_password="$NOTIFICATION_DB_PASSWORD" <<'SQL'
CREATE ROLE shop_order LOGIN PASSWORD :'order_password';
CREATE ROLE shop_payment LOGIN PASSWORD :'payment_password';
CREATE ROLE shop_notification LOGIN PASSWORD :'notification_password';
CREATE DATABASE shop_order OWNER shop_order;
CREATE DATABASE shop_payment OWNER shop_payment;
CREATE DATABASE shop_notification OWNER shop_notification;
SQL

