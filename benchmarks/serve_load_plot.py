"""The plot of ``benchmarks/serve_load.py``'s results (matplotlib, a benchmark dependency).

``python benchmarks/serve_load.py --replot`` redraws ``serve_load.png`` from ``serve_load.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["plot"]


def style(point: dict[str, Any]) -> dict[str, Any]:
    """Colour by server and batching, dashes for MLServer, dots for binary tensors, dash-dots for gRPC."""
    colors = {
        ("mininn-serve", True): "tab:blue",
        ("mininn-serve", False): "tab:orange",
        ("mininn-serve, default BLAS threads", True): "tab:cyan",
        ("mininn-serve, default BLAS threads", False): "tab:brown",
        ("mininn-serve, 2 workers", True): "tab:green",
        ("mininn-serve, 2 workers", False): "tab:olive",
        ("mlserver workers=1", False): "tab:red",
        ("mlserver workers=1", True): "tab:purple",
        ("mlserver workers=0", False): "tab:pink",
        ("mlserver workers=0", True): "tab:gray",
    }
    server, binary = point["server"], point["protocol"] == "binary"
    dashes = "--" if server.startswith("mlserver") else (":" if binary else "-")
    if point["protocol"] == "grpc":
        dashes = "-."
    return {"color": colors.get((server, point["batching"]), "black"), "linestyle": dashes, "marker": "o"}


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = results["points"]
    models = list(dict.fromkeys(p["model"] for p in points))
    ticks = sorted({p["concurrency"] for p in points})
    overload = results.get("overload")
    rows = max(len(models), 2 if overload else 1)
    columns = 3 if overload else 2
    figure, axes = plt.subplots(rows, columns, figsize=(6.5 * columns, 4.6 * rows), squeeze=False)
    for row, model in enumerate(models):
        series: dict[str, list[dict[str, Any]]] = {}
        for p in points:
            if p["model"] == model:
                label = f"{p['server']}, batching {'on' if p['batching'] else 'off'}, {p['protocol']}"
                series.setdefault(label, []).append(p)
        for label, line in series.items():
            line.sort(key=lambda p: p["concurrency"])
            x = [p["concurrency"] for p in line]
            axes[row][0].plot(x, [p["throughput"] for p in line], label=label, **style(line[0]))
            axes[row][1].plot(x, [p["p99_ms"] for p in line], label=label, **style(line[0]))
        for column, ylabel in ((0, "answered requests / s"), (1, "p99 latency (ms)")):
            axis = axes[row][column]
            axis.set_xscale("log", base=2)
            axis.set_xticks(ticks, [str(c) for c in ticks])
            axis.set_xlabel("concurrent clients, each sending batch-1 requests back to back")
            axis.set_ylabel(ylabel)
            axis.set_title(f"{model}: {ylabel.split(' (')[0]}")
            axis.grid(True, alpha=0.3)
        axes[row][1].set_yscale("log")
        axes[row][0].legend(fontsize=6.5, loc="upper left", framealpha=0.85)
    if overload:
        plot_overload(axes[0][2], axes[1][2], overload)
    machine, run = results["machine"], results["run"]
    load = (
        f"load average {machine['load_average_before']:.1f} before, {machine['load_average_after']:.1f} after"
    )
    figure.suptitle(
        f"mininn-serve vs MLServer on {machine['cpus']} shared CPUs ({load}), "
        f"{run['seconds'] * run['rounds']:.0f} s per point in {run['rounds']} rounds, "
        f"BLAS {run['blas_threads']} thread per forward unless marked",
        fontsize=11,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def plot_overload(top: Any, bottom: Any, overload: dict[str, Any]) -> None:
    timeline = np.array(overload["timeline"]).reshape(-1, 3)
    for status, color in (("200", "tab:green"), ("503", "tab:orange"), ("504", "tab:red"), ("0", "black")):
        chosen = timeline[timeline[:, 2].astype(int).astype(str) == status]
        if len(chosen):
            top.scatter(
                chosen[:, 0], chosen[:, 1], s=4, color=color, alpha=0.5, label=f"{status} ({len(chosen)})"
            )
    top.axhline(overload["timeout_ms"], color="tab:red", linestyle="--", linewidth=1, label="timeout")
    top.set_yscale("log")
    top.set_title(
        f"overload: {overload['offered_rps']:.0f} req/s offered = {overload['factor']}x the sustainable "
        f"{overload['sustainable_rps']:.0f} ({overload['model']}, binary)",
        fontsize=9,
    )
    top.set_xlabel("seconds (when the request was sent)")
    top.set_ylabel("latency (ms)")
    top.legend(fontsize=7, markerscale=3)
    top.grid(True, alpha=0.3)
    times, rss = zip(*overload["memory"]) if overload["memory"] else ((), ())
    bottom.plot(times, rss, color="tab:blue")
    bottom.set_title("server memory (RSS) during the overload", fontsize=9)
    bottom.set_xlabel("seconds")
    bottom.set_ylabel("MiB")
    bottom.set_ylim(0, max(rss, default=1) * 1.2)
    bottom.grid(True, alpha=0.3)
