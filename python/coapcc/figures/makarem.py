"""Figures of Makarem's studies (``kind = "makarem-studies"``, :mod:`coapcc.reports.makarem`):
the chapter 3-4 model curves (from the file's ``[models]`` section: the models are formulas,
no run is needed) and their simulated points, the chapter 5 RTT-scenario comparison and
studies, and the chapter 6 residual-bandwidth curves, each from the runs' tables."""

from __future__ import annotations

import numpy as np

__all__ = [
    "model_loss_ratio",
    "model_goodput_delay",
    "model_vs_simulation",
    "rtt_scenarios",
    "rto_vs_rtt",
    "rtt_study",
    "resbw_curves",
    "resbw_instant",
]


def _figure(w: float, h: float, rows: int = 1, cols: int = 1, **kw):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h))
    return fig, fig.subplots(rows, cols, **kw)


def _model(name: str, p, m: dict, r, rto):
    from ..models import loss

    if name == "bernoulli":
        return loss.bernoulli(p, r=r, rto=rto, rtt=m["rtt"])
    return loss.gilbert(p, m.get("gilbert_q", 0.5), r=r, rto=rto, rtt=m["rtt"])


def _fine(m: dict):
    return np.linspace(0.01, max(m["loss"]), 200)


def model_loss_ratio(m: dict):
    """P_L against the per-attempt loss (transition) probability p, Bernoulli and Gilbert."""
    fine = _fine(m)
    fig, axes = _figure(10, 3.8, 1, 2, sharey=True)
    for ax, name in zip(axes, ("bernoulli", "gilbert")):
        for r in m["r"][::2]:
            ax.semilogy(fine, _model(name, fine, m, r, m["fixed_rto"])["P_L"], label=f"r = {r}")
        ax.set_title(f"{name}: observed loss ratio P_L")
        ax.set_xlabel("p")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def model_goodput_delay(m: dict):
    """Goodput (3.30)/(3.92) and delay (3.14)/(3.87) against p, one line per RTO."""
    fine = _fine(m)
    fig, axes = _figure(10, 7, 2, 2)
    for col, name in enumerate(("bernoulli", "gilbert")):
        for rto in m["rto"]:
            res = _model(name, fine, m, m["fixed_r"], rto)
            axes[0, col].plot(fine, res["GP"], label=f"RTO {rto} s")
            axes[1, col].plot(fine, res["D_s"], label=f"RTO {rto} s")
        axes[0, col].set_title(f"{name}: goodput GP (msg/s), r = {m['fixed_r']}")
        axes[1, col].set_title(f"{name}: delay of a delivered message D_s (s)")
        axes[1, col].set_xlabel("p")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def model_vs_simulation(m: dict, sim):
    """Model curves over the simulated points (``sim``: loss, p, metric, sim, ci95)."""
    fine = _fine(m)
    fig, axes = _figure(12, 6.5, 2, 3)
    for r_i, name in enumerate(("bernoulli", "gilbert")):
        res = _model(name, fine, m, m["fixed_r"], m["fixed_rto"])
        for c_i, key in enumerate(("GP", "E_N", "D_s")):
            ax = axes[r_i, c_i]
            ax.plot(fine, res[key], label="model")
            d = sim[(sim["loss"] == name) & (sim["metric"] == key)]
            ax.errorbar(
                d["p"], d["sim"], yerr=d["ci95"], fmt="o", ms=3, capsize=2, label="simulation, 95 % CI"
            )
            ax.set_title(f"{name}: {key}")
            ax.set_xlabel("p")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def rtt_scenarios(df, ccs: list[str]):
    """Spurious retransmissions and RMSE(RTO, RTT) per scenario, one bar per algorithm."""
    fig, axes = _figure(12, 7, 2, 1, sharex=True)
    ids = sorted(df["scenario"].unique())
    w = 0.8 / len(ccs)
    for j, cc in enumerate(ccs):
        d = df[df.cc == cc].set_index("scenario").reindex(ids)
        x = np.arange(len(ids)) + j * w
        axes[0].bar(x, d["spurious"], width=w, label=cc.split(":")[0])
        axes[1].bar(x, d["rmse_ms"] / 1e3, width=w)
    axes[0].set_yscale("symlog")
    axes[0].set_ylabel("spurious retransmissions")
    axes[1].set_ylabel("RMSE(RTO, RTT), s")
    axes[1].set_xticks(np.arange(len(ids)) + 0.4 - w / 2, [str(i) for i in ids], fontsize=7)
    axes[1].set_xlabel("scenario")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def rto_vs_rtt(per: dict, title: str):
    """RTT and each algorithm's RTO against the message index (``per``: label -> trace)."""
    from ..models.studies import plot_rto_vs_rtt

    fig, ax = _figure(9, 4)
    plot_rto_vs_rtt(per, title=title, ax=ax)
    fig.tight_layout()
    return fig


