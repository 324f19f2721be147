"""The makarem21 study as one tidy table: what its claims and its chapter 5-6 figures read.

:func:`study_table` runs the thesis's checks into one pandas DataFrame, one row per run (or
per model point), with a ``part`` column saying which kind of row it is:

========== ============================================================================
``part``   rows and columns (besides ``part`` and ``config_hash``)
========== ============================================================================
table-4.1  one per row of the thesis's Table 4.1 (r = 3): ``row, p, q, k, h, r``, the models'
           ``P_L_exact, P_L_approx, P_L_closed`` and the printed ``paper_exact, paper_approx``
model      the chapter 3-4 curves: ``model`` (bernoulli, gilbert), ``p, q, r, rto, rtt`` and
           ``P_L, D_s, GP, O, O_S``
rtt        one per (study, scenario, algorithm, seed): ``study`` (compare, weights, k-normal,
           k-spurious, or ``sensitivity``), ``variant`` (thesis, or the named choice changed),
           ``scenario, cc, cc_spec, setting, seed``, the counts ``spurious, spurious_messages,
           gave_up, late_acks, transmissions, messages``, ``rmse_ms, mean_rto_ms,
           mean_rtt_ms`` and the replay options ``late_ack, ack_rtt, retransmit_timer,
           rtt_consumption``
resbw      one per (set, algorithm, mean residual bandwidth, repetition): ``set`` (bad-only,
           set1, set2, variability, stable), ``variant``, ``cc, cc_spec, family`` (backoff,
           rate, bdp), ``mean_resbw, half_width, repetition, seed``, ``goodput_pps, overhead,
           app_loss_ratio, transmissions, delivered, dropped, lost, spurious, mean_resbw_pps,
           gp_ratio`` (goodput / mean residual bandwidth) and the choices ``late_ack, ack_rtt,
           rtt_draw, loss_rule``
========== ============================================================================

:func:`write_dataset` stores it as a results dataset (``runs/`` and ``flows/`` Parquet files,
the same rows in both), so that ``coapcc validate makarem21 --dataset DIR`` judges it with
the claims of ``experiments/claims/makarem21.toml`` and :mod:`coapcc.models.claims`.

Every setting comes from the experiment file (``makarem21.toml``): the chapter 5 algorithms,
scenarios, seeds and studies (``[rtt_scenarios]``), the chapter 6 algorithms and sets
(``[resbw]``, including ``stable`` for the steady state (6.1)), and the named choices the
sensitivity rows change (``[sensitivity]``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from pathlib import Path

import numpy as np

from . import loss, studies

__all__ = [
    "TABLE_4_1",
    "cc_label",
    "family",
    "study_table",
    "table_4_1",
    "model_curves",
    "rtt_rows",
    "resbw_rows",
    "sensitivity_rows",
    "write_dataset",
]

#: The thesis's Table 4.1 (r = 3): p, q, k, h, exact P_L, approximate P_L (printed).
TABLE_4_1 = [
    (0.1, 0.5, 1.0, 0.0, 0.013158, 0.013158),
    (0.1, 0.5, 0.95, 0.05, 0.013129, 0.011279),
    (0.1, 0.5, 0.75, 0.25, 0.018239, 0.016534),
    (0.1, 0.5, 0.4, 0.4, 0.129599, 0.129599),
    (0.1, 0.5, 0.9, 0.4, 0.003700, 0.002897),
    (0.1, 0.1, 0.75, 0.25, 0.096715, 0.090301),
    (0.1, 0.05, 0.75, 0.25, 0.151292, 0.146092),
    (0.1, 0.8, 0.75, 0.25, 0.009399, 0.009321),
    (0.4, 0.6, 0.75, 0.25, 0.041006, 0.041006),
    (0.75, 0.25, 0.75, 0.25, 0.152588, 0.152588),
]

_BACKOFF = ("default", "cocoa-plus", "pcocoa", "cocoa-4state", "cocoa", "makarem-rto")
_RATE = ("idc-coap", "mbc-coap")


def cc_label(spec: str) -> str:
    """A short label: the name and any parameter beside the ``makarem2021`` preset
    (``"idc-coap:preset=makarem2021,iw=1.1"`` -> ``"idc-coap iw=1.1"``)."""
    name, _, params = spec.partition(":")
    extra = [p for p in params.split(",") if p and p != "preset=makarem2021"]
    return " ".join([name, *extra])


def family(spec: str) -> str:
    """``backoff``, ``rate`` or ``bdp`` (the chapter 6 grouping)."""
    name = spec.partition(":")[0]
    if name in _RATE or name.startswith("idc-coap"):
        return "rate"
    if name == "bdp-coap":
        return "bdp"
    return "backoff"


def _pmap(fn, items) -> list:
    """``[fn(x) for x in items]``, on a thread per core: the Rust runs release the GIL, and
    each is a pure function of its arguments, so the result (in order) is the same."""
    items = list(items)
    workers = min(len(items), os.cpu_count() or 1)
    if workers <= 1:
        return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers) as ex:
        return list(ex.map(fn, items))


def _hash(row: dict) -> str:
    key = json.dumps({k: row[k] for k in sorted(row) if not k.startswith("_")}, sort_keys=True, default=str)
    return hashlib.sha256(key.encode()).hexdigest()[:20]


# -- chapters 3 and 4 -------------------------------------------------------------------------


def table_4_1() -> list[dict]:
    """Table 4.1's rows: the exact 2-D chain, the approximate 1-D chain and the closed form
    (4.25) against the printed values (r = 3)."""
    rows = []
    for i, (p, q, k, h, ex, ap) in enumerate(TABLE_4_1, 1):
        rows.append(
            {
                "part": "table-4.1",
                "row": i,
                "p": p,
                "q": q,
                "k": k,
                "h": h,
                "r": 3,
                "P_L_exact": float(loss.ge(p, q, k, h, r=3, T=2.5)["P_L"]),
                "P_L_approx": float(loss.ge_approx(p, q, k, h, r=3, T=2.5)["P_L"]),
                "P_L_closed": float(loss.ge_loss_ratio_closed(p, q, k, h, 3)),
                "paper_exact": ex,
                "paper_approx": ap,
            }
        )
    return rows


def model_curves(cfg: dict) -> list[dict]:
    """The chapter 3 curves over the Table 3.3/3.4 ranges: each loss model, loss rate, r and
    RTO."""
    m = cfg["models"]
    rows = []
    for name, p, r, rto in itertools.product(("bernoulli", "gilbert"), m["loss"], m["r"], m["rto"]):
        kw = dict(r=r, rto=rto, rtt=m["rtt"], Z=m["Z"], Y=m["Y"])
        res = loss.bernoulli(p, **kw) if name == "bernoulli" else loss.gilbert(p, m["gilbert_q"], **kw)
        rows.append(
            {
                "part": "model",
                "model": name,
                "p": p,
                "q": m["gilbert_q"] if name == "gilbert" else 1 - p,
                "r": r,
                "rto": rto,
                "rtt": m["rtt"],
                **{k: float(res[k]) for k in ("P_L", "D_s", "GP", "O", "O_S")},
            }
        )
    return rows


# -- chapter 5 --------------------------------------------------------------------------------


def _rtt_options(over: dict | None) -> dict:
    keys = ("late_ack", "ack_rtt", "retransmit_timer", "rtt_consumption")
    return {k: (over or {}).get(k) for k in keys}


def _rtt_frame(specs, scenarios, seed, length, *, study, variant, over=None, settings=None):
    opts = _rtt_options(over)
    df = studies.rtt_scenarios(specs, scenarios or None, seed=seed, len=length, **opts)
    rows = []
    for rec in df.to_dict("records"):
        spec = rec["cc"]
        row = {
            "part": "rtt",
            "study": study,
            "variant": variant,
            "scenario": int(rec["scenario"]),
            "cc": spec.partition(":")[0],
            "cc_spec": spec,
            "setting": (settings or {}).get(spec, ""),
            "seed": seed,
            **{
                k: rec[k]
                for k in (
                    "spurious",
                    "spurious_messages",
                    "gave_up",
                    "late_acks",
                    "transmissions",
                    "messages",
                    "rmse_ms",
                    "mean_rto_ms",
                    "mean_rtt_ms",
                )
            },
            "late_ack": opts["late_ack"] or "sample",
            "ack_rtt": opts["ack_rtt"] or "copy",
            "retransmit_timer": opts["retransmit_timer"] or "estimate",
            "rtt_consumption": opts["rtt_consumption"] or "per-message",
        }
        rows.append(row)
    return rows


def rtt_rows(cfg: dict, seed: int) -> list[dict]:
    """The chapter 5 comparison (every algorithm, scenario and seed) and the weight and K
    studies (first seed)."""
    c = cfg["rtt_scenarios"]
    ccs = [s for s in c["cc"] if studies.available(s)]
    length = c.get("len")
    jobs = [
        ((ccs, c.get("scenarios"), seed + i, length), dict(study="compare", variant="thesis"))
        for i in range(int(c.get("seeds", 1)))
    ]
    for st in c.get("study", []):
        base = st["cc"]
        keys = list(st["vary"])
        specs, settings = [], {}
        for combo in itertools.product(*(st["vary"][k] for k in keys)):
            sep = "," if ":" in base else ":"
            spec = base + sep + ",".join(f"{k}={v}" for k, v in zip(keys, combo))
            if studies.available(spec):
                specs.append(spec)
                settings[spec] = ", ".join(f"{k}={v}" for k, v in zip(keys, combo))
        if specs:
            jobs.append(
                (
                    (specs, st.get("scenarios"), seed, length),
                    dict(study=st["name"], variant="thesis", settings=settings),
                )
            )
    return [row for part in _pmap(lambda j: _rtt_frame(*j[0], **j[1]), jobs) for row in part]


# -- chapter 6 --------------------------------------------------------------------------------


def _resbw_row(spec, set_name, variant, mean, hw, rep, seed, r) -> dict:
    return {
        "part": "resbw",
        "set": set_name,
        "variant": variant,
        "cc": cc_label(spec),
        "cc_spec": spec,
        "family": family(spec),
        "mean_resbw": float(mean),
        "half_width": float(hw),
        "repetition": rep,
        "seed": seed,
        **{
            k: float(r[k])
            for k in (
                "goodput_pps",
                "overhead",
                "app_loss_ratio",
                "transmissions",
                "delivered",
                "dropped",
                "lost",
                "spurious",
                "mean_resbw_pps",
            )
        },
        "gp_ratio": float(r["goodput_pps"]) / float(r["mean_resbw_pps"])
        if r["mean_resbw_pps"] > 0
        else np.nan,
        # The choices the run used, as the simulator resolved them.
        **{k: r[k] for k in _RESBW_CHOICES},
    }


#: The residual-bandwidth simulator's named choices (``studies.resbw`` options).
_RESBW_CHOICES = ("late_ack", "ack_rtt", "rtt_draw", "loss_rule")


def _curve(specs, points, *, set_name, variant, reps, seed, common, opts=None) -> list[dict]:
    """``points``: (mean, half_width, resbw distribution) triples; ``opts`` override the
    choices of ``common``."""
    kw = {**common, **(opts or {})}
    jobs = [(mean, hw, dist, spec, rep) for mean, hw, dist in points for spec in specs for rep in range(reps)]

    def one(job):
        mean, hw, dist, spec, rep = job
        r = studies.resbw(spec, dist, seed=seed + rep, **kw)
        return _resbw_row(spec, set_name, variant, mean, hw, rep, seed + rep, r)

    return _pmap(one, jobs)


def _choices(c: dict) -> dict:
    """The experiment's ``[resbw]`` choices (``loss_rule``, ...); absent ones keep the
    simulator's defaults."""
    return {k: c[k] for k in _RESBW_CHOICES if k in c}


