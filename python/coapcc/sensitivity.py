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
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .kinds.sensitivity import (
    DEFAULT_BURST_PACKETS,
    DEFAULT_T_B,
    Variant,
    ge_packet_errors,
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
    "Variant",
    "profile_chain",
    "low_sojourn",
    "ge_time_errors",
    "ge_packet_errors",
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
