"""The error-model sensitivity study's analysis: FASOR's gain over Default CoAP and CoCoA at
each burst setting, with paired bootstrap intervals over the seeds, and how each conclusion
drawn at the simulator's default fares at the other settings.

The runs are those of ``experiments/sensitivity.toml`` (``coapcc reproduce sensitivity``; the
kind is :mod:`coapcc.kinds.sensitivity`, the report :mod:`coapcc.reports.sensitivity`). The
tables here are pure functions of the runs' flows: byte-identical from run to run and for any
number of workers.
"""

from __future__ import annotations

import hashlib
import html
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .kinds.sensitivity import (
    DEFAULT_BURST_PACKETS,
    DEFAULT_T_B,
    Variant,
    ge_time_errors,
    low_sojourn,
    profile_chain,
)

__all__ = [
    "REFERENCE",
    "BASELINES",
    "Setting",
    "StudyResult",
    "analyse",
    "gain_table",
    "transfer_table",
    "conclusions",
    "write_outputs",
    "Variant",
    "profile_chain",
    "low_sojourn",
    "ge_time_errors",
    "DEFAULT_T_B",
    "DEFAULT_BURST_PACKETS",
]

#: The algorithm whose gain is measured (a series label).
REFERENCE = "FASOR"
#: What it is compared with.
BASELINES = ("Default", "CoCoA")
#: Bootstrap resamples (over seeds) of the ratio intervals, and the interval's coverage.
BOOTSTRAP = 400
INTERVAL = 0.90


@dataclass(frozen=True)
class Setting:
    """What the study ran: the base configuration, profiles, workloads, burst settings,
    seeds and algorithms (label -> spec)."""

    base: Mapping[str, Any]
    profiles: tuple[str, ...]
    workloads: tuple[str, ...]
    variants: tuple[Variant, ...]
    seeds: tuple[int, ...]
    algorithms: Mapping[str, str] = field(default_factory=dict)


@dataclass
class StudyResult:
    """The study's tables: its runs and flows as the dataset has them, the gain table and the
    transfer table."""

    study: Setting
    runs: Any  #: pandas DataFrame, one row per run
    flows: Any  #: pandas DataFrame, one row per flow (fct_s, retransmissions)
    gains: Any  #: the sensitivity table (one row per profile, setting, workload, baseline)
    transfers: Any  #: transfer FCTs per setting
    skipped: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    cpu_s: float = 0.0


#: The dataset's columns of a flow that the analysis reads, as it names them.
_RENAME = {"error_profile": "profile", "burst_value": "value"}


def analyse(runs, flows, base: Mapping[str, Any] | None = None) -> StudyResult:
    """The study's tables from a dataset's ``runs`` and ``flows`` (:func:`coapcc.load_results`
    of a sensitivity dataset; the flows need ``part``, ``error_profile``, ``clock``,
    ``burst_value``, ``workload``, ``label``, ``seed``, ``fct_s`` and ``retransmissions``)."""
    f = flows.rename(columns=_RENAME)
    cells = _as_cells(f)
    gain = runs[runs["part"] == "gain"] if len(runs) else runs
    variants = tuple(
        sorted({Variant(c, float(v)) for c, v in zip(runs["clock"], runs["burst_value"])}, key=_variant_key)
    )
    algorithms = dict(zip(gain["label"], gain["algorithm_spec"])) if len(gain) else {}
    setting = Setting(
        base=dict(base or {}),
        profiles=tuple(dict.fromkeys(runs["error_profile"])) if len(runs) else (),
        workloads=tuple(dict.fromkeys(gain["workload"])) if len(gain) else (),
        variants=variants,
        seeds=tuple(sorted(set(runs["seed"]))) if len(runs) else (),
        algorithms=algorithms,
    )
    cpu = float(runs["wall_s"].sum()) if "wall_s" in runs and len(runs) else 0.0
    return StudyResult(setting, runs, f, gain_table(cells), transfer_table(cells), cpu_s=cpu)


def _variant_key(v: Variant):
    return (0 if v.clock == "time" else 1, v.value)