def _uniform(mean: float, hw: float) -> str:
    return f"uniform:{max(0.0, mean - hw):g},{mean + hw:g}"


def resbw_rows(cfg: dict, seed: int, *, variant: str = "thesis", opts: dict | None = None) -> list[dict]:
    """The chapter 6 curves: Table 6.1 (bad periods only), the two Table 6.2 sets, the
    high-variability runs and the stable-bandwidth runs of (6.1). ``opts`` change the
    experiment's choices (e.g. ``{"loss_rule": "rate-check"}``); the rows carry ``variant``."""
    c = cfg["resbw"]
    ccs = [s for s in c["cc"] if studies.available(s)]
    reps = int(c["repetitions"])
    base = {"rtt_ms": c["rtt_ms"], "duration_s": float(c["duration_s"]), **_choices(c), **(opts or {})}
    hw = c["half_width"]
    bo = c["bad_only"]
    rows = _curve(
        ccs,
        [(m, hw, _uniform(m, hw)) for m in bo["means"]],
        set_name="bad-only",
        variant=variant,
        reps=reps,
        seed=seed,
        common={**base, "bad_mean_s": bo["bad_mean_s"]},
    )
    for s in c.get("sets", []):
        rows += _curve(
            ccs,
            [(m, hw, _uniform(m, hw)) for m in c["good_bad_means"]],
            set_name=s["name"],
            variant=variant,
            reps=reps,
            seed=seed,
            common={
                **base,
                "good": c["good"],
                "good_mean_s": s["good_mean_s"],
                "bad_mean_s": s["bad_mean_s"],
            },
        )
    v = c.get("variability")
    if v:
        rows += _curve(
            ccs,
            [(v["mean"], w, _uniform(v["mean"], w)) for w in v["half_widths"]],
            set_name="variability",
            variant=variant,
            reps=reps,
            seed=seed,
            common={**base, "bad_mean_s": bo["bad_mean_s"]},
        )
    st = c.get("stable")
    if st:
        specs = [s for s in st["cc"] if studies.available(s)]
        rows += _curve(
            specs,
            [(m, 0.0, f"fixed:{m:g}") for m in st["means"]],
            set_name="stable",
            variant=variant,
            reps=1,
            seed=seed,
            common={
                **base,
                "duration_s": float(st.get("duration_s", c["duration_s"])),
                "bad_mean_s": bo["bad_mean_s"],
            },
        )
    return rows


