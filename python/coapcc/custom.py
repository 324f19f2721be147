"""Congestion controls written in Python, run by the Rust simulator.

Write a class with the callbacks below (one instance per client, built with no
arguments; times are float seconds) and pass the class where an algorithm name goes::

    class DoubleEverySecond:
        \"\"\"RFC 7252's 2-3 s initial timer; the timer doubles only on every second timeout.\"\"\"

        max_retransmit = 4

        def start_exchange(self, now, in_flight, random):
            return 2.0 + random               # first timer; `random` is uniform in [0, 1)

        def on_timeout(self, now, retransmissions, timer):
            return 2 * timer if retransmissions % 2 == 1 else timer   # or None: give up

    r = coapcc.custom.simulate(algorithm=DoubleEverySecond, clients=10, seed=1)

Required: ``max_retransmit`` (int), ``start_exchange(now, in_flight, random) -> timer`` and
``on_timeout(now, retransmissions, timer) -> timer or None`` (called only while fewer than
``max_retransmit`` retransmissions were sent). Optional: ``on_ack(now, rtt,
retransmissions, copy, copy_rtt)`` (``copy``/``copy_rtt`` only with ``uses_copy_id =
True``), ``on_give_up(now, reason)`` (``"timeout"`` or ``"reset"``), ``reset(now)`` (flow
start; each batch of the random workload), ``rto() -> float`` (reported in traces),
``name`` (shown in reports; default: the class name).

Everything else is the simulator's: the link, the workload, the CoAP reliability layer
(the class only decides timers), the metrics, and determinism (``random`` comes from the
client's own dither stream, so a run is a pure function of the configuration, the class
and the seed). Expect a few microseconds per callback (``python -m coapcc.custom --bench``
measures it); see docs/custom-algorithms.md.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .config import SimConfig, to_native
from .result import SimResult

__all__ = ["simulate", "DoubleEverySecond", "FixedRto"]


def _is_custom(algorithm: Any) -> bool:
    return isinstance(algorithm, type)


def _key(cls: type) -> str:
    return "py." + re.sub(r"[^A-Za-z0-9_.-]", "-", cls.__name__)


def simulate(
    config: SimConfig | dict | None = None, /, *, trace: str | None = None, **options: Any
) -> SimResult:
    """Run one simulation in which ``algorithm`` (or a group's ``algorithm``) may be a class.

    Takes the same configuration as :func:`coapcc.simulate` (a :class:`~coapcc.SimConfig`,
    a dict, keyword options); registry algorithm names keep working next to classes, e.g.
    ``groups=[{"algorithm": MyClass, "clients": 5}, {"algorithm": "cocoa", "clients": 5}]``.
    Raises the first exception a callback raised, or :class:`~coapcc.ConfigError` for a
    configuration that cannot run.
    """
    from . import _native

    data: dict = {}
    if isinstance(config, SimConfig):
        data = config.to_dict()
    elif isinstance(config, dict):
        data = dict(config)
    elif config is not None:
        raise TypeError(f"config: expected SimConfig or dict, got {type(config).__name__}")
    data.update(options)
    classes: dict[str, type] = {}
    custom_groups: dict[int, str] = {}
    if _is_custom(data.get("algorithm")):
        cls = data["algorithm"]
        classes[_key(cls)] = cls
        data["algorithm"] = "default"
        custom_groups[-1] = _key(cls)
    groups = data.get("groups")
    if groups:
        fixed = []
        for i, g in enumerate(groups):
            g = dict(g) if isinstance(g, dict) else g
            if isinstance(g, dict) and _is_custom(g.get("algorithm")):
                cls = g["algorithm"]
                classes[_key(cls)] = cls
                custom_groups[i] = _key(cls)
                g["algorithm"] = "default"
            fixed.append(g)
        data["groups"] = fixed
    cfg = SimConfig.from_dict(data)
    cfg.validate()
    native = to_native(cfg)
    for i, g in enumerate(native["groups"]):
        key = custom_groups.get(i) if groups else custom_groups.get(-1)
        if key is not None:
            g["cc"] = key
    text = _native.simulate_custom_json(json.dumps(native), classes, trace)
    return SimResult(cfg, text=text)


class DoubleEverySecond:
    """Worked example: RFC 7252's dithered 2-3 s initial timer, doubled only on every second
    timeout (T0, T0, 2 T0, 2 T0, 4 T0), four retransmissions."""

    max_retransmit = 4
    name = "double-every-second"

    def start_exchange(self, now: float, in_flight: int, random: float) -> float:
        return 2.0 + random

    def on_timeout(self, now: float, retransmissions: int, timer: float) -> float:
        return 2 * timer if retransmissions % 2 == 1 else timer


class FixedRto:
    """Worked example: a fixed 3 s timer, never backed off, four retransmissions."""

    max_retransmit = 4
    name = "fixed-rto"

    def start_exchange(self, now: float, in_flight: int, random: float) -> float:
        return 3.0

    def on_timeout(self, now: float, retransmissions: int, timer: float) -> float:
        return 3.0


def _bench(argv: list[str] | None = None) -> int:
    """Cost per callback: the reference-like scenario with a registry algorithm, with the
    same algorithm written in Python, and the ratio (medians, same process, same run)."""
    import argparse
    import statistics
    import time

    from . import _native

    p = argparse.ArgumentParser(prog="python -m coapcc.custom --bench")
    p.add_argument("--bench", action="store_true")
    p.add_argument("--clients", type=int, default=100)
    p.add_argument("--exchanges", type=int, default=50)
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args(argv)

    class PlainDefault:
        """Default CoAP (RFC 7252, plain binary backoff) in Python."""

        max_retransmit = 4

        def start_exchange(self, now, in_flight, random):
            return 2.0 * (1.0 + 0.5 * random)

        def on_timeout(self, now, retransmissions, timer):
            return 2 * timer

        def on_ack(self, now, rtt, retransmissions, copy, copy_rtt):
            pass

    cfg = SimConfig.from_dict(
        {
            "algorithm": "default",
            "clients": a.clients,
            "exchanges": a.exchanges,
            "buffer_bytes": 28_200,
            "seed": 1,
        }
    )
    native = to_native(cfg)
    reg_json = json.dumps(native)
    for g in native["groups"]:
        g["cc"] = "py.default"
    py_json = json.dumps(native)
    times: dict[str, list[float]] = {"registry": [], "python": []}
    events = 0
    for _ in range(a.reps):
        t = time.perf_counter()
        r = json.loads(_native.simulate_json(reg_json))
        times["registry"].append(time.perf_counter() - t)
        t = time.perf_counter()
        rp = json.loads(_native.simulate_custom_json(py_json, {"py.default": PlainDefault}))
        times["python"].append(time.perf_counter() - t)
        events = rp["events"]
    reg, py = statistics.median(times["registry"]), statistics.median(times["python"])
    tx = sum(f["transmissions"] for f in rp["flows"])
    callbacks = tx + sum(f["completed_exchanges"] for f in rp["flows"])  # starts+timeouts, acks
    print(
        f"scenario: {a.clients} continuous clients, {a.exchanges} exchanges, buffer 28200 B (median of {a.reps})"
    )
    print(f"registry default (Rust)   {reg * 1e3:9.2f} ms   {reg * 1e9 / r['events']:8.0f} ns/event")
    print(f"the same in Python        {py * 1e3:9.2f} ms   {py * 1e9 / events:8.0f} ns/event")
    print(
        f"python callbacks          {callbacks:>9}      {(py - reg) * 1e9 / max(callbacks, 1):8.0f} ns/callback extra"
    )
    print(f"ratio python/registry     {py / reg:9.1f}x")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(_bench(sys.argv[1:]))
