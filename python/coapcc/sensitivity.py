"""``coapcc reproduce sensitivity [--quick]``: how much the FASOR paper's conclusions under link
errors depend on the unpublished burst sojourn of the ``medium`` and ``high`` error profiles.

The papers publish the two-state profiles' loss rates in each state and their average loss,
not how long a burst lasts. The simulator's default (time clock, mean burst sojourn T_B = 1 s)
is an inference. This study reruns the ``errors`` block of the ``fasor18`` catalogue entry
(10 flows, 2 500 B buffer, 50 exchanges per flow, continuous and random workloads, preset
``helsinki2018``) with Default CoAP, CoCoA and FASOR for

* the **time clock** with T_B from 0.1 s to 5 s, each profile keeping its loss rates and its
  average loss: the burst share π_B = (average − loss_low)/(loss_burst − loss_low) is fixed,
  so the mean low-error sojourn follows, T_L = T_B·(1 − π_B)/π_B (the chain runs as
  ``ge-time:T_L,T_B,K,H``; at T_B = 1 s it is exactly the named profile);
* the **packet clock** (``error_clock = packet``) with several mean burst lengths in packets,

and reports FASOR's median flow completion time and retransmissions per flow relative to each
baseline, per profile, workload and burst setting (``sensitivity.csv``), as a figure
(``sensitivity.png`` / ``.svg``) and a short summary (``summary.md``, ``summary.html``) that
says, for every conclusion, over which burst settings it holds.

Long transfers (a Block2 download over UDP, CoAP over TCP) are listed in :data:`TRANSFERS`
and run over the same error settings when the simulator accepts their workload and
transport; a row the simulator rejects is skipped with its reason in the summary.

Every run uses seeds shared across algorithms and burst settings (paired comparisons), and
the whole study is a pure function of its parameters: the tables are byte-identical from run
to run and for any number of workers. Runs go to a process pool (``--workers``, default: the
CPU count).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import html
import json
import math
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "ALGORITHMS",
    "REFERENCE",
    "BASELINES",
    "T_B_VALUES",
    "BURST_PACKETS",
    "TRANSFERS",
    "Variant",
    "Transfer",
    "Study",
    "StudyResult",
    "profile_chain",
    "ge_time_errors",
    "study",
    "run_study",
    "write_outputs",
    "reproduce_sensitivity",
    "main",
]

#: Algorithms of the comparison (labels -> specs; the preset comes from ``fasor18``).
ALGORITHMS: dict[str, str] = {"Default": "default", "CoCoA": "cocoa", "FASOR": "fasor"}
#: The algorithm whose gain is measured.
REFERENCE = "FASOR"
#: What it is compared with.
BASELINES = ("Default", "CoCoA")
#: Mean burst sojourns of the time-clocked chain, seconds (1 s is the simulator's default).
T_B_VALUES = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
#: Mean burst lengths of the packet-clocked chain, packets (5 is the simulator's default).
BURST_PACKETS = (1.0, 2.0, 5.0, 10.0, 20.0)
#: The simulator's defaults, marked in the figure.
DEFAULT_T_B = 1.0
DEFAULT_BURST_PACKETS = 5.0
#: Replications (seeds) per point: default study and ``--quick``.
SEEDS = 40
QUICK_SEEDS = 8
QUICK_T_B = (0.1, 1.0, 5.0)
QUICK_BURST_PACKETS = (5.0,)
#: Without ``workers``, studies of fewer runs than this run in the calling process.
POOL_MIN_RUNS = 1000
#: Bootstrap resamples (over seeds) of the ratio intervals, and the interval's coverage.
BOOTSTRAP = 400
INTERVAL = 0.90


@dataclass(frozen=True)
class Transfer:
    """A long transfer run over every error setting of the study: ``label`` and the
    :class:`~coapcc.SimConfig` fields it sets on top of the study's base (the ``fasor18``
    error block), e.g. ``{"workload": "bulk:102400", "transport": "tcp", "algorithm":
    "newreno"}``. A row whose fields the simulator rejects is skipped, with the reason."""

    label: str
    fields: Mapping[str, Any]


#: Block2 over UDP and CoAP over TCP, one 102 400-byte GET by one client over the testbed's
#: default 28 200 B buffer (the CoAP-over-TCP study's transfer). A row the simulator rejects is
#: listed as skipped in the summary.
TRANSFERS: tuple[Transfer, ...] = (
    Transfer(
        "Block2 Default",
        {"algorithm": "default", "workload": "bulk:102400", "clients": 1, "buffer_bytes": 28200},
    ),
    Transfer(
        "Block2 CoCoA", {"algorithm": "cocoa", "workload": "bulk:102400", "clients": 1, "buffer_bytes": 28200}
    ),
    Transfer(
        "TCP New Reno",
        {
            "transport": "tcp",
            "algorithm": "newreno",
            "workload": "bulk:102400",
            "clients": 1,
            "buffer_bytes": 28200,
        },
    ),
    Transfer(
        "TCP BBR",
        {
            "transport": "tcp",
            "algorithm": "bbr",
            "workload": "bulk:102400",
            "clients": 1,
            "buffer_bytes": 28200,
        },
    ),
)


@dataclass(frozen=True, order=True)
class Variant:
    """One setting of the unpublished burst parameter: ``clock = "time"`` with mean burst
    sojourn ``value`` seconds, or ``clock = "packet"`` with mean burst length ``value``
    packets."""

    clock: str
    value: float

    @property
    def is_default(self) -> bool:
        return self.value == (DEFAULT_T_B if self.clock == "time" else DEFAULT_BURST_PACKETS)

    def fields(self, profile: str) -> dict:
        """The :class:`~coapcc.SimConfig` fields of ``profile`` under this setting."""
        if self.clock == "time":
            return {"errors": ge_time_errors(profile, self.value), "error_clock": "time"}
        if self.clock == "packet":
            # The chain written out (as for the time clock): under a preset that fitted the
            # profile's burst length (helsinki2018), the named profile would be the fitted one.
            return {"errors": ge_packet_errors(profile, self.value), "error_clock": "packet"}
        raise ValueError(f"unknown error clock {self.clock!r} (valid: time, packet)")

    def label(self) -> str:
        if self.clock == "time":
            return f"T_B = {self.value:g} s"
        return f"{self.value:g}-packet bursts"


# -- the loss chain ---------------------------------------------------------------------------


def profile_chain(profile: str) -> dict:
    """``{"loss_low", "loss_burst", "average", "burst_share"}`` of a two-state profile, as the
    simulator declares it (``coapcc._native.link_schema_json``); ValueError for a profile
    without a two-state chain."""
    from . import _native

    for p in json.loads(_native.link_schema_json())["profiles"]:
        if p["name"] == profile:
            if p.get("kind") != "two_state":
                raise ValueError(f"profile {profile!r} has no two-state chain (kind {p.get('kind')!r})")
            return {
                "loss_low": float(p["loss_low"]),
                "loss_burst": float(p["loss_burst"]),
                "average": float(p["average"]),
                "burst_share": float(p["burst_share"]),
            }
    raise ValueError(f"unknown error profile {profile!r}")


def low_sojourn(profile: str, t_b: float) -> float:
    """T_L that keeps ``profile``'s burst share (hence its average loss) at burst sojourn
    ``t_b``: T_L = T_B·(1 − π_B)/π_B, in the simulator's order of operations (so T_B = 1 s
    gives the named profile's chain bit for bit)."""
    pi_b = profile_chain(profile)["burst_share"]
    return t_b * (1.0 - pi_b) / pi_b


