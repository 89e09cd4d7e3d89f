"""Consumers of different capacity, live (#28 item 2, #46): the benchmark's ``hetero`` workload (12
partitions x 20/s against consumers that process 60, 90 and 180 records/s) on the shared cluster,
the job in ``auto``.

Kafka's assignors give every consumer 4 partitions, 80/s, which the 60/s consumer cannot keep up
with. In ``make test`` the consumers report their own load (:class:`streaming.apply.load.LoadMeter`
on the member-load topic, read by the collector into the members events): the job knows each
member's capacity at once and the ``utilisation`` trigger fires. In the long tier (``pytest
--long``) they do not, and the job measures each capacity from what the member consumed while it had
a backlog (:mod:`streaming.lag.capacity`), which takes a minute or more. Either way the
recommendation balances time (load / capacity) rather than records: the slow member must end with
proportionally less, its 20/s partitions within its 60/s and below the capacity the job holds for it
(so its backlog drains), and the recommendation must carry that capacity (the load model on the
feed), near the true one. The run ends as soon as the group holds the recommendation, so a slower
machine takes longer rather than failing.
"""

from __future__ import annotations

import contextlib
import itertools
import time
import uuid
from typing import Any

import pytest

from benchmarks.loop.group import BenchGroup
from benchmarks.loop.run import COLLECTOR_INTERVAL_S, PublishingCollector
from benchmarks.loop.workloads import suite
from streaming.apply.feed import RecommendationFeed
from streaming.dev.demo.loop import loop_config, stop_query
from streaming.job import query as job_query
from streaming.lag.reported import reported_capacity

from .java_client import wait_for

pytestmark = pytest.mark.integration

SLOW = 0
"""the consumer index the workload gives 60/s (1 : 1.5 : 3)"""


TARGET = 0.8
"""1 - policy.capacity_headroom (0.2)."""


def seeing(sink: Any, reported: dict[str, list[float]]) -> Any:
    """``sink``, noting each member's capacity as its load reports in the members events give it
    (client id -> records/s over busy, records/s, and one over a record's cost where there is
    one)."""
    def sink_and_see(batch: Any) -> Any:
        for e in batch:
            for m in e.get("members") or () if e.get("type") == "members" else ():
                if m.get("load"):
                    load = m["load"]
                    x = reported_capacity(load["busy"], load["records_per_s"])
                    cost = load.get("record_cost_s")
                    for y in (x, load["records_per_s"] or None, cost and 1 / cost):
                        if y is not None:
                            reported.setdefault(m["client_id"], []).append(y)
        return sink(batch)
    return sink_and_see


def least_max_utilisation(caps: list[float], partitions: int, rate: float) -> float:
    """The least max utilisation any assignment of alike partitions reaches over ``caps``."""
    return min(max(c * rate / cap for c, cap in zip(counts, caps, strict=True))
               for counts in itertools.product(range(partitions + 1), repeat=len(caps))
               if sum(counts) == partitions)


def owned(g: BenchGroup) -> dict[int, set[tuple[str, int]]]:
    """consumer index -> the partitions it holds now."""
    with g._lock:
        return {i: set(w.assigned) for i, w in g.workers.items()}


@pytest.mark.parametrize("reports", [pytest.param(True, id="reported"),
                                     pytest.param(False, id="lag-alone", marks=pytest.mark.long)])