def _pooled(parts: list, idx) -> tuple[float, float]:
    """Median FCT and mean retransmissions per flow of the flows of seeds ``idx``."""
    import numpy as np

    fct = np.concatenate([parts[i][0] for i in idx])
    rx = np.concatenate([parts[i][1] for i in idx])
    fct = fct[~np.isnan(fct)]
    return (float(np.median(fct)) if fct.size else float("nan")), (
        float(rx.mean()) if rx.size else float("nan")
    )


def _bootstrap(ref: list, oth: list, idx) -> tuple:
    """Ratios (FASOR / baseline) of the pooled median FCT and of the mean retransmissions for
    every row of seed indices ``idx`` (shape ``(resamples, seeds)``); empty with one seed."""
    import numpy as np

    if len(ref) < 2:
        return np.empty(0), np.empty(0)
    sizes = {len(p[0]) for p in ref} | {len(p[0]) for p in oth}
    if len(sizes) == 1:  # every run has the same number of flows: one vectorised pass
        out = []
        for k in (0, 1):
            a = np.stack([p[k] for p in ref])[idx].reshape(len(idx), -1)
            b = np.stack([p[k] for p in oth])[idx].reshape(len(idx), -1)
            if k == 0:
                with np.errstate(all="ignore"):
                    med = np.nanmedian if np.isnan(a).any() or np.isnan(b).any() else np.median
                    va, vb = med(a, axis=1), med(b, axis=1)
            else:
                va, vb = a.mean(axis=1), b.mean(axis=1)
            with np.errstate(all="ignore"):
                out.append(va / vb)
        return out[0], out[1]
    fr, xr = [], []
    for row in idx:
        a, b = _pooled(ref, row), _pooled(oth, row)
        fr.append(_ratio(a[0], b[0]))
        xr.append(_ratio(a[1], b[1]))
    return np.asarray(fr, dtype=float), np.asarray(xr, dtype=float)


def _ratio(a: float, b: float) -> float:
    if b == 0:
        return float("nan") if a == 0 else float("inf")
    return a / b


def _as_cells(data) -> dict:
    """``{(part, profile, clock, value, workload, label): {seed: (fct array, retransmissions
    array)}}`` from the cells themselves or from a flows table (:attr:`StudyResult.flows`)."""

    if isinstance(data, dict):
        return data
    cells: dict = {}
    if data is None or not len(data):
        return cells
    keys = ["part", "profile", "clock", "value", "workload", "label", "seed"]
    for k, g in data.groupby(keys, sort=True):
        cells.setdefault(tuple(k[:6]), {})[int(k[6])] = (
            g["fct_s"].to_numpy(dtype=float),
            g["retransmissions"].to_numpy(dtype=float),
        )
    return cells