# -- sensitivity to the named choices ---------------------------------------------------------


def sensitivity_rows(cfg: dict, seed: int) -> list[dict]:
    """Rows with one named choice changed (``[sensitivity]`` of the experiment file): chapter 5
    replays (``variant`` = the choice, ``study = "sensitivity"``), the whole chapter 6 study
    under each other reading of ``readings`` (every set, as :func:`resbw_rows`), and chapter 6
    bad-only curves for the ``resbw`` entries (``set = "bad-only"``, one repetition)."""
    sens = cfg.get("sensitivity", {})
    rows: list[dict] = []
    c5 = cfg["rtt_scenarios"]
    ccs5 = [s for s in c5["cc"] if studies.available(s)]

    def frame(v):
        over = {k: v[k] for k in v if k != "name"}
        return _rtt_frame(
            ccs5, c5.get("scenarios"), seed, c5.get("len"), study="sensitivity", variant=v["name"], over=over
        )

    rows += [row for part in _pmap(frame, sens.get("rtt", [])) for row in part]
    c6 = cfg["resbw"]
    bo = c6["bad_only"]
    hw = c6["half_width"]
    base = dict(
        rtt_ms=c6["rtt_ms"], duration_s=float(c6["duration_s"]), bad_mean_s=bo["bad_mean_s"], **_choices(c6)
    )
    for v in sens.get("readings", []):
        # The whole chapter 6 study under another reading (every set, algorithm and repetition).
        rows += resbw_rows(cfg, seed, variant=v["name"], opts={k: v[k] for k in _RESBW_CHOICES if k in v})
    for v in sens.get("resbw", []):
        specs = [s for s in v["cc"] if studies.available(s)]
        opts = {k: v[k] for k in _RESBW_CHOICES if k in v}
        rows += _curve(
            specs,
            [(m, hw, _uniform(m, hw)) for m in v.get("means", bo["means"])],
            set_name=v.get("set", "bad-only"),
            variant=v["name"],
            reps=1,
            seed=seed,
            common=base,
            opts=opts,
        )
    return rows