def rtt_study(summ):
    """A study's settings: mean spurious retransmissions against mean RMSE."""
    fig, ax = _figure(9, 3.8)
    ax.scatter(summ["rmse_ms"] / 1e3, summ["spurious"])
    for _, row in summ.iterrows():
        ax.annotate(row["setting"], (row["rmse_ms"] / 1e3, row["spurious"]), fontsize=7)
    ax.set_xlabel("mean RMSE(RTO, RTT), s")
    ax.set_ylabel("mean spurious retransmissions")
    fig.tight_layout()
    return fig


def resbw_curves(mean, x: str, xlabel: str, formulas: bool = False):
    """Goodput, overhead and application loss against ``x``, one line per algorithm (the
    means over repetitions); with ``formulas``, the IDC and MBC goodput formulas too."""
    from ..models.rate import idc_goodput_ratio, mbc_goodput_ratio

    fig, axes = _figure(13, 3.8, 1, 3)
    for cc, d in mean.groupby("cc", sort=False):
        for ax, key in zip(axes, ("goodput_pps", "overhead", "app_loss_ratio")):
            ax.plot(d[x], d[key], marker=".", label=cc.replace(":preset=makarem2021", ""))
    if formulas:
        xs = np.linspace(mean[x].min(), mean[x].max(), 50)
        for label, ratio in (
            ("IDC (6.1), iw 1.5", idc_goodput_ratio(1.5, 0.01)),
            ("IDC (6.1), iw 1.1", idc_goodput_ratio(1.1, 0.01)),
            ("MBC steady state", mbc_goodput_ratio()),
        ):
            axes[0].plot(xs, np.minimum(ratio * xs, 2.0), ls="--", lw=0.8, label=label)
    for ax, key in zip(
        axes, ("goodput (pkt/s)", "overhead (lost or duplicate tx per delivered)", "application loss ratio")
    ):
        ax.set_title(key, fontsize=9)
        ax.set_xlabel(xlabel)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def resbw_instant(traces, ccs: list[str], good):
    """Each transmission's sending rate against the residual bandwidth over time, one panel
    per algorithm (``good``: the run's goodput per algorithm, in the titles)."""
    ncol = min(3, len(ccs))
    nrow = -(-len(ccs) // ncol)
    fig, axes = _figure(4.2 * ncol, 2.8 * nrow, nrow, ncol, sharex=True, sharey=True, squeeze=False)
    for ax, cc in zip(axes.ravel(), ccs):
        t = traces[traces["cc"] == cc]
        ax.step(t["t_s"], t["resbw_pps"], where="post", color="black", lw=0.8, label="residual bw")
        rest = t.iloc[1:]
        ok, lost = rest[~rest["lost"].astype(bool)], rest[rest["lost"].astype(bool)]
        ax.scatter(ok["t_s"], np.minimum(ok["rate_pps"], 3), s=4, label="sent, passed")
        ax.scatter(lost["t_s"], np.minimum(lost["rate_pps"], 3), s=4, marker="x", label="sent, lost")
        ax.set_title(
            f"{cc.replace(':preset=makarem2021', '')}: goodput {good.get(cc, float('nan')):.3f}", fontsize=9
        )
    for ax in axes.ravel()[len(ccs) :]:
        ax.set_visible(False)
    axes[0, 0].legend(fontsize=7)
    axes[-1, 0].set_xlabel("time (s)")
    axes[0, 0].set_ylabel("pkt/s")
    fig.tight_layout()
    return fig
