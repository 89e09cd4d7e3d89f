"""Malformed, extreme and adversarial records through the real job on an embedded one-broker cluster.

    .venv/bin/python -m benchmarks.fuzz [--records 10000] [--seed 1] [--max-value-bytes 65536] [--contract]

N records of every kind in :mod:`streaming.dev.fuzz` (about equally many of each), or with ``--contract`` N
records drawn from the contract's strategies (:mod:`streaming.dev.contract`: every field at and beyond its
bounds, whole groups with lags at 2^53 and 2^63-1; each must be valid or rejected with a reason), mixed with a
valid skewed group, go to the lag and metadata topics; the job runs with ``availableNow`` (after one run that
sets the watermark, so the late kind is late). Prints records sent, kinds, query failures, rejected by
reason, accepted, valid records lost, records not rejected or with the wrong reason, the skewed group's
recommendation, the recommendations whose figures are not exact or bounded, and the times taken.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

from streaming import config, jvm
from streaming.contracts import events as ev
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED
from streaming.dev import contract, fuzz, fuzz_run
from streaming.embedded.cluster import KafkaCluster
from streaming.job import query


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-value-bytes", type=int, default=64 * 1024,
                    help="the job's value size limit (the huge kinds are sized from it; keep well under 1 MB)")
    ap.add_argument("--contract", action="store_true",
                    help="records drawn from the contract's strategies instead of the listed kinds")
    args = ap.parse_args(argv)
    jvm.resolve()
    from streaming.spark_session import get_spark

    with (tempfile.TemporaryDirectory(prefix="fuzz-") as work,
          KafkaCluster(brokers=1, base_dir=Path(work) / "kafka") as kc):
        base = config.load()
        cfg = dataclasses.replace(
            base,
            kafka=dataclasses.replace(base.kafka, bootstrap_servers=kc.bootstrap_servers, lag_topic="fuzz.lag",
                                      metadata_topic="fuzz.metadata", trigger_topic="fuzz.triggers"),
            paths=config.PathSettings(checkpoints=f"{work}/checkpoints", tables=f"{work}/tables"),
            spark=dataclasses.replace(base.spark, master="local[2]",
                                      conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"}),
            job=dataclasses.replace(base.job, max_value_bytes=args.max_value_bytes, watermark_delay="2 minutes",
                                    group_timeout_s=600, query_name="fuzz"),
        )
        spark = get_spark(cfg)
        query.ensure_topics(cfg)
        now = int(time.time() * 1000)
        failures = 0
        fuzz_run.send(cfg, [], [ev.lag_event(now - 300_000, "clock", "t0", 0, 10, 20)])
        try:
            query.run(spark, cfg, available_now=True)
        except Exception as e:  # counted and shown: the point is that there are none
            failures += 1
            print(f"query failure (watermark run): {type(e).__name__}: {e}", file=sys.stderr)
        t0 = time.time()
        records = (contract.generate(args.seed, args.records, now - 180_000) if args.contract
                   else fuzz.generate(args.seed, args.records, now - 180_000, args.max_value_bytes))
        drawn_s = time.time() - t0
        t0 = time.time()
        sent = fuzz_run.send(cfg, records, fuzz.skewed_group("skewed", now - 240_000))
        sent_s = time.time() - t0
        t0 = time.time()
        batches: list[dict] = []
        try:
            batches = query.run(spark, cfg, available_now=True)
        except Exception as e:
            failures += 1
            print(f"query failure: {type(e).__name__}: {e}", file=sys.stderr)
        job_s = time.time() - t0
        rejected = spark.read.format("delta").load(cfg.table_path(REJECTED)).collect()
        recs = spark.read.format("delta").load(cfg.table_path(RECOMMENDATIONS)).collect()
        v = fuzz_run.verdict(sent, [((r["source_topic"], r["source_partition"], r["source_offset"]), r["reason"])
                                    for r in rejected])
        skewed = [r["triggers"] for r in recs if r["group"] == "skewed"]
        bad = fuzz_run.figure_problems(r.asDict() for r in recs)
        spark.stop()

    source = "drawn from the contract" if args.contract else f"of {v.kinds} kinds"
    print(f"benchmarks.fuzz: {v.sent:,} records {source} (seed {args.seed}, values up to "
          f"{args.max_value_bytes:,} bytes) + a valid skewed group; made in {drawn_s:.1f}s, produced in {sent_s:.1f}s")
    print(f"query failures: {failures}; job time {job_s:.1f}s over {len(batches)} batches "
          f"(available-now, 2 local cores, broker on the same machine)")
    print(f"rejected: {sum(v.rejected_by_reason.values()):,} rows; accepted (valid kinds): {v.accepted:,}; "
          f"valid lost: {len(v.valid_lost)}; not rejected: {len(v.missing)}; wrong reason: {len(v.wrong_reason)}; "
          f"rejected rows matching no fuzz record: {v.unexpected}")
    print(f"skewed group recommendations: {skewed}")
    print(f"recommendations: {len(recs):,} rows; figures not exact or bounded: {len(bad)}")
    for line in bad[:10]:
        print(f"BAD FIGURE {line}")
    print("rejected by reason:")
    for reason, n in sorted(v.rejected_by_reason.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {n:6,}  {reason}")
    for kind, got in v.valid_lost[:10]:
        print(f"VALID LOST {kind}: {got}")
    for kind in v.missing[:10]:
        print(f"NOT REJECTED {kind}")
    for kind, expected, got in v.wrong_reason[:10]:
        print(f"WRONG REASON {kind}: expected {expected!r}, got {got!r}")
    return 0 if v.ok and not failures and not bad and skewed == [["lag_skew"]] else 1


if __name__ == "__main__":
    sys.exit(main())
