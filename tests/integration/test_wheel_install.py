"""Installed like a package: the wheel, built from this checkout, installed into a fresh virtualenv
outside the repository and run from a working directory outside it, works and writes nothing into
site-packages.

To stay offline and quick the wheel is installed with ``--no-deps`` and the new environment sees the
already installed dependencies through a ``.pth`` line naming this project's site-packages (a plain
path line: the editable install's finder there is never activated, so the repository itself is not
importable). The JVM jars come from the checkout's resolved cache, hard-linked into a cache of the
test's own named by ``REBALANCER_CACHE``: no Maven, and nothing the installed tool does can touch
the checkout's cache.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

from streaming import config, jvm, paths
from streaming.contracts import events as ev

from .test_job import STEP, T0, lag_poll, member, produce

ROOT = paths.SOURCE_ROOT
SCENARIO = {
    "name": "installed", "topics": {"t0": 3}, "replica_racks": None, "lags": {"t0": [5, 0, 1]},
    "members": [{"id": m, "instance_id": None, "rack": None, "topics": ["t0"], "owned": [],
                 "generation": None}
                for m in ("C0", "C1")],
}


def _build_wheel(tmp: Path) -> Path:
    """``pip wheel`` on a copy of the sources, so no build/ or egg-info lands in the checkout."""
    src = tmp / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for d in ("streaming", "assignors", "conf"):
        shutil.copytree(ROOT / d, src / d, ignore=skip)
    for f in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        shutil.copy(ROOT / f, src / f)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp / "dist"), str(src)], check=True, capture_output=True, text=True,
                    timeout=300)
    (wheel,) = (tmp / "dist").glob("kafka_rebalancer-*.whl")
    return wheel


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system
        shutil.copy2(src, dst)


def _jar_cache(cache: Path) -> None:
    assert jvm.is_resolved(), \
        "the checkout's JVM jars are not resolved for its poms: run `make setup`"
    shutil.copytree(paths.JARS_DIR, cache / "jars", copy_function=_link_or_copy,
                    ignore=shutil.ignore_patterns(".resolved"))
    # a real copy: it is rewritten
    shutil.copy(paths.JARS_DIR / ".resolved", cache / "jars" / ".resolved")


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file()}


def test_wheel_installed_outside_the_repository_runs_from_any_directory(tmp_path):
    wheel = _build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert "streaming/_conf/rebalancer.toml" in names \
        and "streaming/_conf/maven/spark/pom.xml" in names
    assert "streaming/_conf/log4j2.properties" in names
    # PEP 561: typed packages
    assert "assignors/py.typed" in names and "streaming/py.typed" in names
    assert not [n for n in names if n.startswith("benchmarks/")]

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; "
                                               "print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps",
                    "-q", str(wheel)], check=True, capture_output=True, text=True, timeout=300)
    (site / "zz_project_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    work, cache = tmp_path / "work", tmp_path / "cache"
    work.mkdir()
    _jar_cache(cache)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("REBALANCER_", "PYTHON", "VIRTUAL_ENV"))}
    env |= {"REBALANCER_CACHE": str(cache),
            "REBALANCER_KAFKA_STATE": str(tmp_path / "cluster.json"),
            "HOME": str(tmp_path / "home"),
            "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"}
    rebalancer = str(venv / "bin" / "rebalancer")

    def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([rebalancer, *args], cwd=work, env=env, capture_output=True,
                              text=True, timeout=timeout)

    code = "import streaming, assignors; print(streaming.__file__); print(assignors.__file__)"
    where = subprocess.run([str(py), "-c", code], cwd=work, env=env, check=True,
                           capture_output=True, text=True).stdout.split()
    assert all(Path(w).is_relative_to(site) for w in where), where
    before = _snapshot(site)

    out = run("--help")
    assert out.returncode == 0 and "recommendations" in out.stdout, out.stderr

    (work / "scenario.json").write_text(json.dumps(SCENARIO))
    out = run("assign", "--assignor", "range", "--input", "scenario.json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["assignment"] == {"C0": [["t0", 0], ["t0", 1]], "C1": [["t0", 2]]}

    out = run("bench", "quality")
    assert out.returncode == 2 and "not part of the wheel" in out.stderr, out.stderr

    up = run("kafka", "up", "--brokers", "1", timeout=180)
    assert up.returncode == 0, up.stderr
    bootstrap = up.stdout.strip().splitlines()[-1]
    try:
        cfg = config.load(overrides={"kafka.bootstrap_servers": bootstrap})
        two = [member("C0", [("t0", 0), ("t0", 1)]), member("C1", [("t0", 2), ("t0", 3)])]
        events = [ev.members_event(T0, "installed", 1, "range", two)]
        for i in range(4):
            events += lag_poll(T0 + i * STEP, "installed", {0: 9000, 1: 8000, 2: 100, 3: 100})
        produce(cfg, events)
        conf = ["--conf", f"kafka.bootstrap_servers={bootstrap}", "--conf", "spark.master=local[2]",
                "--conf", "spark.sql.shuffle.partitions=2"]
        job = run("run", "--available-now", *conf, timeout=600)
        assert job.returncode == 0, job.stderr[-3000:]
    finally:
        down = run("kafka", "down", timeout=180)
    assert down.returncode == 0 and "stopped 1 broker" in down.stdout, down.stderr

    # the outputs under the working directory: Delta tables in data/delta, the checkpoint in
    # checkpoints/
    assert (work / "data" / "delta" / "recommendations" / "_delta_log").is_dir()
    assert (work / "checkpoints" / "rebalancer" / "delta_app_id").is_file()
    recs = run("recommendations", "--format", "json", *conf)
    assert recs.returncode == 0, recs.stderr
    rows = json.loads(recs.stdout)
    assert [(r["group"], r["triggers"]) for r in rows] == [("installed", ["lag_skew"])]
    assert (cache / "kafka").is_dir()  # the cluster's data went to the cache, not the package

    assert _snapshot(site) == before, "something was written into site-packages"
    assert not (tmp_path / "home" / ".cache" / "kafka-rebalancer").exists()
