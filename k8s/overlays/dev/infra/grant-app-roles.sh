#!/bin/sh
# Runs once, after create-databases.sh (the image runs /docker-entrypoint-initdb.d's
# scripts in name order), and is what a production database needs too (k8s/README.md):
# beside each service's owner role (shop_<service>), which its migrations run as and which
# owns the schema, a role for its APIs and workers (shop_<service>_app) that may read and
# write rows and change nothing of the schema. Tables the migrations create later are the
# app role's to use as well (ALTER DEFAULT PRIVILEGES on the owner's new tables and
# sequences). No other role may connect. The passwords come from the environment.
set -eu

grant() {
    psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "shop_$1" \
        -v owner="shop_$1" -v app="shop_$1_app" -v password="$2" <<'SQL'
CREATE ROLE :"app" LOGIN PASSWORD :'password';
REVOKE ALL ON DATABASE :"owner" FROM PUBLIC;
GRANT CONNECT ON DATABASE :"owner" TO :"app";
-- The owner owns the schema it migrates: up to PostgreSQL 14 public is the superuser's,
-- and once PUBLIC's CREATE is revoked the owner could create nothing there.
ALTER SCHEMA public OWNER TO :"owner";
-- Only the owner makes objects in the schema (PostgreSQL 15 and later refuse the others
-- already; older ones let anyone create in public).
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO :"app";
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO :"app";
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO :"app";
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO :"app";
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public
    GRANT USAGE, SELECT ON SEQUENCES TO :"app";
SQL
}

grant order "$ORDER_APP_DB_PASSWORD"
grant payment "$PAYMENT_APP_DB_PASSWORD"
grant notification "$NOTIFICATION_APP_DB_PASSWORD"
