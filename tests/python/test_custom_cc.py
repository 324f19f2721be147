"""Congestion controls written in Python run in the Rust simulator (coapcc.custom)."""

from __future__ import annotations

import json

import pytest

from coapcc import custom

LONG_PATH = {"link.rest_of_path_min_ms": 2000.0, "link.rest_of_path_max_ms": 2000.0}


def flows(r) -> list[dict]:
    return r.raw["flows"]


def report(r) -> dict:
    d = dict(r.raw)
    d.pop("wall_s")
    return d


def test_fixed_timer_below_the_rtt_retransmits_each_exchange_once():
    # RTT is about 4.3 s (2 s of rest of path each way); a fixed 3 s timer sends exactly one
    # retransmission per exchange, which is unnecessary.
    r = custom.simulate(
        algorithm=custom.FixedRto, clients=1, exchanges=10, buffer_bytes=1_410_000, seed=3, **LONG_PATH
    )
    (f,) = flows(r)
    assert f["cc"] == "fixed-rto"
    assert f["completed_exchanges"] == 10
    assert f["retransmissions"] == 10
    assert f["unnecessary_retransmissions"] == 10


def test_double_every_second_timeout_in_the_trace(tmp_path):
    trace = tmp_path / "t.jsonl"
    custom.simulate(
        algorithm=custom.DoubleEverySecond,
        clients=1,
        exchanges=3,
        buffer_bytes=1_410_000,
        seed=1,
        trace=str(trace),
        **{"link.rest_of_path_min_ms": 6000.0, "link.rest_of_path_max_ms": 6000.0},
    )
    recs = [json.loads(line) for line in trace.read_text().splitlines()]
    assert len(recs) == 3
    for rec in recs:
        timers = [t["timer_s"] for t in rec["transmissions"]]
        t0 = timers[0]
        assert 2.0 <= t0 < 3.0
        # RTT about 12.3 s: copies at 0, T0, 2 T0, then 4 T0 > RTT; the timers follow the rule.
        expect = [t0, t0, 2 * t0, 2 * t0, 4 * t0][: len(timers)]
        assert timers == pytest.approx(expect, abs=1e-6)
        assert len(timers) >= 3


def test_same_results_in_both_endpoint_models_and_deterministic():
    opts = dict(algorithm=custom.DoubleEverySecond, clients=12, exchanges=10, buffer_bytes=1000, seed=5)
    a = custom.simulate(**opts, errors="medium")
    b = custom.simulate(**opts, errors="medium")
    assert report(a) == report(b)
    full = custom.simulate(**opts, errors="medium", endpoint_model="full")
    ra, rf = report(a), report(full)
    ra.pop("config")
    rf.pop("config")
    assert ra == rf
    assert sum(f["retransmissions"] for f in flows(a)) > 0


def test_mixed_with_a_registry_algorithm():
    r = custom.simulate(
        groups=[{"algorithm": custom.FixedRto, "clients": 3}, {"algorithm": "cocoa", "clients": 2}],
        clients=5,
        exchanges=5,
        seed=2,
    )
    assert [f["cc"] for f in flows(r)] == ["fixed-rto"] * 3 + ["cocoa"] * 2


def test_state_lives_in_the_instance():
    seen = []

    class Counting:
        max_retransmit = 2

        def __init__(self):
            self.acks = 0
            seen.append(self)

        def start_exchange(self, now, in_flight, random):
            return 5.0

        def on_timeout(self, now, retransmissions, timer):
            return timer

        def on_ack(self, now, rtt, retransmissions, copy, copy_rtt):
            assert copy is None and copy_rtt is None
            assert rtt > 0
            self.acks += 1

    custom.simulate(algorithm=Counting, clients=4, exchanges=7, seed=1)
    # One instance per client (plus the engine's own probes), each saw its own 7 ACKs.
    assert sorted(c.acks for c in seen if c.acks) == [7, 7, 7, 7]


def test_errors_from_callbacks_are_raised():
    class Broken:
        max_retransmit = 4

        def start_exchange(self, now, in_flight, random):
            return 1.0 / 0.0

        def on_timeout(self, now, retransmissions, timer):
            return timer

    with pytest.raises(ZeroDivisionError):
        custom.simulate(algorithm=Broken, clients=3, exchanges=5)

    class Negative(Broken):
        def start_exchange(self, now, in_flight, random):
            return -1.0

    with pytest.raises(ValueError, match="start_exchange returned -1"):
        custom.simulate(algorithm=Negative, clients=3, exchanges=5)

    class NoLimit:
        def start_exchange(self, now, in_flight, random):
            return 1.0

        def on_timeout(self, now, retransmissions, timer):
            return timer

    with pytest.raises(TypeError, match="max_retransmit"):
        custom.simulate(algorithm=NoLimit, clients=1, exchanges=1)
