"""``make run`` starts the trace query server over its span folder, and tells shopctl and
the console where it listens: ``SHOP_OPS_TRACING_URL`` in shop.env is the port the process
``traces`` serves on, and the span folder it reads is the one the services write to."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from shop.devstack import procfile
from shop.devstack.stack import Endpoints

pytestmark = pytest.mark.unit

PROCFILE = Path(__file__).parents[4] / "devstack.toml"


class FakePostgres:
    def url(self, database: str | None = None) -> str:
        return f"postgresql://127.0.0.1:5432/{database or 'postgres'}"

    async def ensure_database(self, name: str) -> None:
        pass


def endpoints(workdir: Path) -> Endpoints:
    fake: Any = SimpleNamespace(
        postgres=FakePostgres(),
        kafka=SimpleNamespace(bootstrap_servers="127.0.0.1:9092"),
        aws=SimpleNamespace(
            url="http://127.0.0.1:5000", region="r", access_key_id="k", secret_access_key="s"
        ),
        smtp=SimpleNamespace(host="127.0.0.1", port=2525),
        mail_dir=workdir / "mail",
    )
    return cast(Endpoints, fake)


def test_make_run_serves_its_span_files_where_shop_env_says_the_tracing_backend_is(
    tmp_path: Path,
) -> None:
    placeholders = procfile.Placeholders(endpoints(tmp_path), tmp_path, preferred_ports=False)

    loaded = procfile.load(PROCFILE, placeholders)

    [traces] = [p for p in loaded.processes if p.name == "traces"]
    port = placeholders.ports["traces"]
    assert traces.argv[1:] == [
        "-m",
        "shop.devstack.trace_query",
        "--port",
        str(port),
        str(tmp_path / "traces"),
    ]
    assert (traces.ready_port, traces.ready_path) == (port, "/api/services")
    assert loaded.shop_env["SHOP_OPS_TRACING_URL"] == f"http://127.0.0.1:{port}"
    assert "SHOP_OPS_TRACE_DIR" not in loaded.shop_env
    written_to = {
        value
        for process in loaded.processes
        for name, value in process.env.items()
        if name.endswith("_TRACING__FILE_DIR")
    }
    assert written_to == {str(tmp_path / "traces")}
