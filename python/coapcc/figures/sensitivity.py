"""The error-model sensitivity study's figure (:mod:`coapcc.sensitivity`): FASOR's gain over
Default CoAP and CoCoA against the burst parameter, drawn from the study's gain and transfer
tables."""

from __future__ import annotations

from ..kinds.sensitivity import DEFAULT_BURST_PACKETS, DEFAULT_T_B
from ..sensitivity import INTERVAL
from .base import layout, log_x

__all__ = ["figure"]


def figure(res):
    """FASOR's median FCT and retransmissions relative to Default and CoCoA against the burst
    sojourn (time clock) and the burst length (packet clock), one column per profile and
    clock; the simulator's default setting is marked. A third row shows the transfer FCTs
    when any transfer ran."""
    import numpy as np
    from matplotlib.figure import Figure

    gains, transfers = res.gains, res.transfers
    profiles = list(res.study.profiles)
    clocks = [c for c in ("time", "packet") if (gains["clock"] == c).any()] if len(gains) else ["time"]
    panels = [(p, c) for c in clocks for p in profiles]
    xs = {c: sorted({v.value for v in res.study.variants if v.clock == c}) for c in clocks}
    has_transfers = transfers is not None and len(transfers) > 0
    nrows = 3 if has_transfers else 2
    fig = Figure(figsize=(3.6 * len(panels) + 0.4, 3.0 * nrows + 0.9))
    axes = fig.subplots(nrows, len(panels), squeeze=False)
    colors = {"Default": "#1f77b4", "CoCoA": "#ff7f0e"}
    styles = {"continuous": ("-", "o"), "random": ("--", "s")}
    for j, (profile, clock) in enumerate(panels):
        sub = gains[(gains["profile"] == profile) & (gains["clock"] == clock)] if len(gains) else gains
        xcol = "t_b_s" if clock == "time" else "burst_packets"
        for i, (col, name) in enumerate(
            (("fct_ratio", "median FCT"), ("retx_ratio", "retransmissions / flow"))
        ):
            ax = axes[i][j]
            for (workload, base), s in sub.groupby(["workload", "baseline"], sort=True) if len(sub) else []:
                s = s.sort_values(xcol)
                x = s[xcol].to_numpy(dtype=float)
                ls, mk = styles.get(workload, ("-", "^"))
                ax.plot(
                    x, s[col], ls, marker=mk, ms=4, color=colors.get(base), label=f"vs {base}, {workload}"
                )
                lo, hi = s[f"{col}_lo"].to_numpy(dtype=float), s[f"{col}_hi"].to_numpy(dtype=float)
                if np.isfinite(lo).any():
                    ax.fill_between(x, lo, hi, color=colors.get(base), alpha=0.10, linewidth=0)
            ax.axhline(1.0, color="0.3", lw=0.8)
            y0, y1 = ax.get_ylim()  # at least 0.9-1.1: a flat ratio of 1 stays readable as such
            ax.set_ylim(min(y0, 0.9), max(y1, 1.1))
            ax.axvline(
                DEFAULT_T_B if clock == "time" else DEFAULT_BURST_PACKETS,
                color="crimson",
                lw=1.0,
                ls=":",
                label="simulator default" if (i, j) == (0, 0) else None,
            )
            log_x(ax, xs[clock])
            if i == 0:
                what = "time clock" if clock == "time" else "packet clock"
                ax.set_title(f"{profile} errors, {what}", fontsize=10)
            if j == 0:
                ax.set_ylabel(f"FASOR / baseline\n{name}")
            ax.set_xlabel("mean burst sojourn T_B (s)" if clock == "time" else "mean burst length (packets)")
        if has_transfers:
            ax = axes[2][j]
            tsub = transfers[(transfers["profile"] == profile) & (transfers["clock"] == clock)]
            for label, s in tsub.groupby("transfer", sort=False):
                s = s.sort_values(xcol)
                x = s[xcol].to_numpy(dtype=float)
                (line,) = ax.plot(x, s["fct_median_s"], "-o", ms=4, label=label)
                ax.fill_between(
                    x, s["fct_p25_s"], s["fct_p75_s"], color=line.get_color(), alpha=0.12, linewidth=0
                )
            ax.axvline(
                DEFAULT_T_B if clock == "time" else DEFAULT_BURST_PACKETS, color="crimson", lw=1.0, ls=":"
            )
            log_x(ax, xs[clock])
            ax.set_xlabel("mean burst sojourn T_B (s)" if clock == "time" else "mean burst length (packets)")
            if j == 0:
                ax.set_ylabel("transfer FCT, median (s)")
                ax.legend(fontsize=7)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(
        handles, labels, loc="lower center", ncol=min(5, max(1, len(labels))), fontsize=8, frameon=False
    )
    note = (
        f"fasor18 error runs, preset helsinki2018; {len(res.study.seeds)} seeds per point, flows pooled; "
        f"bands: {INTERVAL:.0%} paired bootstrap over seeds"
    )
    if res.skipped:
        note += f"; transfers skipped: {', '.join(label for label, _ in res.skipped)}"
    fig.suptitle(
        "FASOR's gain vs the unpublished burst parameter (below 1: FASOR better)\n" + note, fontsize=9
    )
    layout(fig, nrows, len(panels), top=0.95, bottom=0.95, left=0.95, wgap=0.8, hgap=0.75)
    return fig
