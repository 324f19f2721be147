"""Figures of Makarem's studies (``kind = "makarem-studies"``, :mod:`coapcc.reports.makarem`),
each a function from a table to a matplotlib figure (the study table of
:mod:`coapcc.models.tables`, or a part of it; the model curves from the file's ``[models]``
section, since the models are formulas):

* chapters 3-4: :func:`model_loss_ratio`, :func:`model_goodput_delay`, :func:`model_vs_simulation`;
* chapter 5: :func:`rtt_scenarios` (spurious retransmissions and RMSE per scenario),
  :func:`rto_vs_rtt` (one scenario), :func:`rto_vs_rtt_grid` (RTO against RTT, message by
  message, one panel per scenario), :func:`rtt_study` (a study's settings),
  :func:`weight_study` (the α × γ study), :func:`k_study` (the K study);
* chapter 6: :func:`resbw_curves` (goodput, overhead and application loss against the mean
  residual bandwidth, one line per algorithm: Table 6.1 and each set of Table 6.2),
  :func:`resbw_instant` (each transmission's sending rate);
* the choices the thesis leaves open: :func:`rtt_sensitivity`, :func:`resbw_sensitivity` (the
  results with one named choice changed against the defaults), :func:`readings_claims`,
  :func:`readings_curves` (the chapter 6 claims and curves under each reading of the loss
  rule).

Spurious retransmissions are counted as the thesis counts them in its RTO-only runs: one per
transmission whose RTO is below its RTT (the table's ``spurious_messages``).
"""

from __future__ import annotations

import math
import re

import numpy as np

__all__ = [
    "model_loss_ratio",
    "model_goodput_delay",
    "model_vs_simulation",
    "rtt_scenarios",
    "rto_vs_rtt",
    "rto_vs_rtt_grid",
    "rtt_study",
    "weight_study",
    "k_study",
    "resbw_curves",
    "resbw_instant",
    "rtt_sensitivity",
    "resbw_sensitivity",
    "readings_claims",
    "readings_curves",
]

#: The spurious-retransmission count of the chapter 5 figures (the thesis's: one per
#: transmission whose RTO is below its RTT).
SPURIOUS = "spurious_messages"


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
    """Spurious retransmissions (the thesis's count) and RMSE(RTO, RTT) per scenario, one bar
    per algorithm (``df``: one row per scenario and algorithm, the mean over the seeds)."""
    fig, axes = _figure(12, 7, 2, 1, sharex=True)
    ids = sorted(df["scenario"].unique())
    w = 0.8 / len(ccs)
    for j, cc in enumerate(ccs):
        d = df[df.cc == cc].set_index("scenario").reindex(ids)
        x = np.arange(len(ids)) + j * w
        axes[0].bar(x, d[SPURIOUS], width=w, label=cc)
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


def _param(setting: str, key: str) -> float:
    m = re.search(rf"(?:^|[ ,]){re.escape(key)}=([0-9.eE+-]+)", setting)
    return float(m.group(1)) if m else float("nan")