def gain_table(cells):
    """The sensitivity table: for every profile, burst setting, workload and baseline, the
    median FCT and retransmissions per flow of FASOR and of the baseline (flows pooled over
    the seeds), their ratios (FASOR / baseline: below 1 FASOR is faster / retransmits less)
    and bootstrap intervals of the ratios (seeds resampled, paired)."""
    import numpy as np
    import pandas as pd

    cols = [
        "profile", "clock", "t_b_s", "burst_packets", "t_l_s", "workload", "baseline", "seeds",
        "fasor_fct_median_s", "baseline_fct_median_s", "fct_ratio", "fct_ratio_lo", "fct_ratio_hi",
        "fasor_retx_per_flow", "baseline_retx_per_flow", "retx_ratio", "retx_ratio_lo", "retx_ratio_hi",
        "default_setting",
    ]  # fmt: skip
    cells = _as_cells(cells)
    rows = []
    lo_q, hi_q = (1 - INTERVAL) / 2 * 100, (1 + INTERVAL) / 2 * 100
    points = sorted({k[1:5] for k in cells if k[0] == "gain"})
    for profile, clock, value, workload in points:
        per = {
            label: cells.get(("gain", profile, clock, value, workload, label), {})
            for label in (REFERENCE, *BASELINES)
        }
        for base in BASELINES:
            seeds = sorted(set(per[REFERENCE]) & set(per[base]))
            if not seeds:
                continue
            ref = [per[REFERENCE][s] for s in seeds]
            oth = [per[base][s] for s in seeds]
            all_idx = range(len(seeds))
            rf, rr = _pooled(ref, all_idx)
            bf, br = _pooled(oth, all_idx)
            # Paired bootstrap over seeds; its generator is seeded by the row, so the table
            # is the same whatever order the rows are built in.
            key = f"{profile}|{clock}|{value!r}|{workload}|{base}".encode()
            rng = np.random.default_rng(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))
            fr_a, xr_a = _bootstrap(ref, oth, rng.integers(0, len(seeds), (BOOTSTRAP, len(seeds))))
            fr_a, xr_a = fr_a[np.isfinite(fr_a)], xr_a[np.isfinite(xr_a)]
            rows.append(
                {
                    "profile": profile,
                    "clock": clock,
                    "t_b_s": float(value) if clock == "time" else float("nan"),
                    "burst_packets": float(value) if clock == "packet" else float("nan"),
                    "t_l_s": low_sojourn(profile, float(value)) if clock == "time" else float("nan"),
                    "workload": workload,
                    "baseline": base,
                    "seeds": len(seeds),
                    "fasor_fct_median_s": rf,
                    "baseline_fct_median_s": bf,
                    "fct_ratio": _ratio(rf, bf),
                    "fct_ratio_lo": float(np.percentile(fr_a, lo_q)) if fr_a.size else float("nan"),
                    "fct_ratio_hi": float(np.percentile(fr_a, hi_q)) if fr_a.size else float("nan"),
                    "fasor_retx_per_flow": rr,
                    "baseline_retx_per_flow": br,
                    "retx_ratio": _ratio(rr, br),
                    "retx_ratio_lo": float(np.percentile(xr_a, lo_q)) if xr_a.size else float("nan"),
                    "retx_ratio_hi": float(np.percentile(xr_a, hi_q)) if xr_a.size else float("nan"),
                    "default_setting": Variant(clock, float(value)).is_default,
                }
            )
    df = pd.DataFrame(rows, columns=cols)
    order = {"time": 0, "packet": 1}
    return df.sort_values(
        by=["profile", "clock", "workload", "baseline", "t_b_s", "burst_packets"],
        key=lambda s: s.map(order) if s.name == "clock" else s,
        kind="stable",
    ).reset_index(drop=True)


def transfer_table(cells):
    """Transfer FCTs per profile, burst setting and transfer: median, p25 and p75 of the
    transfers' FCT over the seeds (every flow of every seed), retransmissions per flow."""
    import numpy as np
    import pandas as pd

    cols = [
        "profile", "clock", "t_b_s", "burst_packets", "transfer", "workload", "runs", "flows",
        "fct_median_s", "fct_p25_s", "fct_p75_s", "retx_per_flow", "default_setting",
    ]  # fmt: skip
    cells = _as_cells(cells)
    rows = []
    for key in sorted(k for k in cells if k[0] == "transfer"):
        _, profile, clock, value, workload, label = key
        per = cells[key]
        fct = np.concatenate([f for f, _ in per.values()]) if per else np.empty(0)
        retx = np.concatenate([r for _, r in per.values()]) if per else np.empty(0)
        fct = fct[~np.isnan(fct)]
        q = np.percentile(fct, [25, 50, 75]) if fct.size else [float("nan")] * 3
        rows.append(
            {
                "profile": profile,
                "clock": clock,
                "t_b_s": float(value) if clock == "time" else float("nan"),
                "burst_packets": float(value) if clock == "packet" else float("nan"),
                "transfer": label,
                "workload": workload,
                "runs": len(per),
                "flows": int(retx.size),
                "fct_median_s": float(q[1]),
                "fct_p25_s": float(q[0]),
                "fct_p75_s": float(q[2]),
                "retx_per_flow": float(retx.mean()) if retx.size else float("nan"),
                "default_setting": Variant(clock, float(value)).is_default,
            }
        )
    return pd.DataFrame(rows, columns=cols)


# -- conclusions, figure, outputs -------------------------------------------------------------


#: The two metrics of the gain table: (name, ratio column).
METRICS = (("median FCT", "fct_ratio"), ("retransmissions per flow", "retx_ratio"))


