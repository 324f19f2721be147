"""The analytical models against the simulator: same loss process, same timers.

One client runs Default CoAP (binary exponential backoff, waiting for the timer after the last
retransmission, as the models assume) with ``ack_timeout = T_0``, ``ack_random_factor = f`` and
``max_retransmit = r`` over a link made of pure delays: ``D_ow`` up, ``R - D_ow`` down, so every
answered attempt has RTT exactly R. The loss process is applied to each transmission attempt
(the CON on the uplink; the ACK path is loss-free, since the models do not tell the two
apart): Bernoulli ``p``, or the per-packet Gilbert-Elliott chain, which is stepped before each
attempt and then loses it with the probability of its new state, exactly as the models' chain
(the simple Gilbert model is GE with k = 1, h = 0). The chain starts from its stationary
distribution.

The models use the mean first timeout T = T_0 (f + 1)/2. With the simulator's random timers
(``f > 1``) the models' means are still exact: every delay is linear in the dithered T_0, and
goodput is a ratio of means (renewal-reward). ``f = 1`` gives fixed timers.

Confidence intervals: the N messages are cut into 20 consecutive batches; each metric is
computed per batch and the 95 % interval is the batch mean +- t(0.975, 19) * sd / sqrt(20).
For P_L, a rare event, the interval is at least the Agresti-Coull interval over all N messages.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import threading

import numpy as np

from . import loss

__all__ = ["simulate_model", "sim_config", "BATCHES", "METRICS"]

#: Batches of the batch-means confidence intervals.
BATCHES = 20
_T_975_19 = 2.093
#: Metrics compared with the model.
METRICS = ("P_L", "E_N", "D_s", "D_app", "GP")


def sim_config(
    model: str,
    *,
    p: float,
    q: float | None = None,
    k: float | None = None,
    h: float | None = None,
    r: int,
    rto: float,
    rtt: float,
    f: float = 1.5,
    D_ow: float | None = None,
    n: int,
    seed: int = 1,
) -> dict:
    """The simulator configuration (``coapcc._native.simulate_json`` input) of one comparison."""
    d_ow = rtt / 2 if D_ow is None else D_ow
    if not 0 <= d_ow <= rtt:
        raise ValueError(f"D_ow must be within [0, rtt], got {d_ow}")
    if model == "bernoulli":
        lm = {"model": "bernoulli", "p": p}
    else:
        if model == "gilbert":
            k, h = 1.0, 0.0
        if q is None or k is None or h is None:
            raise ValueError(f"model {model!r} needs q (and k, h for ge)")
        lm = {"model": "gilbert_elliott", "p": p, "r": q, "loss_low": 1 - k, "loss_burst": 1 - h}
    cc = f"default:ack_timeout={rto!r},ack_random_factor={f!r},max_retransmit={int(r)},wait_after_last=on"
    return {
        "seed": int(seed),
        "groups": [{"cc": cc, "clients": 1}],
        "workload": {"kind": "continuous", "exchanges": int(n), "failed_exchanges": "count"},
        "link": {
            "mtu_bytes": 296,
            "uplink": [{"delay": {"ms": d_ow * 1e3}}, {"loss": lm}],
            "downlink": [{"delay": {"ms": (rtt - d_ow) * 1e3}}],
        },
        "max_sim_time_s": 1e9,
    }


def _batch_stats(values: np.ndarray) -> tuple[float, float]:
    v = values[np.isfinite(values)]
    if len(v) < 2:
        return (float(v.mean()) if len(v) else math.nan, math.nan)
    return float(v.mean()), float(_T_975_19 * v.std(ddof=1) / math.sqrt(len(v)))


def _summary(x: dict) -> tuple:
    """(exchange, first sent_s, time_s, acknowledged, transmissions) of one trace record."""
    return (
        x["exchange"],
        x["transmissions"][0]["sent_s"],
        x["time_s"],
        x["outcome"] == "ack",
        len(x["transmissions"]),
    )


def _interruptible(fn, *args):
    """``fn(*args)`` in a worker thread (the extension releases the GIL), so that Ctrl-C
    reaches this thread at once: ``KeyboardInterrupt`` is raised here while the simulation
    is abandoned (the caller's process ends)."""
    result: list = []
    error: list = []

    def work():
        try:
            result.append(fn(*args))
        except BaseException as e:  # handed to the caller's thread
            error.append(e)

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.25)
    if error:
        raise error[0]
    return result[0]


