"""One live read of the cluster for ``describe`` and ``verify``, and the latest recommendations beside it.

The read is the collector's own (:class:`streaming.collector.poll.ClusterReader`, the same requests and
the same rack rules); nothing joins a group or commits. The latest recommendation per group comes from the
recommendations table as ``rebalancer recommendations --latest`` reads it (deltalake for a local table,
Spark otherwise).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from streaming.config import EMBEDDED, Config

RECOMMENDATIONS = "recommendations"  # = streaming.job.sinks.RECOMMENDATIONS (that module imports pyspark)


def add_read_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap", metavar="HOST:PORT[,...]", help="overrides kafka.bootstrap_servers")
    p.add_argument("--rack-map", action="append", default=[], metavar="CLIENT_OR_HOST=RACK",
                   help="rack of members whose subscription carries none (as `rebalancer collect`); repeatable")
    p.add_argument("--client-rack-pattern", default=None, metavar="REGEX",
                   help="regex whose first group, in a client id, is its rack (as `rebalancer collect`)")


def live_config(cfg: Config, bootstrap: str | None) -> Config:
    """``cfg`` pointing at the cluster to read: ``--bootstrap``, the configured one, or for ``embedded`` the
    cluster ``rebalancer kafka up`` left running."""
    from streaming.errors import UsageError

    if bootstrap:
        return cfg.with_overrides({"kafka.bootstrap_servers": bootstrap})
    if cfg.kafka.bootstrap_servers != EMBEDDED:
        return cfg
    from streaming.kafka_cluster import detached_state

    state = detached_state()
    if not state:
        raise UsageError("no cluster to read: give --bootstrap or kafka.bootstrap_servers, or start one with "
                         "`rebalancer kafka up`")
    return cfg.with_overrides({"kafka.bootstrap_servers": state["bootstrap_servers"]})


def read(cfg: Config, args: argparse.Namespace, group: str | None = None, groups: str | None = None):
    """A :class:`ClusterSnapshot` of ``group`` (exactly), of the groups matching ``groups`` (``re.search``), or
    of every consumer group but the rebalancer's own."""
    from streaming.collector.collector import OWN_GROUPS, admin_factory
    from streaming.collector.member_metadata import DEFAULT_CLIENT_RACK_PATTERN, RackResolver
    from streaming.collector.poll import ClusterReader
    from streaming.errors import UsageError

    pattern = DEFAULT_CLIENT_RACK_PATTERN if args.client_rack_pattern is None else (args.client_rack_pattern or None)
    try:
        racks = RackResolver.parse(tuple(args.rack_map), pattern)
        rx = re.compile(groups) if groups else None
    except Exception as e:  # ValueError, re.error
        raise UsageError(str(e)) from None

    def selects(g: str) -> bool:
        if group is not None:
            return g == group
        return bool(rx.search(g)) if rx else not re.search(OWN_GROUPS, g)

    reader = ClusterReader(admin_factory(cfg), racks)
    try:
        return reader.read(selects, lambda g: False)
    finally:
        reader.close()


def latest_recommendations(cfg: Config, group: str | None = None) -> dict[str, dict[str, Any]]:
    """group -> its latest recommendations row ({} when there is no table yet)."""
    from streaming.commands import recommendations
    from streaming.paths import local_path

    path = cfg.table_path(RECOMMENDATIONS)
    local = local_path(path)
    if local is not None:
        if not (local / "_delta_log").is_dir():
            return {}
        rows = recommendations.read_local(local, group, latest=True, limit=1 << 30)
    else:
        print(f"reading recommendations from {path} through Spark", file=sys.stderr, flush=True)
        rows = recommendations.read_with_spark(cfg, path, group, True, 1 << 30, None)
    return {r["group"]: r for r in rows}


