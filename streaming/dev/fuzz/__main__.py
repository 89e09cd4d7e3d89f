"""Malformed, extreme and adversarial records through the real job on an embedded one-broker
cluster.

    .venv/bin/python -m streaming.dev.fuzz [--records 10000] [--seed 1] [--max-value-bytes 65536]
                                        [--contract] [--groups N]

N records of every kind in :mod:`streaming.dev.fuzz.kinds` (about equally many of each), or with
``--contract`` N records drawn from the contract's strategies (:mod:`streaming.dev.fuzz.contract`:
every field at and beyond its bounds, whole groups with lags at 2^53 and 2^63-1; each must be valid
or rejected with a reason), mixed with a valid skewed group, go to the lag and metadata topics; the
job runs with ``availableNow`` (after one run that sets the watermark, so the late kind is late).
Prints records sent, kinds, query failures, rejected by reason, accepted, valid records lost,
records not rejected or with the wrong reason, the skewed group's recommendation, the
recommendations whose figures are not exact or bounded, and the times taken.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from streaming import config, jvm
from streaming.contracts import events as ev
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED
from streaming.dev.fuzz import contract, judge, kinds
from streaming.embedded.cluster import KafkaCluster
from streaming.job import query


@dataclass
class Outcome:
    """What a fuzz run gave: the verdict, the skewed group's triggers, bad figures, failures,
    batches, times."""

    v: judge.Verdict
    skewed: list
    bad: list[str]
    recs: int
    failures: int
    batches: int
    drawn_s: float
    sent_s: float
    job_s: float


def main(argv: list[str] | None = None) -> int:
    """Fuzz the job on an embedded cluster, print the outcome; 0 when nothing was lost, failed or
    wrong."""
    args = args_of(argv)
    jvm.resolve()
    with (tempfile.TemporaryDirectory(prefix="fuzz-") as work,
          KafkaCluster(brokers=1, base_dir=Path(work) / "kafka") as kc):
        out = run(fuzz_config(work, kc.bootstrap_servers, args.max_value_bytes), args)
    report(out, args)
    ok = out.v.ok and not out.failures and not out.bad and out.skewed == [["lag_skew"]]
    return 0 if ok else 1


def args_of(argv: list[str] | None) -> argparse.Namespace:
    """The options."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-value-bytes", type=int, default=64 * 1024,
                    help="the job's value size limit (the huge kinds are sized from it; keep well "
                         "under 1 MB)")
    ap.add_argument("--groups", type=int, default=0,
                    help="the listed kinds spread over N groups (valid and malformed mixed in each "
                         "group's batch; 0: a group per record)")
    ap.add_argument("--contract", action="store_true",
                    help="records drawn from the contract's strategies instead of the listed kinds")
    return ap.parse_args(argv)


def fuzz_config(work: str, bootstrap: str, max_value_bytes: int) -> config.Config:
    """The configuration of the run: its own topics, folders under ``work``, two local cores, the
    value limit."""
    base = config.load()
    return dataclasses.replace(
        base,
        kafka=dataclasses.replace(base.kafka, bootstrap_servers=bootstrap, lag_topic="kinds.lag",
                                  metadata_topic="kinds.metadata", trigger_topic="kinds.triggers",
                                  member_load_topic="kinds.member-load"),
        paths=config.PathSettings(checkpoints=f"{work}/checkpoints", tables=f"{work}/tables"),
        spark=dataclasses.replace(base.spark, master="local[2]",
                                  conf={"spark.sql.shuffle.partitions": "2",
                                        "spark.default.parallelism": "2"}),
        job=dataclasses.replace(base.job, max_value_bytes=max_value_bytes,
                                watermark_delay="2 minutes", group_timeout_s=600,
                                query_name="fuzz"),
    )


def run_query(spark, cfg: config.Config, what: str) -> tuple[list[dict], int]:
    """One ``availableNow`` run: (its batches, 1 if it failed else 0); a failure is printed, not
    raised."""
    try:
        return query.run(spark, cfg, available_now=True), 0
    except Exception as e:  # counted and shown: the point is that there are none
        print(f"query failure{what}: {type(e).__name__}: {e}", file=sys.stderr)
        return [], 1


def run(cfg: config.Config, args: argparse.Namespace) -> Outcome:
    """The watermark run, the records made and sent, the job over them, then what it wrote read
    back."""
    from streaming.spark_session import get_spark

    spark = get_spark(cfg)
    query.ensure_topics(cfg)
    now = int(time.time() * 1000)
    judge.send(cfg, [], [ev.lag_event(now - 300_000, "clock", "t0", 0, 10, 20)])
    _, failures = run_query(spark, cfg, " (watermark run)")
    t0 = time.time()
    records = (contract.generate(args.seed, args.records, now - 180_000) if args.contract
               else kinds.generate(args.seed, args.records, now - 180_000, args.max_value_bytes,
                                  args.groups))
    drawn_s = time.time() - t0
    t0 = time.time()
    sent = judge.send(cfg, records, kinds.skewed_group("skewed", now - 240_000))
    sent_s = time.time() - t0
    t0 = time.time()
    batches, failed = run_query(spark, cfg, "")
    job_s = time.time() - t0
    rejected = spark.read.format("delta").load(cfg.table_path(REJECTED)).collect()
    recs = spark.read.format("delta").load(cfg.table_path(RECOMMENDATIONS)).collect()
    v = judge.verdict(sent, [((r["source_topic"], r["source_partition"], r["source_offset"]),
                                 r["reason"]) for r in rejected])
    skewed = [r["triggers"] for r in recs if r["group"] == "skewed"]
    bad = judge.figure_problems(r.asDict() for r in recs)
    spark.stop()
    return Outcome(v, skewed, bad, len(recs), failures + failed, len(batches), drawn_s, sent_s,
                   job_s)


def report(out: Outcome, args: argparse.Namespace) -> None:
    """The printed outcome: the counts, then up to ten of each kind of problem."""
    v = out.v
    source = "drawn from the contract" if args.contract else f"of {v.kinds} kinds" + (
        f" over {args.groups} groups" if args.groups else "")
    print(f"streaming.dev.fuzz: {v.sent:,} records {source} (seed {args.seed}, values up to "
          f"{args.max_value_bytes:,} bytes) + a valid skewed group; made in {out.drawn_s:.1f}s, "
          f"produced in {out.sent_s:.1f}s")
    print(f"query failures: {out.failures}; job time {out.job_s:.1f}s over {out.batches} batches "
          f"(available-now, 2 local cores, broker on the same machine)")
    print(f"rejected: {sum(v.rejected_by_reason.values()):,} rows; accepted (valid kinds): "
          f"{v.accepted:,}; valid lost: {len(v.valid_lost)}; not rejected: {len(v.missing)}; wrong "
          f"reason: {len(v.wrong_reason)}; rejected rows matching no fuzz record: {v.unexpected}")
    print(f"skewed group recommendations: {out.skewed}")
    print(f"recommendations: {out.recs:,} rows; figures not exact or bounded: {len(out.bad)}")
    for line in out.bad[:10]:
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


if __name__ == "__main__":
    sys.exit(main())
