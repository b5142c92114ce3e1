#!/bin/sh
# Runs once, when the data volume is new (the image's /docker-entrypoint-initdb.d): one
# database per service, owned by that service's own role, as in production, and a
# read-only role for the console and shopctl, which read each service's tables as that
# service's operator would. The passwords come from the container's environment
# (compose.yaml, or the dev overlay's Secret postgres-passwords).
set -eu

psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
    -v order_password="$ORDER_DB_PASSWORD" \
    -v payment_password="$PAYMENT_DB_PASSWORD" \
    -v notification_password="$NOTIFICATION_DB_PASSWORD" \
    -v ops_password="$OPS_DB_PASSWORD" <<'SQL'
CREATE ROLE shop_order LOGIN PASSWORD :'order_password';
CREATE ROLE shop_payment LOGIN PASSWORD :'payment_password';
CREATE ROLE shop_notification LOGIN PASSWORD :'notification_password';
CREATE ROLE shop_ops LOGIN PASSWORD :'ops_password';
CREATE DATABASE shop_order OWNER shop_order;
CREATE DATABASE shop_payment OWNER shop_payment;
CREATE DATABASE shop_notification OWNER shop_notification;
SQL

# The tables do not exist yet (each service's migrations make them): what its role will
# create is readable by shop_ops from the start.
for service in order payment notification; do
    psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "shop_$service" <<SQL
ALTER DEFAULT PRIVILEGES FOR ROLE shop_$service IN SCHEMA public
    GRANT SELECT ON TABLES TO shop_ops;
SQL
done
