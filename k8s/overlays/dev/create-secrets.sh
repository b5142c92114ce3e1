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
console_password=$(random)
console_hash=$(printf '%s\n' "$console_password" | .venv/bin/python -m shop.console hash-password --stdin)

url() { echo "postgresql://$1:$2@postgres:5432/$3"; }

$kubectl create secret generic postgres-passwords \
    --from-literal=superuser="$superuser" --from-literal=order="$order" \
    --from-literal=payment="$payment" --from-literal=notification="$notification"
$kubectl create secret generic order-service-secrets \
    --from-literal=database-url="$(url shop_order "$order" shop_order)" \
    --from-literal=jwt-secret="$(random)"
$kubectl create secret generic payment-service-secrets \
    --from-literal=database-url="$(url shop_payment "$payment" shop_payment)" \
    --from-literal=webhook-secrets="[\"whsec_$(random)\"]" \
    --from-literal=midtrans-server-key="$(random)" \
    --from-literal=shop-gateway-api-key="$(random)"
$kubectl create secret generic notification-service-secrets \
    --from-literal=database-url="$(url shop_notification "$notification" shop_notification)"
$kubectl create secret generic operator-token --from-literal=token="$(random)"
$kubectl create secret generic console-secrets \
    --from-literal=admin-password-hash="$console_hash" \
    --from-literal=session-secret="$(random)"

echo "console login: admin / $console_password (shown once)"
