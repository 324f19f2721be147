"""``coapcc model bernoulli|gilbert|ge``: the analytical models as a calculator.

Every numeric option takes one value or a comma-separated list; lists span a grid (every
combination), evaluated in one vectorised call. ``--json`` prints an object for one point, a
list of objects for a grid; keys follow the project's convention (snake_case, units as
suffixes: ``p_loss``, ``delay_s``, ``goodput_pps``, ...; :data:`JSON_KEYS`). The thesis's
symbols (``P_L``, ``D_s``, ``GP``, ...; see :mod:`coapcc.models.loss`) are still written after
them, deprecated, for one release. ``--simulate N`` also runs the simulator with the same loss
process and timers for N messages and prints both (:mod:`coapcc.models.validate`).

Examples::

    coapcc model bernoulli --p 0.3 --r 4 --rto 2 --rtt 0.2
    coapcc model ge --p 0.1 --q 0.5 --k 0.75 --h 0.25 --r 3 --rto 2 --rtt 0.5 --json
    coapcc model gilbert --p 0.1,0.2,0.3 --q 0.5 --r 4 --rto 2 --rtt 0.2 --simulate 10000
"""

from __future__ import annotations

import itertools
import json
import math
import sys

import numpy as np

from .. import argcheck
from . import loss

__all__ = ["main", "evaluate"]

_NEEDS = {"bernoulli": ("p",), "gilbert": ("p", "q"), "ge": ("p", "q", "k", "h")}
_GRID_KEYS = ("p", "q", "k", "h", "r", "rto", "rtt", "f", "b", "D_ow", "Z", "Y")


#: Bounds of the options, as the simulator's parameters have them where they meet
#: (MAX_RETRANSMIT 0..=255, ACK_RANDOM_FACTOR 1..=100): option -> argcheck.number keywords.
_RANGES: dict[str, dict] = {
    "p": {"lo": 0.0, "hi": 1.0},
    "q": {"lo": 0.0, "hi": 1.0},
    "k": {"lo": 0.0, "hi": 1.0},
    "h": {"lo": 0.0, "hi": 1.0},
    "r": {"lo": 0, "hi": 255, "integer": True},
    "rto": {"lo": 0.0, "hi": 1e6, "lo_open": True},
    "rtt": {"lo": 0.0, "hi": 1e6},
    "f": {"lo": 1.0, "hi": 100.0},
    "b": {"lo": 1.0, "hi": 8.0},
    "dow": {"lo": 0.0, "hi": 1e6},
    "Z": {"lo": 0.0, "hi": 1e6, "lo_open": True},
    "Y": {"lo": 0.0, "hi": 1e6, "lo_open": True},
}
#: Most grid points one call evaluates (every combination of the lists).
MAX_POINTS = 100_000
#: Most messages ``--simulate`` runs (its trace is read into memory: about 2 kB a message).
MAX_SIMULATE = 200_000


#: ``--json`` keys: the thesis's symbol (the old key, still written for one release) -> the
#: key of the project's convention (snake_case, the unit as a suffix; docs/python.md).
JSON_KEYS: dict[str, str] = {
    "rto": "rto_s",
    "rtt": "rtt_s",
    "D_ow": "d_ow_s",
    "Z": "packet_bytes",
    "Y": "payload_bytes",
    "T": "mean_timeout_s",
    "P_L": "p_loss",
    "P_A": "p_delivered",
    "E_N": "transmissions_per_message",
    "N_A": "transmissions_per_delivery",
    "E_N_OL": "drops_between_deliveries",
    "D_s": "delay_s",
    "D_app": "time_per_message_s",
    "GP": "goodput_pps",
    "O": "byte_overhead",
    "O_S": "byte_overhead_delivered",
    "pi_R": "pi_success",
    "pi": "pi_timeouts",
}


def json_row(row: dict) -> dict:
    """``row`` with the convention's keys (:data:`JSON_KEYS`) first, then, deprecated and kept
    for one release, the thesis's symbols as before; nested ``approx`` and ``sim`` alike."""
    new: dict = {}
    for k, v in row.items():
        if isinstance(v, dict):
            v = json_row(v) if k in ("approx", "sim") else v
        new[JSON_KEYS.get(k, k)] = v
    for k, v in row.items():
        if k in JSON_KEYS:
            new[k] = json_row(v) if isinstance(v, dict) else v
    return new


def _opt(name: str):
    return argcheck.number(many=True, **_RANGES[name])


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
    ap = argcheck.Parser(
        prog="coapcc model",
        description="Markov models of CoAP reliability (Makarem 2021): loss ratio, delays, goodput, overheads.",
    )
    ap.add_argument("model", choices=("bernoulli", "gilbert", "ge"))
    ap.add_argument("--p", type=_opt("p"), required=True, help="loss probability (bernoulli) or P(G->B)")
    ap.add_argument("--q", type=_opt("q"), help="P(B->G) (gilbert, ge)")
    ap.add_argument("--k", type=_opt("k"), help="success probability in the Good state (ge)")
    ap.add_argument("--h", type=_opt("h"), help="success probability in the Bad state (ge)")
    ap.add_argument("--r", type=_opt("r"), required=True, help="MAX_RETRANSMIT")
    ap.add_argument("--rto", type=_opt("rto"), required=True, help="initial timeout T_0, s")
    ap.add_argument("--rtt", type=_opt("rtt"), required=True, help="round-trip time R, s")
    ap.add_argument(
        "--f", type=_opt("f"), default=[1.5], help="ACK_RANDOM_FACTOR (T = T_0 (f + 1)/2; default 1.5)"
    )
    ap.add_argument("--b", type=_opt("b"), default=[2.0], help="backoff factor (default 2)")
    ap.add_argument("--dow", type=_opt("dow"), default=None, help="one-way delay D_ow, s (default rtt/2)")
    ap.add_argument(
        "--Z", type=_opt("Z"), default=[100.0], help="packet size with headers, bytes (default 100)"
    )
    ap.add_argument("--Y", type=_opt("Y"), default=[48.0], help="payload, bytes (default 48)")
    ap.add_argument(
        "--simulate",
        type=argcheck.number(lo=0, hi=MAX_SIMULATE, integer=True),
        default=0,
        metavar="N",
        help=f"also simulate N messages (40 to {MAX_SIMULATE}) and compare",
    )
    ap.add_argument(
        "--seed",
        type=argcheck.number(lo=0, hi=2**64 - 1, integer=True),
        default=1,
        help="seed of --simulate (default 1)",
    )
    ap.add_argument("--json", action="store_true", help="print JSON")
    try:
        a = ap.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if a.Y and a.Z and max(a.Y) > min(a.Z):
        print(
            f"coapcc model: error: --Y (payload) must be at most --Z (packet with headers), "
            f"got Y={argcheck.show(max(a.Y))}, Z={argcheck.show(min(a.Z))}",
            file=sys.stderr,
        )
        return 2
    points = math.prod(
        len(v) for v in (a.p, a.q, a.k, a.h, a.r, a.rto, a.rtt, a.f, a.b, a.dow, a.Z, a.Y) if v
    )
    if points > MAX_POINTS:
        print(f"coapcc model: error: the grid has {points} points, more than {MAX_POINTS}", file=sys.stderr)
        return 2
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
        out = [json_row(r) for r in rows]
        print(json.dumps(out[0] if len(out) == 1 else out))
    else:
        print(_text(rows))
    return 0
