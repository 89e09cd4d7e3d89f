"""The streaming job under ``spark-submit`` on a real Spark standalone cluster (a master and two
workers on loopback), docs/deploying.md's recipe: the project as a wheel on ``--py-files``, the
connectors on ``--jars``, ``rebalancer run --available-now`` against the embedded Kafka. The same
events run through local mode; the recommendations must be the same, and the Spark event log must
show every task ran on the workers' executors.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from streaming import config, jvm
from streaming.contracts import events as ev
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED
from streaming.dev.produce import produce
from streaming.dev.spark_standalone import StandaloneCluster, spark_home
from streaming.job import query

pytestmark = pytest.mark.integration

T0 = 1_763_700_000_000
STEP = 10_000
SOURCE_ROOT = Path(__file__).resolve().parents[2]  # the checkout
QUIET_GROUPS = 12  # balanced groups that spread the state over every shuffle partition
# what a recommendation says; batch_id is left out (it depends on how the input was cut into
# batches)
COMPARED = ("group", "version", "recommendation_id", "event_time", "generation", "triggers",
            "trigger_details", "assignor", "assignment", "before_max_lag", "after_max_lag",
            "before_imbalance", "after_imbalance", "lower_bound", "before_cross_rack",
            "after_cross_rack", "partitions_moved", "lag_moved", "stuck_partitions")


def member(mid: str, assigned: list[tuple[str, int]], rack: str | None = None) -> dict:
    return ev.member_entry(mid, ["t0"], assigned, client_id=f"client-{mid}", host="/127.0.0.1",
                           rack=rack)


def lag_poll(ts: int, group: str, lags: dict[int, int]) -> list[dict]:
    return [ev.lag_event(ts, group, "t0", p, 1_000_000 + ts // 100, 1_000_000 + ts // 100 + lag)
            for p, lag in lags.items()]


def scenario_events() -> list[dict]:
    """One group per trigger, and quiet groups that never get a recommendation."""
    out: list[dict] = []
    two = [member("C0", [("t0", 0), ("t0", 1)]), member("C1", [("t0", 2), ("t0", 3)])]
    out.append(ev.members_event(T0, "skewed", 1, "range", two))
    for i in range(6):
        out += lag_poll(T0 + i * STEP, "skewed", {0: 9000, 1: 8000, 2: 100, 3: 100})

    parts = lambda racks: [ev.partition_entry(p, 1, [1, 2], r)  # noqa: E731
                           for p, r in enumerate(racks)]
    out.append(ev.partitions_event(T0, "racks", "t0",
                                   parts([["a", "b"], ["b", "c"], ["c", "a"], ["a", "b"]])))
    out.append(ev.members_event(T0, "racks", 1, "range", [
        member("A", [("t0", 0), ("t0", 3)], rack="a"), member("B", [("t0", 1)], rack="b"),
        member("C", [("t0", 2)], rack="c")]))
    out.append(ev.partitions_event(T0 + 3 * STEP, "racks", "t0",
                                   parts([["b", "c"], ["b", "c"], ["c", "a"], ["a", "b"]])))

    out.append(ev.members_event(T0, "joined", 1, "range", two))
    out.append(ev.members_event(T0 + 3 * STEP, "joined", 2, "range", [
        member("C0", [("t0", 0), ("t0", 1)]), member("C1", [("t0", 2)]),
        member("C2", [("t0", 3)])]))

    out.append(ev.partitions_event(T0, "grown", "t0", parts([["a", "b"]] * 4)))
    out.append(ev.members_event(T0, "grown", 1, "range", two))
    out.append(ev.partitions_event(T0 + 3 * STEP, "grown", "t0", parts([["a", "b"]] * 6)))

    for g in range(QUIET_GROUPS):
        out.append(ev.members_event(T0, f"quiet{g:02d}", 1, "range", two))
        for i in range(6):
            out += lag_poll(T0 + i * STEP, f"quiet{g:02d}",
                            {p: 2000 + 10 * ((g + i + p) % 3) for p in range(4)})
    for group in ("racks", "joined", "grown"):
        for i in range(6):
            out += lag_poll(T0 + i * STEP, group, {p: 500 for p in range(4)})
    return out


def write_conf(path: Path, tag: str) -> None:
    """The job's settings, one file for both runs (the tables and checkpoints come per run)."""
    path.write_text(f"""
[kafka]
lag_topic = "lag.{tag}"
metadata_topic = "meta.{tag}"
trigger_topic = "triggers.{tag}"
[policy]
assignor = "balanced"
skew_threshold = 1.5
skew_observations = 3
min_total_lag = 1000
min_improvement = 0.2
cooldown_s = 300
[job]
watermark_delay = "2 minutes"
group_timeout_s = 600
query_name = "rebalancer_{tag}"
""")


