"""One live read of the cluster for ``describe`` and ``verify``, and the latest recommendations
beside it.

The read is the collector's own (:class:`streaming.collector.poll.ClusterReader`, the same requests
and the same rack rules); nothing joins a group or commits. The latest recommendation per group
comes from the recommendations table as ``rebalancer recommendations --latest`` reads it (deltalake
for a local table, Spark otherwise).

Lag in seconds needs no history here: :func:`record_times` reads the timestamp of the record at each
lagging partition's committed offset (the oldest unconsumed one) with one consumer outside any group
(assign, seek, one record per partition, bounded time), so ``now - timestamp`` is its exact age, by
the topic's timestamp type (the producer's CreateTime unless the topic says LogAppendTime).
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import time
from collections.abc import Iterable
from typing import Any

from streaming.config import EMBEDDED, Config
from streaming.contracts.tables import RECOMMENDATIONS

log = logging.getLogger(__name__)



def add_read_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap", metavar="HOST:PORT[,...]",
                   help="overrides kafka.bootstrap_servers")
    p.add_argument("--rack-map", action="append", default=[], metavar="CLIENT_OR_HOST=RACK",
                   help="rack of members whose subscription carries none "
                        "(as `rebalancer collect`); repeatable")
    p.add_argument("--client-rack-pattern", default=None, metavar="REGEX",
                   help="regex whose first group, in a client id, is its rack "
                        "(as `rebalancer collect`)")


def live_config(cfg: Config, bootstrap: str | None) -> Config:
    """``cfg`` pointing at the cluster to read: ``--bootstrap``, the configured one, or for
    ``embedded`` the cluster ``rebalancer kafka up`` left running."""
    from streaming.errors import UsageError

    if bootstrap:
        return cfg.with_overrides({"kafka.bootstrap_servers": bootstrap})
    if cfg.kafka.bootstrap_servers != EMBEDDED:
        return cfg
    from streaming.embedded.detached import detached_state

    state = detached_state()
    if not state:
        raise UsageError("no cluster to read: give --bootstrap or kafka.bootstrap_servers, or "
                         "start one with `rebalancer kafka up`")
    return cfg.with_overrides({"kafka.bootstrap_servers": state["bootstrap_servers"]})


def read(cfg: Config, args: argparse.Namespace, group: str | None = None,
         groups: str | None = None):
    """A :class:`~streaming.collector.cluster_snapshot.ClusterSnapshot` of ``group`` (exactly), of
    the groups matching ``groups`` (``re.search``), or of every consumer group but the rebalancer's
    own."""
    from streaming.collector.collector import OWN_GROUPS, admin_factory
    from streaming.collector.member_metadata import DEFAULT_CLIENT_RACK_PATTERN, RackResolver
    from streaming.collector.poll import ClusterReader
    from streaming.errors import UsageError

    pattern = (DEFAULT_CLIENT_RACK_PATTERN if args.client_rack_pattern is None
               else args.client_rack_pattern or None)
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
        return reader.read(selects)
    finally:
        reader.close()


def read_with_rates(
        cfg: Config, args: argparse.Namespace, window_s: float, group: str | None = None,
        groups: str | None = None) -> tuple[Any, dict[str, Any], dict[str, dict[int, float]]]:
    """(snapshot, group -> :class:`streaming.lag.window.Live`, topic -> partition -> produce rate).
    With ``window_s`` > 0 the cluster is read twice, that far apart, and both reads go into a
    :class:`streaming.lag.window.Windows` as two polls, so the rates, seconds to loss and hot
    partitions are the collector's own figures over them; else one read and no rates ({})."""
    from streaming.exporter import observe
    from streaming.lag.window import Windows

    first = read(cfg, args, group, groups)
    if window_s <= 0:
        return first, {}, {}
    windows = Windows(2, cfg.policy.stuck_observations)
    windows.observe_topics(first.ts, first.end)
    for g in first.groups:
        observe(windows, first, g)
    time.sleep(window_s)
    snap = read(cfg, args, group, groups)
    windows.observe_topics(snap.ts, snap.end)
    lives = {g: observe(windows, snap, g) for g in snap.groups}
    return snap, lives, {t: windows.produce_rates(t) for t in snap.topics}


