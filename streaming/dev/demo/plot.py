"""The demo's picture: lag of each consumer over time, recommendations and replica moves marked."""

from __future__ import annotations

from pathlib import Path

from streaming.dev.demo.monitor import GroupMonitor, short_name

COLOURS = {"recommendation": "tab:red", "applied": "tab:green", "replicas": "tab:purple",
           "fallback": "tab:gray"}


def plot_lag(monitor: GroupMonitor, path: str | Path, title: str | None = None) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True, height_ratios=[3, 1],
                                  constrained_layout=True)
    ts = [s.t for s in monitor.samples]
    for client in monitor.consumers():
        ax.plot(ts, [s.lag.get(client, float("nan")) for s in monitor.samples], lw=1.8,
                label=short_name(client, monitor.group))
    ax.plot(ts, [s.max_lag for s in monitor.samples], lw=1, ls=":", color="black", label="max")
    ax.set_ylabel("consumer lag (records)")
    ax.grid(alpha=0.3)
    ax2.step(ts,
             [s.cross_rack if s.cross_rack is not None else float("nan") for s in monitor.samples],
             where="post", color="tab:purple")
    ax2.set_ylabel("cross-rack\npartitions")
    ax2.set_xlabel("seconds since the collector started")
    ax2.grid(alpha=0.3)
    ax2.set_ylim(bottom=0)
    ax2.yaxis.set_major_locator(MaxNLocator(integer=True))
    ymax = max((s.max_lag for s in monitor.samples), default=1) or 1
    seen: set[str] = set()
    for m in monitor.marks:
        colour = COLOURS.get(m.kind, "tab:gray")
        style = "--" if m.kind == "recommendation" else "-" if m.kind == "applied" else "-."
        label = {"recommendation": "recommendation lands", "applied": "group applies it",
                 "replicas": "replicas move racks",
                 "fallback": "fallback assignment"}.get(m.kind, m.kind)
        for a in (ax, ax2):
            a.axvline(m.t, color=colour, ls=style, lw=1.2, alpha=0.8,
                      label=label if a is ax and m.kind not in seen else None)
        seen.add(m.kind)
        if m.kind in ("recommendation", "replicas"):
            ax.annotate(m.data.get("short", m.text), (m.t, ymax), xytext=(3, -2),
                        textcoords="offset points", rotation=90, va="top", ha="left", fontsize=8,
                        color=colour)
    ax.legend(loc="upper right", fontsize=8, ncol=2)
    ax.set_title(title or f"group {monitor.group}: lag per consumer")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
