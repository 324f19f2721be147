"""``coapcc model bernoulli|gilbert|ge``: the analytical models as a calculator.

Every numeric option takes one value or a comma-separated list; lists span a grid (every
combination), evaluated in one vectorised call. ``--json`` prints an object for one point, a
list of objects for a grid; keys are the thesis's symbols (``P_L``, ``D_s``, ``GP``, ...; see
:mod:`coapcc.models.loss`). ``--simulate N`` also runs the simulator with the same loss
process and timers for N messages and prints both (:mod:`coapcc.models.validate`).

Examples::

    coapcc model bernoulli --p 0.3 --r 4 --rto 2 --rtt 0.2
    coapcc model ge --p 0.1 --q 0.5 --k 0.75 --h 0.25 --r 3 --rto 2 --rtt 0.5 --json
    coapcc model gilbert --p 0.1,0.2,0.3 --q 0.5 --r 4 --rto 2 --rtt 0.2 --simulate 10000
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys

import numpy as np

from . import loss

__all__ = ["main", "evaluate"]

_NEEDS = {"bernoulli": ("p",), "gilbert": ("p", "q"), "ge": ("p", "q", "k", "h")}
_GRID_KEYS = ("p", "q", "k", "h", "r", "rto", "rtt", "f", "b", "D_ow", "Z", "Y")


def _floats(text: str) -> list[float]:
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number or a comma-separated list, got {text!r}"
        ) from None
    if not vals or not all(math.isfinite(v) for v in vals):
        raise argparse.ArgumentTypeError(f"expected finite numbers, got {text!r}")
    return vals


def _ints(text: str) -> list[int]:
    vals = _floats(text)
    if not all(v.is_integer() and v >= 0 for v in vals):
        raise argparse.ArgumentTypeError(f"expected non-negative integers, got {text!r}")
    return [int(v) for v in vals]


def _plain(v):
    v = float(v)
    return None if math.isnan(v) else v


def evaluate(model: str, params: dict) -> list[dict]:
    """Evaluate ``model`` over the grid spanned by ``params`` (lists per key); one dict per
    point with the parameters and every metric (``approx`` holds the 1-D chain for ``ge``)."""
    keys = [k for k in _GRID_KEYS if params.get(k) is not None]
    combos = list(itertools.product(*(params[k] for k in keys)))
    cols = {k: np.array([c[i] for c in combos]) for i, k in enumerate(keys)}
    kw = {k: cols[k] for k in ("rto", "rtt", "f", "b", "D_ow", "Z", "Y") if k in cols}
    kw["r"] = cols["r"].astype(np.int64)
    args = [cols[k] for k in _NEEDS[model]]
    fn = {"bernoulli": loss.bernoulli, "gilbert": loss.gilbert, "ge": loss.ge}[model]
    m = fn(*args, **kw)
    approx = loss.ge_approx(*args, **kw) if model == "ge" else None
    rows = []
    for i, c in enumerate(combos):
        row = {"model": model}
        for k, v in zip(keys, c):
            row[k] = int(v) if k == "r" else v
        row["T"] = float(loss.mean_timeout(cols["rto"][i], cols["f"][i] if "f" in cols else 1.5))
        for key in loss.SCALAR_KEYS + (("required_factor",) if model == "bernoulli" else ()):
            row[key] = _plain(m[key][i])
        row["pi"] = [float(x) for x in m["pi"][i][: int(cols["r"][i]) + 1]]
        if approx is not None:
            row["approx"] = {key: _plain(approx[key][i]) for key in loss.SCALAR_KEYS}
        rows.append(row)
    return rows


def _text(rows: list[dict]) -> str:
    lines = []
    for row in rows:
        head = ", ".join(f"{k}={row[k]}" for k in _GRID_KEYS if k in row)
        lines.append(f"{row['model']} ({head}; T={row['T']:.6g} s)")
        for key in loss.SCALAR_KEYS + ("required_factor",):
            if key in row:
                extra = ""
                if "approx" in row:
                    extra = (
                        f"   (approx 1-D chain: {row['approx'][key]:.6g})"
                        if row["approx"][key] is not None
                        else ""
                    )
                val = row[key]
                lines.append(f"  {key:<16} {val:.6g}{extra}" if val is not None else f"  {key:<16} undefined")
        if "sim" in row:
            s = row["sim"]
            lines.append(
                f"  simulation: {s['messages']} messages, seed {s['seed']} (model vs simulation, 95 % CI)"
            )
            for key in ("P_L", "E_N", "D_s", "D_app", "GP"):
                v = s[key]
                inside = abs(v["sim"] - v["model"]) <= v["ci95"] if math.isfinite(v["ci95"]) else False
                lines.append(
                    f"  {key:<16} model {v['model']:.6g}  sim {v['sim']:.6g} +- {v['ci95']:.3g}"
                    f"  {'within CI' if inside else 'OUTSIDE CI'}"
                )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="coapcc model",
        description="Markov models of CoAP reliability (Makarem 2021): loss ratio, delays, goodput, overheads.",
    )
    ap.add_argument("model", choices=("bernoulli", "gilbert", "ge"))
    ap.add_argument("--p", type=_floats, required=True, help="loss probability (bernoulli) or P(G->B)")
    ap.add_argument("--q", type=_floats, help="P(B->G) (gilbert, ge)")
    ap.add_argument("--k", type=_floats, help="success probability in the Good state (ge)")
    ap.add_argument("--h", type=_floats, help="success probability in the Bad state (ge)")
    ap.add_argument("--r", type=_ints, required=True, help="MAX_RETRANSMIT")
    ap.add_argument("--rto", type=_floats, required=True, help="initial timeout T_0, s")
    ap.add_argument("--rtt", type=_floats, required=True, help="round-trip time R, s")
    ap.add_argument(
        "--f", type=_floats, default=[1.5], help="ACK_RANDOM_FACTOR (T = T_0 (f + 1)/2; default 1.5)"
    )
    ap.add_argument("--b", type=_floats, default=[2.0], help="backoff factor (default 2)")
    ap.add_argument("--dow", type=_floats, default=None, help="one-way delay D_ow, s (default rtt/2)")
    ap.add_argument(
        "--Z", type=_floats, default=[100.0], help="packet size with headers, bytes (default 100)"
    )
    ap.add_argument("--Y", type=_floats, default=[48.0], help="payload, bytes (default 48)")
    ap.add_argument(
        "--simulate", type=int, default=0, metavar="N", help="also simulate N messages and compare"
    )
    ap.add_argument("--seed", type=int, default=1, help="seed of --simulate (default 1)")
    ap.add_argument("--json", action="store_true", help="print JSON")
    try:
        a = ap.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    missing = [f"--{k}" for k in _NEEDS[a.model] if getattr(a, k) is None]
    if missing:
        print(f"coapcc model: error: {a.model} needs {', '.join(missing)}", file=sys.stderr)
        return 2
    params = {k: getattr(a, k) for k in ("p", "q", "k", "h", "r", "rto", "rtt", "f", "b", "Z", "Y")}
    params["D_ow"] = a.dow
    for k in ("q", "k", "h"):
        if k not in _NEEDS[a.model]:
            params[k] = None
    try:
        rows = evaluate(a.model, params)
        if a.simulate:
            from .validate import simulate_model

            if a.b != [2.0]:
                raise ValueError("--simulate runs Default CoAP, whose backoff factor is 2; drop --b")
            for row in rows:
                sp = {k: row[k] for k in ("p", "q", "k", "h", "r", "rto", "rtt", "f", "D_ow") if k in row}
                row["sim"] = simulate_model(a.model, a.simulate, seed=a.seed, **sp)
    except ValueError as e:
        print(f"coapcc model: error: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(rows[0] if len(rows) == 1 else rows))
    else:
        print(_text(rows))
    return 0