def ge_time_errors(profile: str, t_b: float) -> str:
    """``ge-time:T_L,T_B,K,H`` of ``profile`` with mean burst sojourn ``t_b`` seconds and the
    profile's state loss rates and average loss."""
    if not (isinstance(t_b, (int, float)) and math.isfinite(t_b) and t_b > 0):
        raise ValueError(f"burst sojourn must be a positive number of seconds, got {t_b!r}")
    c = profile_chain(profile)
    return (
        f"ge-time:{low_sojourn(profile, float(t_b))!r},{float(t_b)!r},{c['loss_low']!r},{c['loss_burst']!r}"
    )


def ge_packet_errors(profile: str, burst_packets: float) -> str:
    """``ge:P,R,K,H`` of ``profile`` with mean burst length ``burst_packets`` packets (R =
    1/burst, P = R·π_B/(1 − π_B), in the simulator's order of operations: the named profile's
    packet-clocked chain bit for bit) and the profile's state loss rates."""
    if not (isinstance(burst_packets, (int, float)) and math.isfinite(burst_packets) and burst_packets >= 1):
        raise ValueError(f"burst length must be >= 1 packet, got {burst_packets!r}")
    c = profile_chain(profile)
    r = 1.0 / float(burst_packets)
    p = r * c["burst_share"] / (1.0 - c["burst_share"])
    return f"ge:{p!r},{r!r},{c['loss_low']!r},{c['loss_burst']!r}"