def _side(lo: float, hi: float) -> int:
    """-1 if the interval lies below 1, +1 above, 0 if it contains 1 (or is unknown)."""
    if math.isfinite(hi) and hi < 1:
        return -1
    if math.isfinite(lo) and lo > 1:
        return 1
    return 0


def conclusions(gains) -> list[dict]:
    """How each conclusion at the simulator's default (time clock, T_B = 1 s) fares at the
    other burst settings: one dict per profile, workload, baseline, metric and clock with
    ``at_default`` (ratio, with ``default_lo`` / ``default_hi``), ``direction`` (-1: FASOR
    lower at the default, +1: higher; by the point estimate), the ratio's ``min`` / ``max``
    over the clock's settings, and the settings (T_B in s or burst length in packets) where
    the interval lies on the default's side of 1 (``same``), on the other side
    (``reversed``) or contains 1 (``unclear``), and a one-line ``verdict``."""
    out = []
    if gains is None or not len(gains):
        return out
    for (profile, workload, base), sub in gains.groupby(["profile", "workload", "baseline"], sort=True):
        time_rows = sub[sub["clock"] == "time"]
        default = time_rows[time_rows["default_setting"].astype(bool)]
        for metric, col in METRICS:
            if len(default):
                at, at_lo, at_hi = (float(default[c].iloc[0]) for c in (col, f"{col}_lo", f"{col}_hi"))
            else:
                at = at_lo = at_hi = float("nan")
            direction = (-1 if at < 1 else 1) if math.isfinite(at) and at != 1 else 0
            for clock, rows in (("time", time_rows), ("packet", sub[sub["clock"] == "packet"])):
                xcol = "t_b_s" if clock == "time" else "burst_packets"
                same, unclear, reversed_ = [], [], []
                vals = []
                for _, r in rows.sort_values(xcol).iterrows():
                    v = float(r[col])
                    if math.isfinite(v):
                        vals.append(v)
                    side = _side(float(r[f"{col}_lo"]), float(r[f"{col}_hi"]))
                    x = float(r[xcol])
                    if direction == 0 or side == 0:
                        unclear.append(x)
                    elif side == direction:
                        same.append(x)
                    else:
                        reversed_.append(x)
                if not vals:
                    continue
                n = len(same) + len(unclear) + len(reversed_)
                if direction == 0:
                    verdict = "no direction at the default"
                elif reversed_:
                    verdict = f"reverses at {_xs(reversed_, clock)}"
                elif unclear:
                    verdict = f"holds at {len(same)} of {n} settings, unclear at {_xs(unclear, clock)}"
                else:
                    verdict = "holds at every setting"
                out.append(
                    {
                        "profile": profile,
                        "workload": workload,
                        "baseline": base,
                        "metric": metric,
                        "clock": clock,
                        "at_default": at,
                        "default_lo": at_lo,
                        "default_hi": at_hi,
                        "direction": direction,
                        "min": min(vals),
                        "max": max(vals),
                        "same": same,
                        "unclear": unclear,
                        "reversed": reversed_,
                        "verdict": verdict,
                    }
                )
    return out


def _xs(values: Sequence[float], clock: str) -> str:
    unit = "s" if clock == "time" else "packets"
    return (", ".join(f"{v:g}" for v in values) + f" {unit}") if values else "none"


def figure(res: StudyResult):
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
            _log_x(ax, xs[clock])
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
            _log_x(ax, xs[clock])
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
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    return fig


def _log_x(ax, values: Sequence[float]) -> None:
    """A log x axis with a tick at each value and no minor ticks (matplotlib's automatic log
    ticks cost most of the figure's drawing time)."""
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(list(values)))
    ax.xaxis.set_major_formatter(FixedFormatter([f"{v:g}" for v in values]))
    ax.xaxis.set_minor_locator(NullLocator())
    if len(values) == 1:
        ax.set_xlim(values[0] / 2, values[0] * 2)
    ax.grid(True, alpha=0.3)


def _fmt(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:.2f}"


