"""A Spark standalone cluster on loopback: one master and N workers from pyspark's own distribution
(for the integration tests and ``python -m benchmarks.job --standalone-workers``).

Each daemon runs in the foreground (``bin/spark-class``) in a process group of its own, so
``stop()`` ends it with everything it started (executors and their Python workers) and can check
that nothing is left. Ports are free ones picked on 127.0.0.1; logs and work dirs stay under
``base_dir``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_home() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a process of another user took the id: ours are gone
        return False
    return True


class StandaloneCluster:
    """``with StandaloneCluster(tmp) as c:`` -> ``c.master_url`` (``spark://127.0.0.1:P``) with
    workers registered."""

    def __init__(self, base_dir: Path, workers: int = 2, cores: int = 1,
                 memory: str = "1g") -> None:
        self.base_dir = Path(base_dir)
        self.workers, self.cores, self.memory = workers, cores, memory
        self.port, self.webui_port = free_port(), free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        self.work_dirs: list[Path] = []

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self, timeout: float = 120.0) -> None:
        # empty: no spark-defaults.conf or spark-env.sh from elsewhere
        conf_dir = self.base_dir / "conf"
        conf_dir.mkdir(parents=True, exist_ok=True)
        self._launch("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                     "--port", str(self.port), "--webui-port", str(self.webui_port))
        self._wait(lambda s: s.get("status") == "ALIVE", timeout, "the master to come up")
        for i in range(self.workers):
            work = self.base_dir / f"worker{i}" / "work"
            work.mkdir(parents=True)
            self.work_dirs.append(work)
            self._launch(f"worker{i}", "org.apache.spark.deploy.worker.Worker", self.master_url,
                         "--host", "127.0.0.1", "--cores", str(self.cores), "--memory", self.memory,
                         "--webui-port", str(free_port()), "--work-dir", str(work))
        self._wait(lambda s: len(self.alive_workers(s)) == self.workers, timeout,
                   f"{self.workers} workers to register")

    def _launch(self, name: str, main_class: str, *args: str) -> None:
        env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
               "SPARK_CONF_DIR": str(self.base_dir / "conf"), "SPARK_NO_DAEMONIZE": "1"}
        # the daemon writes it until stop()
        log = open(self.base_dir / f"{name}.log", "wb")  # noqa: SIM115
        try:
            proc = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), main_class, *args],
                                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=env, cwd=self.base_dir, start_new_session=True)
        finally:
            log.close()
        self.procs.append(proc)

    def _wait(self, ready: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"a Spark daemon exited ({p.returncode}) while waiting for "
                                       f"{what}; see the logs in {self.base_dir}")
            try:
                if ready(self.state()):
                    return
            except OSError:  # the web UI is not listening yet
                pass
            time.sleep(0.5)
        raise TimeoutError(
            f"timed out after {timeout:.0f}s waiting for {what}; see the logs in {self.base_dir}")

    def stop(self, timeout: float = 30.0) -> None:
        for p in self.procs:
            if _group_alive(p.pid):
                os.killpg(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for p in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(max(0.1, deadline - time.monotonic()))
        while time.monotonic() < deadline and any(_group_alive(p.pid) for p in self.procs):
            time.sleep(0.2)
        for p in self.procs:  # what SIGTERM did not end in time
            if _group_alive(p.pid):
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(10)

    def left_running(self) -> list[int]:
        """Process groups of ours that still have a process (empty after a clean stop)."""
        return [p.pid for p in self.procs if _group_alive(p.pid)]

    def __enter__(self) -> StandaloneCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- state -------------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """The master's JSON status (workers, active and completed applications)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.webui_port}/json/", timeout=5) as r:
            return json.load(r)

    def completed_app(self, app_id: str, timeout: float = 60.0) -> dict[str, Any]:
        """The master's record of a finished application (it learns of the end just after the
        driver)."""
        self._wait(lambda s: any(a["id"] == app_id for a in s.get("completedapps", [])), timeout,
                   f"the master to list {app_id} as completed")
        return next(a for a in self.state()["completedapps"] if a["id"] == app_id)

    @staticmethod
    def alive_workers(state: dict[str, Any]) -> list[dict[str, Any]]:
        return [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]

    def executor_dirs(self, app_id: str) -> dict[int, list[Path]]:
        """Worker index -> the executor folders (stdout, stderr) it ran for the application."""
        return {i: sorted(p for p in (work / app_id).glob("*") if p.is_dir())
                for i, work in enumerate(self.work_dirs)}