# -- the plan ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Study:
    """What the study runs. :func:`study` builds it from the ``fasor18`` catalogue entry."""

    base: Mapping[str, Any]
    profiles: tuple[str, ...]
    workloads: tuple[str, ...]
    variants: tuple[Variant, ...]
    seeds: tuple[int, ...]
    algorithms: Mapping[str, str] = field(default_factory=lambda: dict(ALGORITHMS))
    transfers: tuple[Transfer, ...] = TRANSFERS
    quick: bool = False

    def tasks(self) -> list[dict]:
        """Every run as a plain dict (picklable): part, profile, variant, workload, label,
        seed and the configuration fields."""
        out = []
        for profile in self.profiles:
            for v in self.variants:
                errs = v.fields(profile)
                key = {"profile": profile, "clock": v.clock, "value": v.value}
                for workload in self.workloads:
                    for label, spec in self.algorithms.items():
                        for seed in self.seeds:
                            cfg = {**self.base, **errs, "workload": workload, "algorithm": spec, "seed": seed}
                            out.append(
                                {"part": "gain", **key, "workload": workload, "label": label, "config": cfg}
                            )
                for t in self.transfers:
                    for seed in self.seeds:
                        cfg = {**self.base, **dict(t.fields), **errs, "seed": seed}
                        wl = str(cfg.get("workload", ""))
                        out.append(
                            {"part": "transfer", **key, "workload": wl, "label": t.label, "config": cfg}
                        )
        return out


def _seeds(base_seed: int, n: int) -> tuple[int, ...]:
    """``n`` seeds derived from ``base_seed`` (shared by every algorithm and setting)."""
    out = []
    for r in range(n):
        material = f"coapcc-sensitivity:{int(base_seed)}:{r}".encode()
        out.append(int.from_bytes(hashlib.sha256(material).digest()[:8], "big") & (2**63 - 1))
    return tuple(out)


def study(
    *,
    quick: bool = False,
    seeds: int | None = None,
    t_b: Sequence[float] | None = None,
    burst_packets: Sequence[float] | None = None,
    transfers: Sequence[Transfer] | None = None,
    base: Mapping[str, Any] | None = None,
    workloads: Sequence[str] | None = None,
    profiles: Sequence[str] | None = None,
    experiment: str = "fasor18",
) -> Study:
    """The study on the ``errors`` block of ``experiment`` (preset, clients, buffer, exchanges,
    profiles and workloads from the catalogue file), with the given burst settings; ``base``
    entries override the block's configuration (tests use fewer exchanges)."""
    from .experiment import find_experiment

    exp = find_experiment(experiment)
    block = next((b for b in exp.blocks if b.name == "errors"), None)
    if block is None:
        raise ValueError(f"{experiment}: no block named 'errors'")
    cfg = {**dict(exp.base), **dict(block.base)}
    cfg.update(base or {})
    n = seeds if seeds is not None else (QUICK_SEEDS if quick else SEEDS)
    if n < 1:
        raise ValueError(f"seeds must be >= 1, got {n}")
    tb = tuple(float(x) for x in (t_b if t_b is not None else (QUICK_T_B if quick else T_B_VALUES)))
    bp = tuple(
        float(x)
        for x in (
            burst_packets if burst_packets is not None else (QUICK_BURST_PACKETS if quick else BURST_PACKETS)
        )
    )
    for x in tb:
        if not (math.isfinite(x) and x > 0):
            raise ValueError(f"burst sojourn must be > 0 s, got {x}")
    for x in bp:
        if not (math.isfinite(x) and x >= 1):
            raise ValueError(f"burst length must be >= 1 packet, got {x}")
    variants = tuple(sorted({Variant("time", x) for x in tb})) + tuple(
        sorted({Variant("packet", x) for x in bp})
    )
    return Study(
        base=cfg,
        profiles=tuple(profiles or block.grid.get("errors", ("medium", "high"))),
        workloads=tuple(workloads or block.grid.get("workload", ("continuous", "random"))),
        variants=variants,
        seeds=_seeds(exp.seed, n),
        transfers=tuple(TRANSFERS if transfers is None else transfers),
        quick=quick,
    )