def simulate_model(model: str, n: int, *, seed: int = 1, **params) -> dict:
    """Simulate ``n`` messages with the model's loss process and timers.

    Returns ``{metric: {"sim": mean, "ci95": half-width, "model": value}}`` for
    :data:`METRICS`, plus ``messages`` and ``seed``. ``params`` are those of :func:`sim_config`
    (``p``, ``q``, ``k``, ``h``, ``r``, ``rto``, ``rtt``, ``f``, ``D_ow``).
    """
    from .. import _native

    if n < 2 * BATCHES:
        raise ValueError(f"--simulate needs at least {2 * BATCHES} messages, got {n}")
    cfg = sim_config(model, n=n, seed=seed, **params)
    # A folder of its own: if Ctrl-C abandons the simulation before it opened its trace file,
    # the file cannot be created again once the folder is gone.
    tmp = tempfile.mkdtemp(prefix="coapcc-model-")
    try:
        path = os.path.join(tmp, "trace.jsonl")
        _interruptible(_native.simulate_json, json.dumps(cfg), path)
        with open(path) as fh:
            # Keep four numbers a message, not its parsed record (a message may have hundreds
            # of transmissions): memory stays O(messages).
            rows = [_summary(json.loads(line)) for line in fh]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows.sort(key=lambda x: x[0])
    rtt, d_ow = params["rtt"], params.get("D_ow")
    d_down = rtt - (rtt / 2 if d_ow is None else d_ow)
    start = np.array([x[1] for x in rows])
    end = np.array([x[2] for x in rows])
    ok = np.array([x[3] for x in rows])
    tx = np.array([x[4] for x in rows], dtype=float)
    # Delay to the server of a delivered message: its ACK time minus the down path.
    delay = np.where(ok, end - start - d_down, np.nan)
    # Time the sender spends per message: until the next message starts (the last: its end).
    nxt = np.append(start[1:], end[-1])
    span = nxt - start
    batches = np.array_split(np.arange(len(rows)), BATCHES)
    per = {key: [] for key in METRICS}
    for b in batches:
        per["P_L"].append(1 - ok[b].mean())
        per["E_N"].append(tx[b].mean())
        per["D_s"].append(np.nanmean(delay[b]) if ok[b].any() else np.nan)
        per["D_app"].append(span[b].mean())
        per["GP"].append(ok[b].sum() / span[b].sum())
    fn = {"bernoulli": loss.bernoulli, "gilbert": loss.gilbert, "ge": loss.ge}[model]
    args = {"bernoulli": ("p",), "gilbert": ("p", "q"), "ge": ("p", "q", "k", "h")}[model]
    m = fn(
        *(params[a] for a in args),
        r=params["r"],
        rto=params["rto"],
        rtt=rtt,
        f=params.get("f", 1.5),
        D_ow=d_ow,
    )
    out: dict = {"messages": len(rows), "seed": seed}
    for key in METRICS:
        mean, half = _batch_stats(np.asarray(per[key], dtype=float))
        if key == "P_L":
            # A rare event may not occur in any batch (0 +- 0): never report a narrower interval
            # than the Agresti-Coull one over all messages (which ignores the correlation that
            # bursty loss adds, hence the max with the batch-means interval).
            k, n_all = float((~ok).sum()), len(rows)
            pt = (k + 2) / (n_all + 4)
            half = max(half, 1.96 * math.sqrt(pt * (1 - pt) / (n_all + 4)))
            mean = k / n_all
        out[key] = {"sim": mean, "ci95": half, "model": float(m[key])}
    return out
