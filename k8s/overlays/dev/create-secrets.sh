#!/bin/sh
# Makes the Secrets the dev overlay's processes read, with random values, in the cluster
# only: nothing of them is written to disk or committed. Run once per namespace, from the
# repository's root (it hashes the console's password with the workspace's Python):
#
#   ./k8s/overlays/dev/create-secrets.sh [namespace]      # shop-dev by default
#
# It refuses to run again: Postgres made its roles with the first passwords.
set -eu

namespace="${1:-shop-dev}"
kubectl="kubectl --namespace $namespace"

if $kubectl get secret postgres-passwords >/dev/null 2>&1; then
    echo "the Secrets exist in $namespace already (delete them and the postgres volume to start again)" >&2
    exit 1
fi

random() { python3 -c 'import secrets; print(secrets.token_urlsafe(32))'; }

superuser=$(random); order=$(random); payment=$(random); notification=$(random)
order_app=$(random); payment_app=$(random); notification_app=$(random)
console_password=$(random)
console_hash=$(printf '%s\n' "$console_password" | .venv/bin/python -m shop.console hash-password --stdin)

url() { echo "postgresql://$1:$2@postgres:5432/$3"; }

# Each service's owner role (its migrations) and its app role (its APIs and workers: rows
# only), as infra/grant-app-roles.sh makes them.
$kubectl create secret generic postgres-passwords \
    --from-literal=superuser="$superuser" --from-literal=order="$order" \
    --from-literal=payment="$payment" --from-literal=notification="$notification" \
    --from-literal=order-app="$order_app" --from-literal=payment-app="$payment_app" \
    --from-literal=notification-app="$notification_app"
$kubectl create secret generic order-service-secrets \
    --from-literal=database-url="$(url shop_order_app "$order_app" shop_order)" \
    --from-literal=migration-database-url="$(url shop_order "$order" shop_order)" \
    --from-literal=jwt-secret="$(random)"
$kubectl create secret generic payment-service-secrets \
    --from-literal=database-url="$(url shop_payment_app "$payment_app" shop_payment)" \
    --from-literal=migration-database-url="$(url shop_payment "$payment" shop_payment)" \
    --from-literal=webhook-secrets="[\"whsec_$(random)\"]" \
    --from-literal=midtrans-server-key="$(random)" \
    --from-literal=shop-gateway-api-key="$(random)"
$kubectl create secret generic notification-service-secrets \
    --from-literal=database-url="$(url shop_notification_app "$notification_app" shop_notification)" \
    --from-literal=migration-database-url="$(url shop_notification "$notification" shop_notification)"
$kubectl create secret generic operator-token --from-literal=token="$(random)"

# The bus: a login per service (and the console), as Strimzi's User Operator makes them in
# production (a Secret named after the principal, key `password`), and a private CA whose
# certificate the clients check the broker's against (kafka-cluster-ca) and which signed
# the broker's (kafka-tls: its key and certificate in one PEM file). Made in a folder
# removed on exit: the keys never stay on this machine.
$kubectl create secret generic order-service --from-literal=password="$(random)"
$kubectl create secret generic payment-service --from-literal=password="$(random)"
$kubectl create secret generic notification-service --from-literal=password="$(random)"
$kubectl create secret generic console --from-literal=password="$(random)"
tls=$(mktemp -d)
trap 'rm -rf "$tls"' EXIT
broker="kafka.$namespace.svc.cluster.local"
openssl req -x509 -newkey rsa:3072 -nodes -days 825 -subj "/CN=shop-dev kafka CA" \
    -keyout "$tls/ca.key" -out "$tls/ca.crt" 2>/dev/null
openssl req -newkey rsa:3072 -nodes -subj "/CN=$broker" \
    -keyout "$tls/broker.key" -out "$tls/broker.csr" 2>/dev/null
printf 'subjectAltName=DNS:%s,DNS:kafka\n' "$broker" >"$tls/san.ext"
openssl x509 -req -in "$tls/broker.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" \
    -CAcreateserial -days 825 -extfile "$tls/san.ext" -out "$tls/broker.crt" 2>/dev/null
cat "$tls/broker.key" "$tls/broker.crt" >"$tls/keystore.pem"
$kubectl create secret generic kafka-cluster-ca --from-file=ca.crt="$tls/ca.crt"
$kubectl create secret generic kafka-tls --from-file=keystore.pem="$tls/keystore.pem"
$kubectl create secret generic console-secrets \
    --from-literal=admin-password-hash="$console_hash" \
    --from-literal=session-secret="$(random)"

echo "console login: admin / $console_password (shown once)"