def rto_vs_rtt_grid(traces, *, ncols: int = 6, title: str = ""):
    """``traces``: rows ``scenario, cc, i, rtt_ms, rto_ms`` (one per message). One panel per
    scenario: the RTT in black and each algorithm's RTO, in seconds, on a log scale."""
    ids = sorted(traces["scenario"].unique())
    nrows = -(-len(ids) // ncols)
    fig, axes = _figure(2.6 * ncols, 1.9 * nrows, nrows, ncols, squeeze=False, sharex=True)
    ccs = list(dict.fromkeys(traces["cc"]))
    for ax, sid in zip(axes.ravel(), ids):
        d = traces[traces["scenario"] == sid]
        first = d[d["cc"] == ccs[0]]
        ax.plot(first["i"], first["rtt_ms"] / 1e3, color="black", lw=0.5, label="RTT")
        for cc in ccs:
            e = d[d["cc"] == cc]
            ax.plot(e["i"], e["rto_ms"] / 1e3, lw=0.7, label=f"RTO {cc}")
        ax.set_yscale("log")
        ax.set_title(f"scenario {sid}", fontsize=8)
        ax.tick_params(labelsize=6)
    for ax in axes.ravel()[len(ids) :]:
        ax.set_visible(False)
    axes[0, 0].legend(fontsize=6)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def _study_means(df, study: str):
    d = df[(df["part"] == "rtt") & (df["study"] == study)]
    m = d.groupby("setting", sort=False)[[SPURIOUS, "rmse_ms"]].mean().reset_index()
    return m.rename(columns={SPURIOUS: "spurious"})


def weight_study(df, *, alpha_key: str = "alpha", gamma_key: str = "gamma"):
    """The α × γ study (rows ``study = "weights"``): mean spurious retransmissions and mean
    RMSE over its scenarios for each pair, as two heat maps."""
    m = _study_means(df, "weights")
    m["alpha"] = [_param(s, alpha_key) for s in m["setting"]]
    m["gamma"] = [_param(s, gamma_key) for s in m["setting"]]
    alphas = sorted(m["alpha"].unique(), reverse=True)
    gammas = sorted(m["gamma"].unique(), reverse=True)
    fig, axes = _figure(10, 3.6, 1, 2)
    for ax, col, label in zip(
        axes, ("spurious", "rmse_ms"), ("mean spurious retransmissions", "mean RMSE (ms)")
    ):
        grid = np.full((len(alphas), len(gammas)), np.nan)
        for _, r in m.iterrows():
            grid[alphas.index(r["alpha"]), gammas.index(r["gamma"])] = r[col]
        im = ax.imshow(grid, cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(gammas)), [f"1/{round(1 / g):d}" for g in gammas])
        ax.set_yticks(range(len(alphas)), [f"1/{round(1 / a):d}" for a in alphas])
        ax.set_xlabel("γ")
        ax.set_ylabel("α")
        ax.set_title(label, fontsize=9)
        for (i, j), v in np.ndenumerate(grid):
            if np.isfinite(v):
                ax.text(j, i, f"{v:.0f}", ha="center", va="center", fontsize=7, color="white")
        fig.colorbar(im, ax=ax)
    fig.tight_layout()
    return fig


def k_study(df):
    """The K study: rows ``study = "k-normal"`` (K swept, K_spurious = 7) and ``"k-spurious"``
    (K_spurious swept, K = 4); mean spurious retransmissions and RMSE against the swept K."""
    fig, axes = _figure(10, 3.6, 1, 2)
    for study, key, label in (
        ("k-normal", "k", "K (K_spurious = 7)"),
        ("k-spurious", "k_spurious", "K_spurious (K = 4)"),
    ):
        m = _study_means(df, study)
        if m.empty:
            continue
        m["K"] = [_param(s, key) for s in m["setting"]]
        m = m.sort_values("K")
        axes[0].plot(m["K"], m["spurious"], marker="o", label=label)
        axes[1].plot(m["K"], m["rmse_ms"] / 1e3, marker="o", label=label)
    axes[0].set_ylabel("mean spurious retransmissions per scenario")
    axes[1].set_ylabel("mean RMSE(RTO, RTT), s")
    for ax in axes:
        ax.set_xlabel("K")
        if ax.lines:
            ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


_CURVE_KEYS = (
    ("goodput_pps", "goodput (pkt/s)"),
    ("overhead", "overhead (non-delivering tx per delivered)"),
    ("app_loss_ratio", "application loss ratio"),
)


