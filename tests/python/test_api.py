"""The Python API: typed configuration, validation, the native mapping, results as tables."""

import json
import subprocess
import sys

import pytest

import coapcc
from coapcc import ConfigError, Group, SimConfig
from coapcc.config import config_hash, to_native
from conftest import COAPCC


def test_import_is_light():
    code = (
        "import sys, coapcc; coapcc.SimConfig(); print(sorted(m for m in ('pandas', 'numpy', 'pyarrow', "
        "'matplotlib', 'dask') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_defaults_are_the_testbed():
    c = SimConfig()
    assert (c.algorithm, c.preset, c.clients, c.buffer_bytes, c.errors, c.workload, c.exchanges) == (
        "default",
        None,
        1,
        28200,
        "none",
        "continuous",
        50,
    )
    assert (c.link.downlink_rate_bps, c.link.uplink_rate_bps, c.link.downlink_delay_ms) == (
        30000,
        60000,
        400.0,
    )
    assert c.algorithm_specs() == [("default", 1)]
    assert "max_retransmit=4" in c.resolved_specs()[0]  # the name alone: RFC 7252


@pytest.mark.parametrize(
    "fields, key, needle",
    [
        ({"clients": 0}, "clients", "must be >= 1"),
        ({"clients": -3}, "clients", "must be >= 1"),
        ({"clients": 2.5}, "clients", "expected an integer"),
        ({"errors": "sometimes"}, "errors", "valid: none, low, medium, high, bernoulli:P"),
        ({"errors": "bernoulli:1.5"}, "errors", "probability"),
        ({"errors": "ge:0.1,0.2"}, "errors", "expected ge:P,R,K,H"),
        ({"workload": "bursty"}, "workload", "valid: continuous, random"),
        ({"buffer_bytes": 0}, "buffer_bytes", ">= 1"),
        ({"error_clock": "wall"}, "error_clock", "valid: time, packet"),
        ({"batch_min": 5, "batch_max": 2}, "batch_min", "exceeds batch_max"),
        ({"nonsense": 1}, "nonsense", "valid: algorithm, clients"),
        ({"link.nope": 1}, "link.nope", "valid: uplink_rate_bps"),
        ({"link": {"downlink_rate_bps": 0}}, "link.downlink_rate_bps", "> 0"),
        ({"coap.ip_version": 5}, "coap.ip_version", "valid: 4, 6"),
        ({"server.duplicate_mode": "x"}, "server.duplicate_mode", "answer_each_copy"),
        ({"groups": [{"algorithm": "default"}]}, "groups[0]", "exactly one of clients or share"),
        (
            {
                "groups": [{"algorithm": "default", "share": 0.5}, {"algorithm": "cocoa", "share": 0.5}],
                "clients": 1,
            },
            "groups[1].share",
            "no client",
        ),
    ],
)
def test_invalid_configs_name_the_key(fields, key, needle):
    with pytest.raises(ConfigError) as e:
        SimConfig.from_dict(fields)
    assert e.value.key == key
    assert needle in str(e.value)
    assert isinstance(e.value, ValueError)


def test_unknown_algorithm_lists_valid_choices():
    with pytest.raises(ConfigError, match="valid algorithms: default") as e:
        SimConfig(algorithm="reno").validate()
    assert e.value.key == "algorithm"
    with pytest.raises(ConfigError, match="valid parameters") as e:
        SimConfig(groups=[Group("default", clients=1), Group("cocoa:bogus=1", clients=1)]).validate()
    assert e.value.key == "groups[1].algorithm"


def test_round_trips_and_dotted_keys():
    c = SimConfig.from_dict(
        {
            "algorithm": "cocoa",
            "clients": 7,
            "link.downlink_delay_ms": 300,
            "coap": {"token_len": 2},
            "groups": [],
        }
    )
    assert c.link.downlink_delay_ms == 300.0 and c.coap.token_len == 2
    assert SimConfig.from_dict(c.to_dict()) == c
    assert SimConfig.from_flat(c.flat()) == c
    assert c.replace(clients=9).clients == 9 and c.replace(**{"link.mtu_bytes": 500}).link.mtu_bytes == 500


def test_shares_split_like_the_cli():
    c = SimConfig(
        clients=11,
        preset="helsinki2018",
        groups=[Group("default", share=0.5), Group("default-fb1", share=0.5)],
    )
    assert c.algorithm_specs() == [("default:preset=helsinki2018", 6), ("default-fb1:preset=helsinki2018", 5)]
    assert c.label == "default+default-fb1"
    counts = SimConfig(groups=[{"algorithm": "cocoa", "clients": 3}, {"algorithm": "default", "clients": 4}])
    assert counts.clients == 7


def test_config_hash_ignores_trace_and_tracks_seed():
    a = SimConfig(clients=3, seed=1)
    assert config_hash(a) == config_hash(a.replace(trace="/tmp/x.jsonl"))
    assert config_hash(a) != config_hash(a.with_seed(2))
    assert len(config_hash(a)) == 16


@pytest.mark.parametrize(
    "fields, flags",
    [
        ({}, []),
        ({"preset": "helsinki2018"}, ["--cc", "default:preset=helsinki2018"]),
        (
            {"buffer_bytes": 2500, "clients": 3, "errors": "medium"},
            ["--buffer", "2500", "--clients", "3", "--errors", "medium"],
        ),
        (
            {"errors": "high", "error_clock": "packet", "error_burst_packets": 8},
            ["--errors", "high", "--error-clock", "packet", "--burst-packets", "8"],
        ),
        (
            {"errors": "low", "workload": "random", "exchanges": 7},
            ["--errors", "low", "--workload", "random", "--exchanges", "7"],
        ),
        (
            {
                "errors": "ge:0.1,0.5,0.01,0.9",
                "link.rest_of_path_min_ms": 5,
                "link.rest_of_path_max_ms": 6,
                "link.per_packet_overhead_bytes": 14,
            },
            ["--errors", "ge:0.1,0.5,0.01,0.9", "--rest-of-path-ms", "5,6", "--overhead-bytes", "14"],
        ),
        (
            {
                "groups": [
                    {"algorithm": "default", "share": 0.5},
                    {"algorithm": "default-fb2", "share": 0.5},
                ],
                "clients": 5,
            },
            ["--cc", "default", "--cc", "default-fb2", "--clients", "5"],
        ),
        (
            {
                "coap.token_len": 4,
                "server.processing_delay_ms": 3,
                "unnecessary_def": "request_delivered",
                "seed": 9,
            },
            [
                "--token-len",
                "4",
                "--server-delay-ms",
                "3",
                "--unnecessary-def",
                "request-delivered",
                "--seed",
                "9",
            ],
        ),
    ],
)
def test_native_mapping_matches_the_rust_command_line(fields, flags, tmp_path):
    """to_native() (the one place that knows the Rust schema) builds the same configuration
    as `coapcc simulate` with the equivalent flags."""
    if "--cc" not in flags:  # the command line's default is a preset (see test_api_names.py)
        flags = ["--cc", "default", *flags]
    r = subprocess.run([*COAPCC, "simulate", "--print-config", *flags], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rust = json.loads(r.stdout)
    cfg = SimConfig.from_dict(fields)
    mine = to_native(cfg)
    mine["groups"] = [
        {"cc": s, "clients": g["clients"]} for s, g in zip(cfg.resolved_specs(), mine["groups"])
    ]
    assert mine == rust


def test_simulate_returns_tables():
    r = coapcc.simulate(clients=4, exchanges=6, buffer_bytes=2500, seed=5)
    assert isinstance(r, coapcc.SimResult)
    assert r.seed == 5 and r.config.clients == 4
    f = r.flows
    assert list(f.columns[:10]) == [
        "seed",
        "client",
        "group",
        "label",
        "cc",
        "fct_s",
        "transmissions",
        "retransmissions",
        "unnecessary_retransmissions",
        "failed_exchanges",
    ]
    assert len(f) == 4 and (f["cc"] == "default").all() and (f["fct_s"] > 6 * 0.6).all()
    h = r.retransmissions_per_exchange
    assert list(h.columns) == ["retransmissions", "exchanges", "share"]
    assert h["exchanges"].sum() == 4 * 6 and h["share"].sum() == pytest.approx(1.0)
    assert list(r.links.index) == ["downlink", "uplink"]
    assert {
        "offered_bytes",
        "delivered_bytes",
        "buffer_drop_bytes",
        "error_loss_bytes",
        "busy_fraction",
    } <= set(r.links.columns)
    s = r.summary()
    assert s["flows"] == 4 and s["fct_p10"] <= s["fct_median"] <= s["fct_p90"]
    assert "<table" in r._repr_html_() and "SimResult default" in repr(r)
    assert r.raw["config"]["seed"] == 5


def test_simulate_is_deterministic_and_config_object_works():
    cfg = SimConfig(algorithm="cocoa", clients=5, exchanges=5, buffer_bytes=2500, errors="medium", seed=3)
    a, b = coapcc.simulate(cfg), coapcc.simulate(cfg)
    assert a.flows.equals(b.flows)
    c = coapcc.simulate(cfg, seed=4)
    assert c.seed == 4 and not a.flows["fct_s"].equals(c.flows["fct_s"])


def test_simulate_mixed_groups_and_summary_by_cc():
    r = coapcc.simulate(
        clients=6,
        exchanges=4,
        groups=[{"algorithm": "default", "share": 0.5}, {"algorithm": "default-fb1", "share": 0.5}],
    )
    assert r.flows.groupby("cc").size().to_dict() == {"default": 3, "default-fb1": 3}
    assert set(r.summary(by="cc").index) == {"default", "default-fb1"}


def test_simulate_rejects_bad_configs_before_running():
    with pytest.raises(ConfigError, match="unknown algorithm"):
        coapcc.simulate(algorithm="nope")
    with pytest.raises(ConfigError, match="clients"):
        coapcc.simulate(clients=0)


def test_docstring_examples():
    import doctest

    import coapcc.config
    import coapcc.experiment

    for mod in (coapcc.config, coapcc.experiment):
        r = doctest.testmod(mod, extraglobs={"coapcc": coapcc, "SimConfig": SimConfig})
        assert r.failed == 0 and r.attempted > 0, mod.__name__