def test_the_slow_member_ends_with_proportionally_less(cfg, spark, kafka_cluster, tmp_path,
                                                       reports):
    w = suite()["hetero"]
    caps = {i: w.capacity_of(i) for i in range(w.consumers)}
    assert caps[SLOW] == min(caps.values()) and len(set(caps.values())) == w.consumers
    lcfg = loop_config(cfg, str(tmp_path / "tables"), str(tmp_path / "checkpoints"), cooldown_s=30,
                       trigger_interval="2 seconds", min_total_lag=200)
    feed = RecommendationFeed(lcfg.kafka).start()
    g = BenchGroup(lcfg, w, "rebalancer", f"capacity-{uuid.uuid4().hex[:6]}", feed, reports)
    recs: list[dict[str, Any]] = []
    reported: dict[str, list[float]] = {}
    feed.add_listener(lambda r: recs.append(r) if r["group"] == g.group else None)
    query, printer, collector = None, None, None
    try:
        query, printer = job_query.start(spark, lcfg, checkpoint=lcfg.checkpoint_path("capacity"))
        printer.out = lambda _text: None
        assert feed.wait_ready(60)
        g.create_topics([n.node_id for n in kafka_cluster.nodes])
        g.start_consumers()
        wait_for(g.assigned, 120, 0.2, "every partition on a running member")
        # before any recommendation: the fallback balances records, as Kafka's assignors do (4 each)
        assert sorted(len(tps) for tps in owned(g).values()) == [4, 4, 4], owned(g)

        t0 = time.monotonic()
        g.monitor.t0 = t0
        g.start_producers()
        collector = PublishingCollector(lcfg, [g.monitor], COLLECTOR_INTERVAL_S, [g.group])
        collector.collector.sink = seeing(collector.collector.sink, reported)
        collector.start()

        def applied() -> dict[str, Any] | None:
            """The first recommendation the group applied that was decided on measured capacities
            (one made earlier, e.g. when a member briefly dropped out under load, counts the members
            alike)."""
            versions = {d.version for d in g.decisions if d.applied}
            return next((r for r in list(recs) if r["version"] in versions
                         and (r.get("load_model") or {}).get("members")), None)

        rec = wait_for(applied, 240, 0.2,
                       "a recommendation decided on measured capacities, applied")
        assert query.exception() is None
        at_s = time.monotonic() - t0
        wanted = {g.index_of[e["client_id"]]: {(t, p) for t, p in e["partitions"]}
                  for e in rec["assignment"]}
        wait_for(lambda: owned(g) == wanted, 60, 0.2, "the group on the recommended assignment")
        assert not g.failures(), g.failures()
    finally:
        with contextlib.ExitStack() as cleanup:
            cleanup.callback(feed.stop)
            cleanup.callback(g.stop)
            if collector is not None:
                cleanup.callback(collector.stop)
            if query is not None:
                cleanup.callback(spark.streams.removeListener, printer)
                cleanup.callback(stop_query, query)

    counts = {i: len(tps) for i, tps in wanted.items()}
    rate = {i: sum(w.topics[0].rates[p] for _, p in tps) for i, tps in wanted.items()}
    measured = {g.index_of[m["client_id"]]: m["records_per_s"]
                for m in rec["load_model"]["members"]}
    decided_on = [r for topic in rec["load_model"]["topics"] for r in topic["rate"]]
    print(f"recommendation v{rec['version']} ({rec['triggers']}) applied at {at_s:.0f}s: "
          f"partitions {counts}, records/s {rate}, capacities measured {measured}, true {caps}; "
          f"decided on produce rates {decided_on}, lags {rec['load_model']['topics'][0]['lag']}, "
          f"stuck {rec['stuck_partitions']}, horizon {rec['load_model']['horizon_s']} s")
    # the slow member ends with fewer partitions than an equal split, no more than any faster one,
    # and within its capacity. "No more", not "fewer": the plan follows the capacities the job
    # measured, and on a loaded machine the 90/s member is slower too (one run measured 66, 69 and
    # 104/s for 60, 90 and 180, where 3, 3 and 6 partitions is the least max utilisation)
    assert counts[SLOW] < len(w.topics[0].rates) / w.consumers, counts
    assert all(counts[SLOW] <= counts[i] for i in counts), counts
    assert rate[SLOW] <= caps[SLOW], (rate, caps)
    # the decision was made on the capacity the job measured for it: the lowest, near the true 60/s
    assert set(measured) == set(caps), measured
    assert min(measured, key=measured.__getitem__) == SLOW, measured
    assert 0.75 * caps[SLOW] <= measured[SLOW] <= 1.25 * caps[SLOW], (measured, caps)
    # reported: each capacity rests on its member's own reports, none waited for a backlog: at
    # least the least they said (records/s over busy, what it consumed, or a record's cost); a
    # member measured by them is within what they said (the slow one, above), one that keeps up
    # may be a lower bound lifted to what it carries over the target (streaming.lag.capacity)
    if reports:
        by_client = {m["client_id"]: m["records_per_s"] for m in rec["load_model"]["members"]}
        assert all(client in reported and 0.97 * min(reported[client]) <= c
                   for client, c in by_client.items()), (by_client, reported)
        slow = next(m["client_id"] for m in rec["load_model"]["members"]
                    if g.index_of[m["client_id"]] == SLOW)
        assert by_client[slow] <= 1.03 * max(reported[slow]), (by_client, reported)
    # planned to a target utilisation (assignors/balanced/utilisation.py): it is given less than it
    # was measured to read, so its backlog drains (before, it got exactly its 60/s and kept it);
    # where the figures allow no plan within the target (a loaded machine: reports of 59, 74 and
    # 96/s for 60, 90 and 180 in one CI run), no more than the least max utilisation there is
    by_index = [measured[i] for i in sorted(measured)]
    bound = max(TARGET, least_max_utilisation(by_index, len(w.topics[0].rates), 20.0))
    assert rate[SLOW] <= bound * 1.02 * measured[SLOW], (rate, measured, bound)