def build_wheel(out: Path) -> Path:
    """``pip wheel --no-deps --no-build-isolation -w DIR .`` as docs/deploying.md says; its build
    folders go under ``out`` rather than the checkout, which other runs share."""
    extra = out / "setup.cfg"
    out.mkdir(parents=True)
    extra.write_text(f"[build]\nbuild_base = {out / 'build'}\n[egg_info]\negg_base = {out}\n")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(out), str(SOURCE_ROOT)], check=True, cwd=SOURCE_ROOT,
                   env={**os.environ, "DIST_EXTRA_CONFIG": str(extra)})
    (wheel,) = out.glob("kafka_rebalancer-*.whl")
    return wheel


def recommendations(spark, path: str) -> list[dict]:
    rows = spark.read.format("delta").load(path).select(*[f"`{c}`" for c in COMPARED]).collect()
    return sorted((r.asDict(recursive=True) for r in rows),
                  key=lambda r: (r["group"], r["version"]))


def tasks_by_executor(event_log: Path) -> tuple[str, Counter]:
    """(application id, executor id -> tasks ended) from a Spark event log."""
    app_id, tasks = "", Counter()
    for line in event_log.read_text().splitlines():
        e = json.loads(line)
        if e["Event"] == "SparkListenerApplicationStart":
            app_id = e["App ID"]
        elif e["Event"] == "SparkListenerTaskEnd":
            tasks[e["Task Info"]["Executor ID"]] += 1
    return app_id, tasks


def submit_command(master: str, wheel: Path, conf_file: Path, bootstrap: str, work: Path,
                   event_logs: Path) -> list[str]:
    """docs/deploying.md's ``spark-submit ... streaming/cli.py run``, plus settings that only
    observe the run."""
    return [
        str(spark_home() / "bin" / "spark-submit"), "--master", master,
        "--jars", ",".join(jvm.spark_jars()),
        "--py-files", str(wheel),
        "--conf", "spark.executor.memory=512m",
        # for this test only: wait for both executors before the first job, no UI port, an event log
        # to read
        "--conf", "spark.scheduler.minRegisteredResourcesRatio=1.0",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.eventLog.enabled=true",
        "--conf", f"spark.eventLog.dir=file://{event_logs}",
        "--conf", "spark.eventLog.rolling.enabled=false", "--conf", "spark.eventLog.compress=false",
        str(SOURCE_ROOT / "streaming" / "cli.py"), "run", "--available-now",
        "--conf", str(conf_file),
        "--conf", "spark.use_cached_jars=false",
        "--conf", f"kafka.bootstrap_servers={bootstrap}",
        "--conf", "spark.sql.shuffle.partitions=4",
        "--conf", f"paths.tables={work / 'tables'}",
        "--conf", f"paths.checkpoints={work / 'checkpoints'}",
    ]


