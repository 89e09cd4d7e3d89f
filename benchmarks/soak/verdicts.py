"""Slopes, peaks and verdicts of the figures (flat, bounded, levelling, GROWS), and the figure lines
of a saved run read back."""

from __future__ import annotations

import re

FIGURES = ("jvm_rss_mb", "py_rss_mb", "workers_rss_mb", "state_files", "state_mb", "state_versions",
           "ckpt_files", "ckpt_mb", "delta_files", "delta_mb", "log_files", "log_kb", "log_orphans",
           "window_commits", "batch_ms")
PER_COMMIT = ("delta_files", "delta_mb", "log_files", "log_kb")
"""Figures whose level the retentions set in time (the log keeps its window's commits, VACUUM waits
out the deleted files' window): read again per commit of the log window, so that a machine whose
speed changes over the run (and with it the commit rate) is not read as growth or as its absence."""
PER_VERSION = ("state_files", "state_mb")
"""Figures of the state store, whose level follows the versions it keeps: ``minBatchesToRetain``
plus those written since its last maintenance (a background task every
``stateStore.maintenanceInterval``, 60 s), so a machine that runs more batches a minute keeps more;
read again per version kept."""


def slope(points: list[tuple[float, float]]) -> float:
    """Least squares slope of y over x (0 for fewer than two points)."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0


def peaks(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(highest value before the last third, highest value in the last third): what a sawtooth's
    envelope reads, where the slope of its samples depends on where in the tooth each sample
    fell."""
    third = max(1, len(points) // 3)
    return max(y for _, y in points[:-third]), max(y for _, y in points[-third:])


def verdict(points: list[tuple[float, float]]) -> tuple[float, str]:
    """(slope per 1,000 batches, a word) of (batch, value) points after the warm-up: ``flat`` (the
    fitted line moves less than 10% of the mean over the run), ``falls``, ``bounded`` (it swings,
    compaction and cleanup cutting it back, but the last third sets no high more than 10% above the
    earlier ones), ``levelling`` (its rise slows to under a quarter) or ``GROWS``."""
    s = slope(points)
    if len(points) < 6:
        return s * 1000, "too few points"
    span = points[-1][0] - points[0][0]
    mean = sum(y for _, y in points) / len(points)
    if abs(s * span) <= 0.1 * max(abs(mean), 1e-9):
        return s * 1000, "flat"
    if s < 0:
        return s * 1000, "falls"
    early, late = peaks(points)
    if late <= 1.1 * early:
        return s * 1000, "bounded"
    half = len(points) // 2
    first, second = slope(points[: half + 1]), slope(points[half:])
    if second < 0.25 * first:
        return s * 1000, "levelling"
    return s * 1000, "GROWS"


def summary(rows: list[tuple[int, dict[str, float]]], warmup: int, say) -> None:
    say(f"over batches >= {warmup}: first -> last, the highest before the last third -> in it, the "
        "least squares slope per 1,000 batches, and the verdict:")
    for name in FIGURES:
        _say_verdict(name, [(float(b), f[name]) for b, f in rows if b >= warmup and name in f], say)
    for name in PER_COMMIT:
        _say_verdict(f"{name}/commit", [(float(b), f[name] / f["window_commits"]) for b, f in rows
                                        if b >= warmup and f.get("window_commits")], say)
    for name in PER_VERSION:
        _say_verdict(f"{name}/version", [(float(b), f[name] / f["state_versions"]) for b, f in rows
                                         if b >= warmup and f.get("state_versions")], say)


def _say_verdict(name: str, points: list[tuple[float, float]], say) -> None:
    if not points:
        return
    per_k, word = verdict(points)
    early, late = peaks(points)
    say(f"  {name:17s} {points[0][1]:9.2f} -> {points[-1][1]:9.2f}   peaks {early:9.2f} -> "
        f"{late:9.2f}   slope {per_k:+9.3f}/1k   {word}")


FIGURE_LINE = re.compile(
    r"^batch +(\d+) at .*: JVM (\S+) MB, driver py (\S+) MB, workers (\S+) MB; "
    r"state (\S+) files (\S+) MB(?: in (\S+) versions)?; "
    r"checkpoint (\S+) files (\S+) MB; Delta (\S+) files (\S+) MB, log (\S+) files (\S+) KB"
    r"(?:, (\S+) orphan checksums)?(?:, (\S+) commits in the log window)?; batch (\S+) ms$")


def parse(text: str) -> list[tuple[int, dict[str, float]]]:
    """The figure lines of a saved run (as :func:`~benchmarks.soak.command.fmt` writes them)."""
    rows = []
    for line in text.splitlines():
        m = FIGURE_LINE.match(line)
        if m:
            values = zip(FIGURES, m.groups()[1:], strict=True)  # runs before log_orphans have none
            rows.append((int(m.group(1)), {k: float(v) for k, v in values if v is not None}))
    return rows