def resbw_curves(
    df, *, set_name: str, variant: str = "thesis", x: str = "mean_resbw", formulas: bool = False
):
    """Goodput, overhead and application loss against ``x`` (the mean residual bandwidth, or
    ``half_width``) for the chapter 6 rows of one set; the mean over repetitions, with the
    range of the repetitions as error bars. ``formulas``: draw (6.1) and the MBC steady state."""
    from ..models.rate import idc_goodput_ratio, mbc_goodput_ratio

    d = df[(df["part"] == "resbw") & (df["set"] == set_name) & (df["variant"] == variant)]
    fig, axes = _figure(14, 4, 1, 3)
    for cc, e in d.groupby("cc", sort=False):
        g = e.groupby(x)
        for ax, (key, _) in zip(axes, _CURVE_KEYS):
            mean, lo, hi = g[key].mean(), g[key].min(), g[key].max()
            yerr = [(mean - lo).clip(lower=0).fillna(0), (hi - mean).clip(lower=0).fillna(0)]
            ax.errorbar(mean.index, mean, yerr=yerr, marker=".", ms=4, lw=1, capsize=2, label=cc)
    if formulas and not d.empty:
        xs = np.linspace(d[x].min(), d[x].max(), 50)
        for label, ratio in (
            ("(6.1), iw 1.5", idc_goodput_ratio(1.5, 0.01)),
            ("(6.1), iw 1.1", idc_goodput_ratio(1.1, 0.01)),
            ("MBC steady state", mbc_goodput_ratio()),
        ):
            axes[0].plot(xs, np.minimum(ratio * xs, 2.0), ls="--", lw=0.8, label=label)
    axes[1].set_yscale("symlog", linthresh=1.0)
    for ax, (_, title) in zip(axes, _CURVE_KEYS):
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(
            "half width (pkt/s)" if x == "half_width" else "mean (bad-period) residual bandwidth (pkt/s)"
        )
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def rtt_sensitivity(df, *, pairs=(("makarem-rto", "pcocoa"), ("makarem-rto", "cocoa-plus"))):
    """Chapter 5 under each named choice: the share of scenarios in which the final RTO makes
    fewer spurious retransmissions than each other algorithm, and has the lower RMSE than
    pCoCoA, for the thesis's defaults (first seed) and each ``variant`` of the sensitivity rows."""
    d = df[(df["part"] == "rtt") & ((df["study"] == "sensitivity") | (df["study"] == "compare"))]
    first = d[d["study"] == "compare"]["seed"].min() if not d.empty else 0
    d = d[(d["study"] == "sensitivity") | (d["seed"] == first)]
    variants = list(dict.fromkeys(["thesis", *d["variant"]]))
    bars = []
    for a, b in pairs:
        bars.append((f"spurious: {a} < {b}", a, b, SPURIOUS))
    bars.append(("RMSE: makarem-rto < pcocoa", "makarem-rto", "pcocoa", "rmse_ms"))
    fig, ax = _figure(10, 3.8)
    w = 0.8 / len(bars)
    for j, (label, a, b, col) in enumerate(bars):
        ys = []
        for v in variants:
            m = d[d["variant"] == v].pivot_table(index="scenario", columns="cc", values=col, aggfunc="mean")
            ys.append(float((m[a] < m[b]).mean()) if {a, b} <= set(m.columns) else np.nan)
        ax.bar(np.arange(len(variants)) + j * w, ys, width=w, label=label)
    # Slanted: the variants' names are long.
    ax.set_xticks(np.arange(len(variants)) + 0.4 - w / 2, variants, fontsize=8, rotation=20, ha="right")
    ax.set_ylabel("share of scenarios")
    ax.set_ylim(0, 1)
    ax.axhline(0.5, color="grey", lw=0.5)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def resbw_sensitivity(df, *, column: str = "goodput_pps", variants=None, ncols: int = 3):
    """Chapter 6 under each named choice (bad periods only): ``column`` against the mean
    residual bandwidth, the thesis's defaults solid, the changed choice dashed, one panel per
    variant (``variants``: those names only; default every one)."""
    d = df[(df["part"] == "resbw") & (df["set"] == "bad-only")]
    if variants is None:
        variants = [v for v in dict.fromkeys(d["variant"]) if v != "thesis"]
    n = max(1, len(variants))
    ncols = min(ncols, n)
    nrows = -(-n // ncols)
    fig, axes = _figure(4.8 * ncols, 3.6 * nrows, nrows, ncols, squeeze=False)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    base = d[d["variant"] == "thesis"]
    base_specs = list(dict.fromkeys(base["cc_spec"]))
    for ax, v in zip(axes.ravel(), variants):
        e = d[d["variant"] == v]
        for k, (spec, f) in enumerate(e.groupby("cc_spec", sort=False)):
            color = f"C{k}"
            g = f.groupby("mean_resbw")[column].mean()
            ax.plot(g.index, g, ls="--", color=color, label=f"{f['cc'].iloc[0]} ({v})")
            # The default run of the same algorithm: the same spec, or the spec the variant extends.
            same = [x for x in base_specs if spec == x or spec.startswith(x + ",")]
            b = base[base["cc_spec"] == max(same, key=len)] if same else base.iloc[0:0]
            if not b.empty:
                gb = b.groupby("mean_resbw")[column].mean()
                ax.plot(gb.index, gb, color=color, label=f"{b['cc'].iloc[0]}")
        ax.set_title(v, fontsize=9)
        ax.set_xlabel("mean residual bandwidth (pkt/s)")
        ax.legend(fontsize=6)
    for row in axes:
        row[0].set_ylabel(column)
    fig.tight_layout()
    return fig


_VERDICT_COLOURS = {"holds": "#4caf50", "off": "#ffb300", "reversed": "#e53935", "missing": "#bdbdbd"}


def readings_claims(rows):
    """The chapter 6 claims under each reading of the loss rule: ``rows`` has one row per
    (``reading``, ``claim``) with ``reproduced`` and ``verdict`` (the output of
    :func:`coapcc.models.makarem21.judge_readings`). A grid, claims down and readings across,
    coloured by verdict and labelled with the measured value."""
    from matplotlib.patches import Rectangle

    readings = list(dict.fromkeys(rows["reading"]))
    claims = list(dict.fromkeys(rows["claim"]))
    fig, ax = _figure(2.2 + 2.0 * len(readings), 0.9 + 0.32 * len(claims))
    for _, r in rows.iterrows():
        i, j = claims.index(r["claim"]), readings.index(r["reading"])
        ax.add_patch(Rectangle((j, i), 1, 1, color=_VERDICT_COLOURS.get(r["verdict"], "white"), ec="white"))
        x = r["reproduced"]
        label = "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3g}"
        ax.text(j + 0.5, i + 0.5, f"{label} {r['verdict']}", ha="center", va="center", fontsize=7)
    ax.set_xlim(0, len(readings))
    ax.set_ylim(len(claims), 0)
    ax.set_xticks([j + 0.5 for j in range(len(readings))], readings, fontsize=8)
    ax.set_yticks([i + 0.5 for i in range(len(claims))], claims, fontsize=7)
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    fig.tight_layout()
    return fig


def readings_curves(df, readings, *, set_name: str = "bad-only"):
    """Goodput, application loss and overhead against the mean residual bandwidth under each
    reading of the loss rule (``readings``: (label, variant) pairs), one column per reading,
    one line per algorithm (the mean over repetitions)."""
    d = df[(df["part"] == "resbw") & (df["set"] == set_name)]
    fig, axes = _figure(4.2 * len(readings), 8.4, 3, len(readings), squeeze=False, sharex=True, sharey="row")
    keys = (_CURVE_KEYS[0], _CURVE_KEYS[2], _CURVE_KEYS[1])
    for j, (label, variant) in enumerate(readings):
        e = d[d["variant"] == variant]
        for k, (cc, f) in enumerate(e.groupby("cc", sort=False)):
            g = f.groupby("mean_resbw")
            for i, (key, _) in enumerate(keys):
                axes[i, j].plot(g[key].mean(), lw=1, marker=".", ms=3, color=f"C{k % 10}", label=cc)
        axes[0, j].set_title(label, fontsize=9)
        axes[-1, j].set_xlabel("mean residual bandwidth (pkt/s)")
    for i, (_, title) in enumerate(keys):
        axes[i, 0].set_ylabel(title, fontsize=8)
    axes[2, 0].set_yscale("symlog", linthresh=1.0)
    axes[0, 0].legend(fontsize=6)
    fig.tight_layout()
    return fig