def follower_fetching(cfg: Config, broker_ids: Iterable[int]) -> bool | None:
    """Whether the brokers serve fetches from the reader's rack
    (:func:`assignors.rack_placement.follower_fetching` over each broker's
    ``replica.selector.class``, read with DescribeConfigs); None when it cannot be read (an ACL
    without DescribeConfigs on the cluster, say)."""
    from kafka.admin import ConfigResource, ConfigResourceType

    from assignors.rack_placement import SELECTOR_CONFIG, follower_fetching
    from streaming.collector.collector import admin_factory

    ids = sorted(broker_ids)
    if not ids:
        return None
    admin = admin_factory(cfg)()
    try:
        found = admin.describe_configs(
            [ConfigResource(ConfigResourceType.BROKER, str(i), [SELECTOR_CONFIG]) for i in ids],
            config_filter="all")
        brokers = found.get("broker", {})
        return follower_fetching((brokers[str(i)].get(SELECTOR_CONFIG) or {}).get("value")
                                 for i in ids)
    except Exception as e:  # the verdict says unknown rather than fail the command
        log.warning("could not read %s from the brokers: %s", SELECTOR_CONFIG, e)
        return None
    finally:
        admin.close()


def latest_recommendations(cfg: Config, group: str | None = None, table: str | None = None,
                           engine: str = "auto") -> dict[str, dict[str, Any]]:
    """group -> its latest recommendations row ({} when there is no table yet); ``table``: by that
    catalog name (through Spark), as ``rebalancer recommendations --table`` reads it."""
    from streaming.commands import recommendations
    from streaming.paths import local_path

    name = recommendations.by_name(cfg, table, engine)
    if name is not None:
        rows = recommendations.read_with_spark(cfg, "", group, True, 1 << 30, None, name)
        return {r["group"]: r for r in rows}
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




def read_rounds(wanted: Iterable[tuple[tuple[str, int], int]]) -> list[dict[tuple[str, int], int]]:
    """The (partition, offset) pairs as rounds of one offset per partition (a consumer holds one
    position)."""
    rounds: list[dict[tuple[str, int], int]] = []
    for tp, offset in sorted(set(wanted)):
        free = next((r for r in rounds if tp not in r), None)
        if free is None:
            free = {}
            rounds.append(free)
        free[tp] = offset
    return rounds


def record_times(cfg: Config, wanted: Iterable[tuple[tuple[str, int], int]], timeout_s: float
                 ) -> dict[tuple[tuple[str, int], int], int]:
    """((topic, partition), offset) -> timestamp (ms) of the first record at or after that offset,
    for those read within ``timeout_s`` in all. Partitions wanted at several offsets (groups sharing
    a topic) are read in rounds, one offset each. An offset below the log start (deleted by
    retention) reads the log's first record. Never raises: a failure (no read permission, say) is
    logged and what was read so far returned."""
    rounds = read_rounds(wanted)
    out: dict[tuple[tuple[str, int], int], int] = {}
    if not rounds or timeout_s <= 0:
        return out
    from kafka import KafkaConsumer, TopicPartition

    from streaming.kafka_clients.factories import python_client_options

    deadline = time.monotonic() + timeout_s
    consumer = None
    try:
        consumer = KafkaConsumer(
            client_id="rebalancer-describe", group_id=None, enable_auto_commit=False,
            auto_offset_reset="earliest", max_partition_fetch_bytes=64 * 1024,
            fetch_max_wait_ms=100, request_timeout_ms=max(1000, int(timeout_s * 1000) + 500),
            **python_client_options(cfg, "consumer"))
        for offsets in rounds:
            tps = {TopicPartition(t, p): (t, p) for t, p in offsets}
            consumer.assign(list(tps))
            for tp, key in tps.items():
                consumer.seek(tp, offsets[key])
            done: set[tuple[str, int]] = set()
            while len(done) < len(tps) and (left := deadline - time.monotonic()) > 0:
                for tp, records in consumer.poll(timeout_ms=int(min(left, 1.0) * 1000)).items():
                    key = tps[tp]
                    if records and key not in done:
                        done.add(key)
                        out[(key, offsets[key])] = int(records[0].timestamp)
                        consumer.pause(tp)  # one record is all it takes
    except Exception as e:
        log.warning("reading the records at the committed offsets failed (%s: %s); no lag seconds "
                    "for them", type(e).__name__, e)
    finally:
        if consumer is not None:
            consumer.close()
    return out