def summary_markdown(res: StudyResult, command: str = "coapcc reproduce sensitivity") -> str:
    """The short summary (Markdown): what ran, and how much each conclusion depends on the
    burst parameter."""
    st = res.study
    tb = [v.value for v in st.variants if v.clock == "time"]
    bp = [v.value for v in st.variants if v.clock == "packet"]
    pct = f"{INTERVAL:.0%}"
    lines = [
        "# Error-model sensitivity of the FASOR paper's error runs",
        "",
        f"Command: `{command}`. Base: the `errors` block of `fasor18` "
        f"({', '.join(f'{k} = {v}' for k, v in sorted(st.base.items()))}); algorithms "
        f"{', '.join(f'{k} (`{v}`)' for k, v in st.algorithms.items())}; workloads {', '.join(st.workloads)}; "
        f"{len(st.seeds)} seeds per point, shared by every algorithm and setting.",
        "",
        f"Time clock: mean burst sojourn T_B in {', '.join(f'{x:g}' for x in tb)} s, each profile keeping its "
        "state loss rates and average loss (T_L = T_B·(1 − π_B)/π_B). "
        f"Packet clock: mean burst length {', '.join(f'{x:g}' for x in bp) or 'none'} packets. "
        f"The simulator's default is the time clock with T_B = {DEFAULT_T_B:g} s "
        f"({DEFAULT_BURST_PACKETS:g} packets with the packet clock).",
        "",
        "Ratios are FASOR / baseline over the flows of every seed (below 1: FASOR completes faster or "
        f"retransmits less), with {pct} paired bootstrap intervals over the seeds. A conclusion drawn at "
        "the default (T_B = 1 s) *holds* at a setting whose interval lies on the same side of 1, is "
        "*reversed* where it lies on the other side and *unclear* where it contains 1.",
        "",
        "## How much each conclusion depends on the burst parameter",
        "",
        f"| profile | workload | vs | metric | at T_B = 1 s ({pct}) | time clock: holds / unclear / reversed "
        "(T_B, s) | packet clock: holds / unclear / reversed (packets) |",
        "|---|---|---|---|---|---|---|",
    ]
    conc = conclusions(res.gains)
    keyed: dict = {}
    for c in conc:
        keyed.setdefault((c["profile"], c["workload"], c["baseline"], c["metric"]), {})[c["clock"]] = c

    def sets(c) -> str:
        if not c:
            return "n/a"
        return " / ".join(", ".join(f"{v:g}" for v in c[k]) or "–" for k in ("same", "unclear", "reversed"))

    for (profile, workload, base, metric), d in keyed.items():
        t = d.get("time") or d.get("packet")
        at = f"{_fmt(t['at_default'])} ({_fmt(t['default_lo'])}–{_fmt(t['default_hi'])})"
        lines.append(
            f"| {profile} | {workload} | {base} | {metric} | {at} | {sets(d.get('time'))} | {sets(d.get('packet'))} |"
        )
    lines += ["", "## Verdicts", ""]
    for metric, _ in METRICS:
        for base in BASELINES:
            cases = [c for c in conc if c["metric"] == metric and c["baseline"] == base]
            if not cases:
                continue
            defaults = {(c["profile"], c["workload"]): c for c in cases if c["clock"] == "time"}
            lower = [k for k, c in defaults.items() if c["direction"] < 0]
            clear = [k for k, c in defaults.items() if _side(c["default_lo"], c["default_hi"]) != 0]
            text = (
                f"- **{metric}, FASOR vs {base}**: at the default FASOR's is lower in {len(lower)} of "
                f"{len(defaults)} profile/workload cases ({len(clear)} with an interval clear of 1)."
            )
            rev = [
                f"{c['profile']}/{c['workload']} at {_xs(c['reversed'], c['clock'])}"
                for c in cases
                if c["reversed"]
            ]
            unc = [
                f"{c['profile']}/{c['workload']} at {_xs(c['unclear'], c['clock'])}"
                for c in cases
                if c["unclear"]
            ]
            text += f" Reversed: {'; '.join(rev) if rev else 'nowhere'}."
            text += f" Unclear: {'; '.join(unc) if unc else 'nowhere'}."
            lines.append(text)
    lines += ["", "## Transfers (Block2 over UDP, CoAP over TCP)", ""]
    if res.transfers is not None and len(res.transfers):
        lines += [
            "| profile | clock | setting | transfer | median FCT (s) | p25–p75 (s) |",
            "|---|---|---|---|---|---|",
        ]
        for _, r in res.transfers.iterrows():
            setting = f"{r['t_b_s']:g} s" if r["clock"] == "time" else f"{r['burst_packets']:g} packets"
            lines.append(
                f"| {r['profile']} | {r['clock']} | {setting} | {r['transfer']} | {_fmt(r['fct_median_s'])} | "
                f"{_fmt(r['fct_p25_s'])}–{_fmt(r['fct_p75_s'])} |"
            )
    if res.skipped:
        lines.append("")
        for label, reason in res.skipped:
            lines.append(f"- **{label}**: skipped, the simulator rejects it: {reason}")
    if not (res.transfers is not None and len(res.transfers)) and not res.skipped:
        lines.append("No transfer rows were listed.")
    if res.failed:
        lines += ["", f"{len(res.failed)} runs failed; the tables cover the others:", ""]
        for task, err in res.failed[:10]:
            lines.append(f"- {task['label']}, {task['profile']}, {task['clock']} {task['value']:g}: {err}")
    lines += ["", f"{len(res.runs)} runs ({res.cpu_s:.1f} s of simulator time).", ""]
    return "\n".join(lines)


