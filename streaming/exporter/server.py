"""The exporters' HTTP server: ``/metrics`` of a registry, and JSON routes beside it (the
collector's ``/consumers``), in a daemon thread."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import start_http_server

log = logging.getLogger(__name__)


Route = Callable[[Mapping[str, list[str]]], tuple[int, Any]]
"""A JSON route: the query's parameters in, (HTTP status, body) out."""


class Server:
    """``/metrics`` of a registry over HTTP, in a daemon thread; ``routes``: paths answered with
    JSON instead."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int,
                 routes: Mapping[str, Route] | None = None) -> None:
        self._httpd, self._thread = start_http_server(port, addr=host, registry=registry)
        if routes:
            self._httpd.set_app(_routed(self._httpd.get_app(), dict(routes)))
        self.host = host
        self.port = int(self._httpd.server_port)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _routed(metrics_app: Any, routes: dict[str, Route]) -> Any:
    """A WSGI app answering ``routes`` with JSON and everything else with ``metrics_app``."""
    import json
    from urllib.parse import parse_qs

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        route = routes.get(environ.get("PATH_INFO") or "")
        if route is None:
            return metrics_app(environ, start_response)
        try:
            status, body = route(parse_qs(environ.get("QUERY_STRING") or ""))
        except Exception:  # a route must never take the server down
            log.warning("route %s failed", environ.get("PATH_INFO"), exc_info=True)
            status, body = 500, {"error": "internal error"}
        data = json.dumps(body).encode()
        start_response(f"{status} {HTTPStatus(status).phrase}",
                       [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]

    return app