def test_job_under_spark_submit_on_a_standalone_cluster_matches_local_mode(kafka_cluster, spark,
                                                                           tmp_path):
    started = time.monotonic()
    tag = uuid.uuid4().hex[:6]
    conf_file = tmp_path / "rebalancer.toml"
    write_conf(conf_file, tag)
    events = scenario_events()
    local_cfg = config.load(conf_file, {
        "kafka.bootstrap_servers": kafka_cluster.bootstrap_servers,
        "paths.tables": str(tmp_path / "local" / "tables"),
        "paths.checkpoints": str(tmp_path / "local" / "checkpoints")})
    produce(local_cfg, events)
    wheel = build_wheel(tmp_path / "dist")
    event_logs = tmp_path / "eventlog"
    event_logs.mkdir()
    cluster_tables = tmp_path / "cluster" / "tables"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_CONF_DIR": str(tmp_path / "standalone" / "conf"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("SPARK_HOME", None)
    log = tmp_path / "spark-submit.log"

    with StandaloneCluster(tmp_path / "standalone", workers=2, cores=1, memory="1g") as standalone:
        cmd = submit_command(standalone.master_url, wheel, conf_file,
                             kafka_cluster.bootstrap_servers, tmp_path / "cluster", event_logs)
        submitted = time.monotonic()
        with open(log, "wb") as out:
            driver = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, env=env, cwd=tmp_path,
                                      start_new_session=True)
        try:
            # meanwhile, the same events in local mode in this process (the session's local[2]
            # Spark)
            query.run(spark, local_cfg, available_now=True)
            local = recommendations(spark, local_cfg.table_path(RECOMMENDATIONS))
            local_s = time.monotonic() - submitted
            rc = driver.wait(timeout=600)
        finally:
            if driver.poll() is None:  # the test failed first: the driver and its Python go too
                os.killpg(driver.pid, signal.SIGKILL)
                driver.wait()
        submit_s = time.monotonic() - submitted
        output = log.read_text(errors="replace")
        assert rc == 0, output[-6000:]
        (event_log,) = event_logs.iterdir()
        app_id, tasks = tasks_by_executor(event_log)
        completed = standalone.completed_app(app_id)
        executor_dirs = standalone.executor_dirs(app_id)
    assert not standalone.left_running(), "Spark daemons or executors still running after stop"

    # it ran on the cluster: the master knew the application, each worker launched an executor for
    # it, and every task ran on one of those executors (local mode would show one executor,
    # "driver")
    assert completed["state"] == "FINISHED"
    worker_of = {d.name: w for w, dirs in executor_dirs.items() for d in dirs}
    assert sorted(executor_dirs) == [0, 1] and all(executor_dirs.values()), executor_dirs
    assert tasks and set(tasks) <= set(worker_of), (tasks, worker_of)
    per_worker = Counter()
    for executor, n in tasks.items():
        per_worker[f"worker{worker_of[executor]}"] += n
    assert "Spark master spark://127.0.0.1" in output  # the configured local[*] was not used

    cluster = recommendations(spark, str(cluster_tables / RECOMMENDATIONS))
    triggers = {t for r in local for t in r["triggers"]}
    assert {"lag_skew", "rack_change", "membership_change",
            "partition_count_change"} <= triggers, local
    assert not any(r["group"].startswith("quiet") for r in local)
    assert cluster == local
    # every event was valid, in both runs
    for tables in (local_cfg.paths.tables, str(cluster_tables)):
        assert spark.read.format("delta").load(f"{tables}/{REJECTED}").count() == 0
    print(f"\nspark-submit on {standalone.master_url}: application {app_id}, {sum(tasks.values())} "
          f"tasks: per executor {dict(sorted(tasks.items()))}, per worker "
          f"{dict(sorted(per_worker.items()))}; {len(local)} recommendations equal in local and "
          f"cluster runs ({len(events)} events); local run {local_s:.0f}s, spark-submit "
          f"{submit_s:.0f}s (side by side), test {time.monotonic() - started:.0f}s")
