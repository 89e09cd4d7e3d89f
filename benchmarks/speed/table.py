"""The table: its header, a row per case and assignor with the verdict against its target, per-round
rows."""

from __future__ import annotations

from .cases import GIB, MIB, STICKY, Case

HEADER = (
    f"{'assignor':<19}{'case':<15}{'ours cold':>10}{'warm':>7}{'Java cold':>10}{'warm':>7}"
    f"{'ratio':>7}{'ours RSS':>9}{'(base)':>7}{'Java heap':>10}  target"
)


def _mib(b: float | None) -> str:
    return "-" if b is None else f"{b / MIB:.0f}M"


def _secs(x: float) -> str:
    """Seconds: a third decimal below one second, where a first round's figures live."""
    return f"{x:.3f}" if x < 1 else f"{x:.2f}"


def _s(r: dict | None, key: str) -> str:
    if r is None:
        return "-"
    if "error" in r:
        return "ERR"
    return _secs(r[key]) if key in r else "-"


def verdict(case: Case, assignor: str, ours: dict, java: dict | None,
            yardstick: dict | None) -> str:
    if "error" in ours:
        return f"ours: {ours['error']}"
    t = ours.get("warm_s", ours["time_s"])
    big = case.topics * case.partitions >= 1_000_000
    j = java.get("warm_s", java.get("time_s")) if java and "error" not in java else None
    if assignor in ("range", "roundrobin"):
        if j is None:
            return "no Java figure"
        ok = t <= 2 * j and (not big or ours["peak_rss"] < 2 * GIB)
        return f"<=2x warm Java{', <2GiB' if big else ''}: {'OK' if ok else 'MISSED'}"
    if assignor in STICKY:
        limit = case.sticky_limit_s or 90
        met = "OK" if ours["time_s"] <= limit else "MISSED"
        text = f"cold <={limit:.0f}s (Kafka test timeout): {met}"
        if j is not None:
            text = f"<=1.0x warm Java: {'OK' if t <= j else 'MISSED'}; {text}"
        return text
    if assignor == "lag":
        y = (yardstick.get("warm_s", yardstick.get("time_s"))
             if yardstick and "error" not in yardstick else None)
        if not y:
            return "no Java range yardstick"
        return f"{t / y:.1f}x warm Java range (yardstick, no target)"
    if assignor == "balanced":
        limit = 5.0
        return f"cold <{limit:.0f}s: {'OK' if ours['time_s'] < limit else 'MISSED'}"
    return ""


def row(case: Case, assignor: str, ours: dict, java: dict | None, yardstick: dict | None) -> str:
    j = java if java is not None else yardstick
    mark = "*" if java is None and j is not None else ""
    o_warm = ours.get("warm_s", ours.get("time_s"))
    j_warm = j.get("warm_s", j.get("time_s")) if j and "error" not in j else None
    ratio = f"{o_warm / j_warm:.2f}" if o_warm is not None and j_warm else "-"
    return (
        f"{assignor:<19}{case.name:<15}{_s(ours, 'time_s'):>10}{_s(ours, 'warm_s'):>7}"
        f"{_s(j, 'time_s') + mark:>10}{_s(j, 'warm_s') + mark:>7}{ratio:>7}"
        f"{_mib(ours.get('peak_rss')):>9}{_mib(ours.get('base_rss')):>7}"
        f"{_mib(j.get('peak_heap') if j else None):>10}"
        f"  {verdict(case, assignor, ours, java, yardstick)}"
    )


def round_rows(case: Case, assignor: str, ours: dict, java: dict | None) -> list[str]:
    """Per-round figures of a two-round run: cold and warm, ours and Java."""
    out = []
    for i in range(len(ours.get("rounds_s", []))):
        def fig(r: dict | None, key: str, i: int = i) -> str:
            vals = r.get(key) if r and "error" not in r else None
            return _secs(vals[i]) if vals and i < len(vals) else "-"

        o_w = ours.get("warm_round_s", [None] * (i + 1))[i]
        j_w = (java.get("warm_round_s", [None] * (i + 1))[i] if java and "error" not in java
               else None)
        ratio = f"{o_w / j_w:.2f}" if o_w is not None and j_w else "-"
        out.append(
            f"{'  round ' + str(i + 1):<19}{case.name:<15}{fig(ours, 'rounds_s'):>10}"
            f"{fig(ours, 'warm_round_s'):>7}{fig(java, 'rounds_s'):>10}"
            f"{fig(java, 'warm_round_s'):>7}{ratio:>7}"
        )
    return out
