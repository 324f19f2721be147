"""Figures of traced runs (:func:`coapcc.read_trace`): one flow's timers, RTT and RTO
(:func:`trace_figure`), a whole run's goodput and retransmissions (:func:`timeline_figure`)
and bottleneck queues (:func:`queue_figure`) over time, and a TCP transfer's sequence numbers
and congestion window (:func:`tcp_seq_figure`)."""

from __future__ import annotations

from typing import Any

from .base import TITLE_Y, hide_unused, layout, plain_log_axis

__all__ = ["trace_figure", "timeline_figure", "queue_figure", "tcp_seq_figure"]


def trace_figure(traces: list[tuple[str, str, Any]]):
    """One panel per (algorithm, description, flow trace): timers, RTT and RTO over time."""
    from matplotlib.figure import Figure

    n = len(traces)
    cols = min(n, 2)
    rows = (n + cols - 1) // cols
    fig = Figure(figsize=(7.5 * cols, 3.4 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    for i, (alg, desc, tr) in enumerate(traces):
        ax = axes[i // cols][i % cols]
        tx, ex = tr.transmissions, tr.exchanges
        first = tx[tx["copy"] == 0]
        ax.scatter(
            first["sent_s"],
            first["timer_s"],
            s=12,
            marker="o",
            facecolors="none",
            edgecolors="tab:blue",
            label="timer of 1st transmission",
        )
        exp = tx[(tx["copy"] > 0) | tx["expired"]]
        exp = exp[exp["expired"]]
        if len(exp):
            ax.scatter(
                exp["sent_s"], exp["timer_s"], s=14, marker="x", color="tab:red", label="expired timer"
            )
        ok = ex[ex["rtt_s"].notna()]
        ax.plot(
            ok["time_s"],
            ok["rtt_s"],
            ".-",
            color="tab:green",
            markersize=3,
            linewidth=0.8,
            label="RTT (1st transmission to response)",
        )
        ax.step(
            ex["time_s"],
            ex["cc_rto_s"],
            where="post",
            color="black",
            linewidth=1.0,
            label="RTO for the next exchange",
        )
        ax.set_xlabel("time (s)")
        ax.set_ylabel("seconds")
        ax.set_yscale("log")
        plain_log_axis(ax)
        ax.set_title(f"{alg}: {desc}", fontsize=10, y=TITLE_Y)
        ax.grid(alpha=0.3, which="both")
        if i == 0:
            ax.legend(fontsize=7, loc="upper left")
    hide_unused(axes, n, rows, cols)
    layout(fig, rows, cols, top=0.4)
    return fig


def timeline_figure(runs: list[tuple[str, str, Any]], bins: int = 40):
    """Per traced run (label, description, :class:`~coapcc.Trace` of every client): goodput
    (completed exchanges per second, all clients) and retransmissions sent per second over
    time, in equal time bins; linear axes."""
    import numpy as np

    fig, axes = _run_panels(len(runs))
    for i, (ax, (label, desc, tr)) in enumerate(zip(axes, runs)):
        ex, tx = tr.exchanges, tr.transmissions
        end = float(max(ex["time_s"].max() if len(ex) else 0.0, tx["sent_s"].max() if len(tx) else 0.0))
        edges = np.linspace(0.0, max(end, 1e-9), bins + 1)
        width = edges[1] - edges[0]
        ok = ex[ex["outcome"] != "give_up"]["time_s"].astype(float)
        good, _ = np.histogram(ok, edges)
        retx, _ = np.histogram(tx[tx["copy"] > 0]["sent_s"].astype(float), edges)
        mid = (edges[:-1] + edges[1:]) / 2
        ax.plot(mid, good / width, color="tab:blue", lw=1.3, label="goodput (exchanges/s)")
        ax.plot(mid, retx / width, color="tab:red", lw=1.0, ls="--", label="retransmissions/s")
        _time_panel(ax, end, "per second", f"{label}: {desc}")
        if i == 0:
            ax.legend(fontsize=7, loc="upper right")
    layout(fig, (len(runs) + 1) // 2, min(len(runs), 2), top=0.4)
    return fig


def queue_figure(runs: list[tuple[str, str, Any]]):
    """Per traced run (label, description, :class:`~coapcc.Trace` with queue records): the
    occupancy of the bottleneck buffer of each link direction (bytes) over time, as the exact
    step function of the trace; linear axes. Runs without queue records are left out; returns
    None if none has any."""
    runs = [r for r in runs if r[2].queue is not None and len(r[2].queue)]
    if not runs:
        return None
    colors = {"uplink": "tab:orange", "downlink": "tab:blue"}
    fig, axes = _run_panels(len(runs))
    for ax, (label, desc, tr) in zip(axes, runs):
        q = tr.queue
        end = float(q["time_s"].max())
        if tr.exchanges is not None and len(tr.exchanges):
            end = max(end, float(tr.exchanges["time_s"].max()))
        for (link, direction), d in q.groupby(["link", "direction"], sort=True):
            name = direction if link == 0 else f"access link {link} {direction}"
            # Start empty at 0 and hold the last value to the end of the run.
            t = [0.0, *d["time_s"].astype(float).tolist(), end]
            b = [0, *d["bytes"].tolist()]
            b.append(b[-1])
            ls = "-" if link == 0 else ":"
            ax.step(t, b, where="post", lw=0.9, ls=ls, color=colors.get(direction), label=name)
        _time_panel(ax, end, "queue (bytes)", f"{label}: {desc}")
        ax.legend(fontsize=7, loc="upper right")
    layout(fig, (len(runs) + 1) // 2, min(len(runs), 2), top=0.4)
    return fig


def _run_panels(n: int):
    """A figure with one panel per traced run, two per row: the figure and the ``n`` axes in
    run order (a last unused cell is hidden)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5 * min(n, 2), 3.2 * ((n + 1) // 2)))
    grid = fig.subplots((n + 1) // 2, min(n, 2), squeeze=False)
    axes = [grid[i // 2][i % 2] for i in range(grid.size)]
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def _time_panel(ax, end: float, ylabel: str, title: str) -> None:
    """A per-run panel over the run's time: linear axes from 0, time in seconds."""
    ax.set_ylim(bottom=0)
    ax.set_xlim(0, end)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10, y=TITLE_Y)
    ax.grid(alpha=0.3)


def tcp_seq_figure(panels: list[tuple[str, str, Any]]):
    """One panel per (algorithm, description, TCP sender events of one flow:
    :attr:`coapcc.Trace.tcp` rows): the sequence number of every data segment sent over time
    (retransmissions marked) and the congestion window, the study's sequence/cwnd plot."""
    from matplotlib.figure import Figure

    n = len(panels)
    cols = min(n, 2)
    rows = (n + cols - 1) // cols
    fig = Figure(figsize=(7.5 * cols, 3.4 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    for i, (alg, desc, ev) in enumerate(panels):
        ax = axes[i // cols][i % cols]
        data = ev[(ev["len"] > 0) & ev["event"].isin(["send", "retransmit"])]
        first = data[data["event"] == "send"]
        again = data[data["event"] == "retransmit"]
        ax.scatter(first["time_s"], first["seq"] / 1024, s=4, color="tab:blue", label="segment sent")
        if len(again):
            ax.scatter(
                again["time_s"],
                again["seq"] / 1024,
                s=14,
                marker="x",
                color="tab:red",
                label="retransmission",
            )
        ax.set_xlabel("time (s)")
        ax.set_ylabel("sequence number (KiB)")
        ax.set_title(f"{alg}: {desc}", fontsize=9)
        cw = ev[ev["cwnd"].notna()]
        if len(cw):
            ax2 = ax.twinx()
            ax2.step(cw["time_s"], cw["cwnd"], where="post", color="tab:green", lw=0.8)
            ax2.set_ylabel("cwnd (segments)", color="tab:green")
        ax.legend(loc="upper left", fontsize=7)
    hide_unused(axes, n, rows, cols)
    layout(fig, rows, cols, top=0.4, right=0.8, wgap=1.6)
    return fig
