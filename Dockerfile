# syntax=docker/dockerfile:1

# One image for every process of the shop. Its APIs, workers, migrations and console are
# this image run with another command: compose/ and k8s/ set each command themselves, and
# the stages at the end name each process kind's command and port, for a platform that
# runs an image's default command (docker build --target order-worker …).

ARG PYTHON_IMAGE=python:3.11-slim-trixie

# -- build: the locked workspace, without its dev dependencies, in /app/.venv -------------
FROM ${PYTHON_IMAGE} AS build

# The uv the Makefile pins, from the package registry as the Makefile installs it.
RUN pip install --no-cache-dir "uv==0.13.9"

# Bytecode compiled now: the running containers' root filesystem is read-only.
ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/app/.venv

WORKDIR /src

# The third-party dependencies first, from the lock file alone: a layer that a change of
# the shop's own code leaves as it is. (--frozen: the members' pyproject files are not
# here yet, and the second step checks the lock against them.)
RUN --mount=type=cache,target=/root/.cache/uv \
    --mount=type=bind,source=uv.lock,target=uv.lock \
    --mount=type=bind,source=pyproject.toml,target=pyproject.toml \
    uv sync --frozen --no-dev --no-install-workspace

# Then the shop's own packages, installed as wheels (not editable): the runtime stage
# takes the environment without the source tree.
COPY . .
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --locked --no-dev --no-editable

# -- runtime: the environment and a user of its own, nothing else -------------------------
FROM ${PYTHON_IMAGE} AS runtime

LABEL org.opencontainers.image.title="skincare-shop" \
      org.opencontainers.image.description="The skincare shop's backend: every API, worker and migration"

# By number, so that Kubernetes' runAsNonRoot can check it without reading /etc/passwd.
RUN groupadd --system --gid 10001 shop \
    && useradd --system --uid 10001 --gid shop --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin shop

# Owned by root and read-only to the shop's user: the code cannot be changed from inside.
COPY --from=build /app/.venv /app/.venv

# HOME on /tmp, the only writable place (a tmpfs in compose, an emptyDir in Kubernetes).
ENV PATH=/app/.venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp

# The settings have no default environment: a process must be told where it runs. The
# image says production, so that a container started bare refuses every development secret
# and weak key; compose and the manifests say it themselves (make run: development).
ENV SHOP_ORDER_ENVIRONMENT=production \
    SHOP_PAYMENT_ENVIRONMENT=production \
    SHOP_NOTIFICATION_ENVIRONMENT=production \
    SHOP_CONSOLE_ENVIRONMENT=production \
    SHOP_OPS_ENVIRONMENT=production

WORKDIR /app
USER 10001:10001
CMD ["shopctl", "--help"]

# -- one stage per process kind: the same layers, each with its own default command -------

FROM runtime AS order-api
EXPOSE 8001
CMD ["python", "-m", "shop.order.api"]

FROM runtime AS order-worker
CMD ["python", "-m", "shop.order.worker"]

FROM runtime AS order-migrate
CMD ["python", "-m", "shop.order", "migrate"]

# The development catalogue (compose and the dev overlay only).
FROM runtime AS order-seed
CMD ["python", "-m", "shop.order", "seed"]

FROM runtime AS payment-api
EXPOSE 8002
CMD ["python", "-m", "shop.payment.api"]

FROM runtime AS payment-worker
CMD ["python", "-m", "shop.payment.worker"]

FROM runtime AS payment-migrate
CMD ["python", "-m", "shop.payment", "migrate"]

FROM runtime AS notification-worker
CMD ["python", "-m", "shop.notification.worker"]

FROM runtime AS notification-migrate
CMD ["python", "-m", "shop.notification", "migrate"]

FROM runtime AS console
EXPOSE 8003
CMD ["python", "-m", "shop.console.api"]

# The default target: the image compose and k8s run, each process with its command.
FROM runtime AS shop