def _inline(text: str) -> str:
    """Escaped text with Markdown's ``**bold**``, ``*emphasis*`` and backquoted code."""
    import re

    out = html.escape(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    out = re.sub(r"\*(.+?)\*", r"<i>\1</i>", out)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", out)


def _html(markdown: str, figure_png: bytes) -> str:
    """A self-contained HTML page of the summary: the figure inline and the Markdown as text
    (tables rendered as tables)."""
    import base64

    body = []
    rows: list[list[str]] = []

    def flush():
        if rows:
            head, *rest = rows
            body.append(
                "<table border=1 cellpadding=3 style='border-collapse:collapse;font-size:90%'><tr>"
                + "".join(f"<th>{html.escape(c)}</th>" for c in head)
                + "</tr>"
                + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in rest)
                + "</table>"
            )
            rows.clear()

    for line in markdown.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= {"-"} for c in cells):
                rows.append(cells)
            continue
        flush()
        if line.startswith("# "):
            body.append(f"<h1>{html.escape(line[2:])}</h1>")
            body.append(
                f"<img alt='sensitivity figure' style='max-width:100%' "
                f"src='data:image/png;base64,{base64.b64encode(figure_png).decode()}'>"
            )
        elif line.startswith("## "):
            body.append(f"<h2>{html.escape(line[3:])}</h2>")
        elif line.startswith("- "):
            body.append(f"<li>{_inline(line[2:])}</li>")
        elif line.strip():
            body.append(f"<p>{_inline(line)}</p>")
    flush()
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>coapcc error-model sensitivity</title></head>"
        "<body style='font-family:sans-serif;max-width:1200px'>" + "\n".join(body) + "</body></html>\n"
    )


def write_outputs(
    res: StudyResult, out: str | os.PathLike, command: str = "coapcc reproduce sensitivity"
) -> Path:
    """Write ``sensitivity.csv``, ``transfers.csv``, ``runs.csv``, ``sensitivity.png`` /
    ``.svg``, ``summary.md`` and ``summary.html`` into ``out``; returns the HTML's path."""
    import matplotlib

    from .figures import save

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    res.gains.to_csv(out / "sensitivity.csv", index=False, float_format="%.6g")
    res.transfers.to_csv(out / "transfers.csv", index=False, float_format="%.6g")
    res.runs.to_csv(out / "runs.csv", index=False, float_format="%.6g")
    with matplotlib.rc_context({"svg.hashsalt": "coapcc-sensitivity"}):
        fig = figure(res)
        images = save(fig, out / "sensitivity", formats=("png", "svg"))
    md = summary_markdown(res, command)
    (out / "summary.md").write_text(md)
    page = out / "report.html"
    page.write_text(_html(md, images["png"]))
    return page
