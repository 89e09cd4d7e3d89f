"""Prometheus and promtool for checking the alert rules (conf/prometheus), obtained once, offline
after.

``rebalancer setup`` calls :func:`obtain`: the binaries go to ``<cache>/prometheus/bin`` (the cache
of :mod:`streaming.paths`, git-ignored), taken from Debian's ``prometheus`` package with ``apt-get
download`` and ``dpkg-deb -x`` (nothing installed system-wide; both are Go binaries needing libc
alone; as root, an ``apt-get update`` when apt's lists are empty, as on a fresh machine). A
``prometheus`` and ``promtool`` pair already on ``PATH`` is used where the cache has none, e.g. on a
machine without apt. Nothing here ever needs the network again once the cache holds them.

Only the tests of the alert rules need them: :func:`setup_line` lets ``rebalancer setup`` succeed
without (a Mac, another distribution) and say what those tests will need; the tests themselves
fail, never skip, when :func:`binary` finds none."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from streaming.errors import SetupError
from streaming.paths import CACHE_DIR

BIN_DIR = CACHE_DIR / "prometheus" / "bin"
NAMES = ("prometheus", "promtool")
PACKAGE = "prometheus"
HOW = (
    "run `rebalancer setup` (takes Debian's prometheus package with apt-get download into "
    f"{BIN_DIR}), or put prometheus and promtool on PATH"
)


def cached() -> dict[str, Path] | None:
    """The binaries in the cache, or None when either is missing."""
    found = {n: BIN_DIR / n for n in NAMES}
    return found if all(p.is_file() for p in found.values()) else None


def on_path() -> dict[str, Path] | None:
    found = {n: shutil.which(n) for n in NAMES}
    return {n: Path(p) for n, p in found.items() if p} if all(found.values()) else None


def binary(name: str) -> Path:
    """The path of ``prometheus`` or ``promtool``: the cache's, else PATH's; SetupError when
    neither has it."""
    found = cached() or on_path()
    if not found:
        raise SetupError(f"{name} not found: {HOW}")
    return found[name]


def _run(cmd: list[str], cwd: Path) -> None:
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise SetupError(
            f"`{' '.join(cmd)}` failed (exit {r.returncode}): "
            f"{(r.stderr or r.stdout).strip()[-400:]}"
        )


def _download(work: Path) -> None:
    """``apt-get download``; on a fresh machine apt's lists may be empty: as root, ``apt-get
    update`` once."""
    try:
        _run(["apt-get", "download", "-q", PACKAGE], work)
    except SetupError:
        if os.geteuid() != 0:
            raise
        print("apt-get download failed; running apt-get update once and trying again", flush=True)
        _run(["apt-get", "update", "-q"], work)
        _run(["apt-get", "download", "-q", PACKAGE], work)


def obtain(force: bool = False) -> dict[str, Path]:
    """The binaries, from the cache, else Debian's package into the cache, else PATH."""
    if not force and cached():
        return cached() or {}
    if not (shutil.which("apt-get") and shutil.which("dpkg-deb")):
        found = on_path()
        if found:
            return found
        raise SetupError(
            "no apt-get and dpkg-deb here to fetch it, nor prometheus and promtool on PATH"
        )
    print(
        f"Fetching Prometheus (Debian package {PACKAGE}) into {BIN_DIR} (first run only) ...",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="rebalancer-prometheus-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)  # apt's sandbox user writes the download here
        _download(work)
        (deb,) = work.glob(f"{PACKAGE}_*.deb")
        _run(["dpkg-deb", "-x", str(deb), "x"], work)
        BIN_DIR.mkdir(parents=True, exist_ok=True)
        for n in NAMES:
            shutil.copy2(work / "x" / "usr" / "bin" / n, BIN_DIR / f".{n}.part")
            (BIN_DIR / f".{n}.part").replace(BIN_DIR / n)  # whole or not at all
        (BIN_DIR / "VERSION").write_text(deb.name + "\n")
    return cached() or {}


def setup_line(force: bool = False) -> str:
    """What ``rebalancer setup`` prints of Prometheus: where the binaries are, or, when they could
    not be obtained, one line saying what the alert-rule tests need (setup succeeds either way)."""
    try:
        found = obtain(force=force)
    except (SetupError, OSError, ValueError) as e:  # no apt, apt offline, an unexpected package
        if on_path():
            return f"Prometheus from PATH ({e} for the cache): {on_path()}"
        return (f"Prometheus not obtained ({e}); setup goes on without it: only the alert-rule "
                f"tests (tests/integration/test_alert_rules.py, test_alerts_live.py) need it, and "
                f"they fail until prometheus and promtool are in {BIN_DIR} or on PATH")
    return f"Prometheus ready: {found['prometheus']}, {found['promtool']} ({version()})"


def version() -> str:
    """``promtool --version``'s first line."""
    out = subprocess.run(
        [str(binary("promtool")), "--version"], capture_output=True, text=True, check=False
    )
    return (out.stdout or out.stderr).splitlines()[0] if (out.stdout or out.stderr) else "unknown"