def check_transfer(t: Transfer, base: Mapping[str, Any]) -> str | None:
    """``None`` if the simulator accepts ``t`` on top of ``base``, else why not (one line)."""
    from .config import SimConfig

    try:
        SimConfig.from_dict({**dict(base), **dict(t.fields)}).validate()
    except (ValueError, TypeError) as e:  # ConfigError is a ValueError
        text = str(e).splitlines()[0] if str(e) else type(e).__name__
        if len(text) > 120 and " (valid: " in text:  # a long list of valid keys
            text = text.split(" (valid: ", 1)[0]
        return text
    return None


# -- running ----------------------------------------------------------------------------------


def _run_task(task: dict) -> dict:
    """One run (in a worker process): the per-flow numbers the tables need."""
    from .simulation import simulate

    try:
        r = simulate(dict(task["config"]))
        raw = r.raw
    except Exception as e:  # noqa: BLE001 - a failed run is reported, never fatal
        return {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
    flows = raw.get("flows", [])
    return {
        "fct": [float("nan") if f.get("fct_s") is None else float(f["fct_s"]) for f in flows],
        "retx": [int(f.get("retransmissions", 0)) for f in flows],
        "failed": sum(int(f.get("failed_exchanges", 0)) for f in flows),
        "truncated": bool(raw.get("truncated", False)),
        "sim_time_s": float(raw.get("sim_time_s", float("nan"))),
    }


@dataclass
class StudyResult:
    """What :func:`run_study` returns."""

    study: Study
    runs: Any  #: pandas DataFrame, one row per run (per-run medians and counts)
    flows: Any  #: pandas DataFrame, one row per flow (fct_s, retransmissions)
    gains: Any  #: pandas DataFrame, the sensitivity table (one row per profile, setting, workload, baseline)
    transfers: Any  #: pandas DataFrame, transfer FCTs per setting (empty if every row was skipped)
    skipped: list[tuple[str, str]]  #: (transfer label, reason) of the rows not run
    failed: list[tuple[dict, str]]  #: (task, error) of runs that failed
    wall_s: float = 0.0
    workers: int = 1


def run_study(st: Study, *, workers: int | None = None, log=None) -> StudyResult:
    """Run every task of ``st`` (on ``workers`` processes; 1 = in this process) and build the
    tables. The result does not depend on ``workers`` or on completion order."""
    import pandas as pd

    log = log or sys.stderr
    t0 = time.perf_counter()
    skipped = []
    ok_transfers = []
    for t in st.transfers:
        reason = check_transfer(t, st.base)
        if reason is None:
            ok_transfers.append(t)
        else:
            skipped.append((t.label, reason))
            print(f"sensitivity: skipping transfer {t.label!r}: {reason}", file=log)
    st_run = dataclasses.replace(st, transfers=tuple(ok_transfers))
    tasks = st_run.tasks()
    if workers is None:  # a pool costs ~0.5 s to start: worth it past a few hundred runs
        workers = (os.cpu_count() or 1) if len(tasks) >= POOL_MIN_RUNS else 1
    workers = max(1, int(workers))
    workers = min(workers, max(1, len(tasks)))
    print(f"sensitivity: {len(tasks)} runs on {workers} worker(s)", file=log, flush=True)
    if workers == 1:
        results = [_run_task(t) for t in tasks]
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        chunk = max(1, len(tasks) // (workers * 8))
        with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as ex:
            results = list(ex.map(_run_task, tasks, chunksize=chunk))
    import numpy as np

    run_rows, failed = [], []
    cells: dict = {}
    flow_cols: dict = {
        k: [] for k in ("part", "profile", "clock", "value", "workload", "label", "seed", "run")
    }
    flow_cols.update(fct_s=[], retransmissions=[])
    for i, (task, res) in enumerate(zip(tasks, results)):
        ident = {k: task[k] for k in ("part", "profile", "clock", "value", "workload", "label")}
        ident["seed"] = task["config"]["seed"]
        if "error" in res:
            failed.append((task, res["error"]))
            continue
        key = tuple(ident[k] for k in ("part", "profile", "clock", "value", "workload", "label"))
        cells.setdefault(key, {})[int(ident["seed"])] = (
            np.asarray(res["fct"], dtype=float),
            np.asarray(res["retx"], dtype=float),
        )
        n = len(res["fct"])
        for k, v in ident.items():
            flow_cols[k].extend([v] * n)
        flow_cols["run"].extend([i] * n)
        flow_cols["fct_s"].extend(res["fct"])
        flow_cols["retransmissions"].extend(res["retx"])
        fct = [x for x in res["fct"] if not math.isnan(x)]
        fct_sorted = sorted(fct)
        run_rows.append(
            {
                **ident,
                "flows": len(res["fct"]),
                "fct_median_s": _median(fct_sorted),
                "retransmissions_per_flow": sum(res["retx"]) / len(res["retx"])
                if res["retx"]
                else float("nan"),
                "failed_exchanges": res["failed"],
                "truncated": res["truncated"],
                "sim_time_s": res["sim_time_s"],
            }
        )
    for task, err in failed:
        print(
            f"sensitivity: run failed ({task['label']}, {task['profile']}, {task['clock']} {task['value']:g}, "
            f"seed {task['config']['seed']}): {err}",
            file=log,
        )
    runs = pd.DataFrame(run_rows)
    flows = pd.DataFrame(flow_cols)
    gains = gain_table(cells, st_run)
    transfers = transfer_table(cells)
    return StudyResult(
        study=st_run,
        runs=runs,
        flows=flows,
        gains=gains,
        transfers=transfers,
        skipped=skipped,
        failed=failed,
        wall_s=time.perf_counter() - t0,
        workers=workers,
    )


def _median(sorted_values: Sequence[float]) -> float:
    n = len(sorted_values)
    if n == 0:
        return float("nan")
    m = n // 2
    return float(sorted_values[m]) if n % 2 else (sorted_values[m - 1] + sorted_values[m]) / 2.0


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


def gain_table(cells, st: Study | None = None):
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
        note += (
            f"; transfers skipped: {', '.join(label for label, _ in res.skipped)} (simulator rejects them)"
        )
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
    lines += ["", f"{len(res.runs)} runs in {res.wall_s:.1f} s on {res.workers} worker(s).", ""]
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
    page = out / "summary.html"
    page.write_text(_html(md, images["png"]))
    return page


def reproduce_sensitivity(
    *,
    quick: bool = False,
    out: str | os.PathLike | None = None,
    workers: int | None = None,
    seeds: int | None = None,
    log=None,
    **kwargs: Any,
) -> Path:
    """Run the study (:func:`study` arguments in ``kwargs``) and write its outputs into
    ``out`` (default ``results/sensitivity/`` or ``results/sensitivity-quick/``); returns the
    summary page's path."""
    log = log or sys.stderr
    st = study(quick=quick, seeds=seeds, **kwargs)
    res = run_study(st, workers=workers, log=log)
    out = Path(out) if out else Path("results") / ("sensitivity-quick" if quick else "sensitivity")
    cmd = "coapcc reproduce sensitivity" + (" --quick" if quick else "")
    page = write_outputs(res, out, cmd)
    print(
        f"sensitivity: {len(res.runs)} runs in {res.wall_s:.1f} s on {res.workers} worker(s); {page}",
        file=log,
    )
    return page


def bench(st: Study, workers: int = 2, out=sys.stdout) -> int:
    """``coapcc reproduce sensitivity --bench``: wall time of the study's runs on one worker
    and on ``workers``, in the same process one after the other (same runs, checked to give
    the same table), and of writing the outputs (tables, figure, summary)."""
    import tempfile

    quiet = open(os.devnull, "w")  # noqa: SIM115 - closed below
    try:
        one = run_study(st, workers=1, log=quiet)
        many = run_study(st, workers=workers, log=quiet)
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            write_outputs(many, tmp)
        t_out = time.perf_counter() - t0
    finally:
        quiet.close()
    same = one.gains.equals(many.gains) and one.transfers.equals(many.transfers)
    n = len(many.runs)
    print(
        f"sensitivity benchmark ({'quick' if st.quick else 'default'} study): {n} runs, {len(st.seeds)} seeds",
        file=out,
    )
    print(f"  1 worker : {one.wall_s:7.2f} s  ({1000 * one.wall_s / max(n, 1):.2f} ms per run)", file=out)
    print(
        f"  {workers} workers: {many.wall_s:7.2f} s  ({1000 * many.wall_s / max(n, 1):.2f} ms per run), "
        f"speed-up {one.wall_s / many.wall_s:.2f}x",
        file=out,
    )
    print(f"  outputs (CSV, PNG+SVG figure, summary): {t_out:.2f} s", file=out)
    print(
        f"  total with {workers} workers: {many.wall_s + t_out:.2f} s; same table on 1 and {workers} workers: {same}",
        file=out,
    )
    return 0 if same else 1


def _floats(text: str) -> list[float]:
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not vals:
        raise argparse.ArgumentTypeError("expected at least one number")
    return vals


def main(argv: list[str]) -> int:
    """``coapcc reproduce sensitivity [--quick] [--out DIR] [--workers N] ...``"""
    p = argparse.ArgumentParser(
        prog="coapcc reproduce sensitivity",
        description="Error-model sensitivity of the FASOR paper's error runs: FASOR vs Default CoAP and CoCoA "
        "for burst sojourns from 0.1 s to 5 s and packet-clocked bursts (figure, CSV, summary).",
    )
    p.add_argument(
        "--quick", action="store_true", help=f"3 sojourns, 1 burst length, {QUICK_SEEDS} seeds (seconds)"
    )
    p.add_argument(
        "--out",
        "-o",
        default=None,
        metavar="DIR",
        help="output folder (default results/sensitivity[-quick]/)",
    )
    p.add_argument(
        "--workers",
        "-j",
        type=int,
        default=None,
        metavar="N",
        help=f"processes (default: CPU count; 1 below {POOL_MIN_RUNS} runs)",
    )
    p.add_argument("--seeds", type=int, default=None, metavar="N", help=f"seeds per point (default {SEEDS})")
    p.add_argument("--t-b", type=_floats, default=None, metavar="S,S,...", help="burst sojourns, seconds")
    p.add_argument(
        "--burst-packets", type=_floats, default=None, metavar="N,N,...", help="packet-clock burst lengths"
    )
    p.add_argument("--no-transfers", action="store_true", help="leave out the Block2 / TCP transfer rows")
    p.add_argument(
        "--bench",
        action="store_true",
        help="time the study's runs on 1 worker and on --workers (default 2), and the outputs; print the figures",
    )
    a = p.parse_args(argv)
    if a.workers is not None and a.workers < 1:
        p.error(f"--workers must be >= 1, got {a.workers}")
    transfers = () if a.no_transfers else None
    if a.bench:
        st = study(
            quick=a.quick, seeds=a.seeds, t_b=a.t_b, burst_packets=a.burst_packets, transfers=transfers
        )
        return bench(st, workers=a.workers or 2)
    try:
        page = reproduce_sensitivity(
            quick=a.quick,
            out=a.out,
            workers=a.workers,
            seeds=a.seeds,
            t_b=a.t_b,
            burst_packets=a.burst_packets,
            transfers=transfers,
        )
    except KeyboardInterrupt:
        print("coapcc reproduce sensitivity: interrupted", file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError) as e:
        print(f"coapcc reproduce sensitivity: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"coapcc reproduce sensitivity: error: {e}", file=sys.stderr)
        return 1
    print(page)
    return 0
