"""Slopes and verdicts of the figures (flat, levelling, GROWS), and the figure lines of a saved run read back."""

from __future__ import annotations

import re

FIGURES = ("jvm_rss_mb", "py_rss_mb", "workers_rss_mb", "state_files", "state_mb", "ckpt_files", "ckpt_mb",
           "delta_files", "delta_mb", "log_files", "log_kb", "batch_ms")


def slope(points: list[tuple[float, float]]) -> float:
    """Least squares slope of y over x (0 for fewer than two points)."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0


def verdict(points: list[tuple[float, float]]) -> tuple[float, str]:
    """(slope per 1,000 batches, flat / levelling / GROWS) of (batch, value) points after the warm-up."""
    s = slope(points)
    if len(points) < 4:
        return s * 1000, "too few points"
    span = points[-1][0] - points[0][0]
    mean = sum(y for _, y in points) / len(points)
    if abs(s * span) <= 0.1 * max(abs(mean), 1e-9):
        return s * 1000, "flat"
    half = len(points) // 2
    first, second = slope(points[: half + 1]), slope(points[half:])
    if s > 0 and second < 0.25 * first:
        return s * 1000, "levelling"
    return s * 1000, "GROWS" if s > 0 else "falls"


def summary(rows: list[tuple[int, dict[str, float]]], warmup: int, say) -> None:
    say(f"slopes per 1,000 batches over batches >= {warmup} (least squares), first -> last after warm-up:")
    for name in FIGURES:
        points = [(float(b), f[name]) for b, f in rows if b >= warmup]
        if not points:
            continue
        per_k, word = verdict(points)
        say(f"  {name:15s} {points[0][1]:10.2f} -> {points[-1][1]:10.2f}   slope {per_k:+10.3f}/1k batches   {word}")


FIGURE_LINE = re.compile(
    r"^batch +(\d+) at .*: JVM (\S+) MB, driver py (\S+) MB, workers (\S+) MB; state (\S+) files (\S+) MB; "
    r"checkpoint (\S+) files (\S+) MB; Delta (\S+) files (\S+) MB, log (\S+) files (\S+) KB; batch (\S+) ms$")


def parse(text: str) -> list[tuple[int, dict[str, float]]]:
    """The figure lines of a saved run (as :func:`fmt` writes them)."""
    rows = []
    for line in text.splitlines():
        m = FIGURE_LINE.match(line)
        if m:
            rows.append((int(m.group(1)), dict(zip(FIGURES, map(float, m.groups()[1:]), strict=True))))
    return rows