def study_table(cfg: dict, seed: int, *, parts=("models", "rtt", "resbw", "sensitivity"), log=None):
    """Everything above as one DataFrame (rows in a fixed order; ``config_hash`` unique)."""
    import sys
    import time

    import pandas as pd

    log = log or sys.stderr
    steps = {
        "models": lambda: table_4_1() + model_curves(cfg),
        "rtt": lambda: rtt_rows(cfg, seed),
        "resbw": lambda: resbw_rows(cfg, seed),
        "sensitivity": lambda: sensitivity_rows(cfg, seed),
    }
    rows: list[dict] = []
    for name in parts:
        t = time.perf_counter()
        got = steps[name]()
        print(f"  makarem21 table: {name}: {len(got)} rows in {time.perf_counter() - t:.1f} s", file=log)
        rows += got
    for r in rows:
        r["config_hash"] = _hash(r)
    df = pd.DataFrame(rows)
    if df["config_hash"].duplicated().any():
        raise RuntimeError("makarem21 table: two rows with the same configuration")
    return df


def write_dataset(df, out: str | Path) -> Path:
    """Write ``df`` as a results dataset in ``out`` (``runs/part-00000.parquet`` and the same
    rows in ``flows/``), readable by :func:`coapcc.load_results` and ``coapcc validate
    --dataset``."""
    out = Path(out)
    for sub in ("runs", "flows"):
        (out / sub).mkdir(parents=True, exist_ok=True)
        df.to_parquet(out / sub / "part-00000.parquet", index=False)
    return out
