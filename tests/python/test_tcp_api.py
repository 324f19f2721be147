"""CoAP over TCP and the bulk (Block2) workload from Python: SimConfig's ``transport`` and
``workload = "bulk:BYTES"``, the TCP flow columns, and the errors of bad inputs."""

import math
import os

import pytest

import coapcc
from coapcc import SimConfig
from coapcc.config import ConfigError, config_hash, to_native
from coapcc.result import TCP_FLOW_COLUMNS

THESIS = {"clients": 1, "buffer_bytes": 1410000, "seed": 1, "workload": "bulk:102400"}


def test_tcp_bulk_newreno_helsinki2018_transfer():
    r = coapcc.simulate(transport="tcp", algorithm="newreno:preset=helsinki2018", **THESIS)
    f = r.flows
    cols = list(f.columns)
    after = cols.index("failed_exchanges") + 1  # right after the CoAP columns
    assert cols[after : after + len(TCP_FLOW_COLUMNS)] == list(TCP_FLOW_COLUMNS)
    row = f.iloc[0]
    assert math.isclose(row["fct_s"], 32.87, abs_tol=0.01)
    assert row["segments_sent"] == 403
    # The 102 400-byte payload plus the response's CoAP-over-TCP header and options.
    assert row["bytes_delivered"] == 102410
    assert row["setup_s"] > 0
    assert row["retransmitted_segments"] <= row["segments_sent"]
    s = r.summary()
    assert s["segments_sent"] == 403
    assert s["flows"] == 1


def test_udp_block2_bulk_transfer():
    r = coapcc.simulate(algorithm="default:preset=helsinki2018", **THESIS)
    fct = r.flows.iloc[0]["fct_s"]
    assert math.isclose(fct, 285.7, abs_tol=0.1)
    assert "segments_sent" not in r.flows.columns


def test_native_config_of_tcp_and_bulk():
    cfg = SimConfig(transport="tcp", algorithm="bbr:preset=helsinki2018", workload="bulk: 4096")
    assert cfg.workload == "bulk:4096"
    n = to_native(cfg)
    assert n["transport"] == "tcp"
    assert n["workload"]["kind"] == {"bulk": 4096}
    assert n["groups"] == [{"cc": "bbr:preset=helsinki2018", "clients": 1}]
    # A UDP run says nothing of the transport (its hash is that of earlier releases).
    assert "transport" not in to_native(SimConfig())
    assert "transport" not in SimConfig().to_dict()
    assert cfg.to_dict()["transport"] == "tcp"
    assert SimConfig.from_dict(cfg.to_dict()) == cfg
    assert SimConfig.from_flat(cfg.flat()) == cfg
    assert SimConfig.from_flat(SimConfig().flat()).transport == "udp"


def test_tcp_specs_resolve_through_the_simulator():
    cfg = SimConfig(transport="tcp", algorithm="newreno:preset=helsinki2018", workload="bulk:1000")
    (spec,) = cfg.resolved_specs()
    assert spec.startswith("newreno:") and spec != "newreno:preset=helsinki2018"
    assert len(config_hash(cfg)) == 16
    assert config_hash(cfg) != config_hash(cfg.replace(algorithm="bbr:preset=helsinki2018"))
    t = cfg.groups_table()
    assert t.iloc[0]["algorithm"] == "newreno"
    # A preset for every group works over TCP as over UDP.
    assert SimConfig(transport="tcp", algorithm="newreno", preset="helsinki2018").resolved_specs() == [spec]
    cfg.validate()


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"workload": "bulk:0"}, "workload"),
        ({"workload": "bulk:x"}, "workload"),
        ({"workload": "bulk"}, "workload"),
        ({"workload": "bulk:-5"}, "workload"),
        ({"transport": "quic"}, "transport"),
        ({"transport": "tcp", "algorithm": "cocoa"}, "algorithm"),
        ({"transport": "tcp", "algorithm": "newreno:nonsense=1"}, "algorithm"),
        ({"algorithm": "newreno"}, "algorithm"),
        ({"transport": "tcp", "algorithm": "newreno", "max_retransmit": 20}, "transmission"),
        ({"transport": "tcp", "algorithm": "newreno", "profile": "helsinki2018"}, "profile"),
    ],
)
def test_bad_tcp_and_bulk_inputs(changes, key):
    with pytest.raises(ConfigError) as e:
        SimConfig.from_dict({"workload": "bulk:1000", **changes}).validate()
    assert e.value.key == key, str(e.value)


@pytest.mark.parametrize(
    ("cfg", "digest"),
    [
        (SimConfig(algorithm="cocoa", clients=10, buffer_bytes=2500, seed=7), "77af269ed1cfec56"),
        (
            SimConfig(algorithm="default", preset="helsinki2018", workload="random", errors="high", seed=3),
            "959fe8de0f6fe4f4",
        ),
    ],
)
def test_udp_hashes_unchanged_by_the_transport_field(cfg, digest):
    # Digests computed before the transport and bulk workload existed; the second one again
    # when the helsinki2018 preset got its fitted error profiles (its 'high' link changed:
    # e83d01d82a5d8464 before).
    assert config_hash(cfg) == digest
    assert "transport" not in cfg.to_dict()


def test_sweep_stores_tcp_columns_next_to_udp_runs(tmp_path):
    from coapcc.experiment import Experiment
    from coapcc.sweeper import sweep

    exp = Experiment.from_dict(
        {
            "name": "tcp-mini",
            "seed": 5,
            "replications": 2,
            "base": {"preset": "helsinki2018", "workload": "bulk:20000", "buffer_bytes": 14100},
            "block": [
                {"name": "udp", "grid": {"algorithm": ["default"]}},
                {"name": "tcp", "base": {"transport": "tcp"}, "grid": {"algorithm": ["newreno", "bbr"]}},
            ],
        }
    )
    out = sweep(exp, tmp_path / "ds", workers=1, progress=False).out
    res = coapcc.load_results(out)
    runs = res.runs.set_index("algorithm")
    assert set(runs["transport"]) == {"udp", "tcp"}
    tcp = runs.loc[["newreno", "bbr"]]
    assert (tcp["segments_sent"] > 0).all() and tcp["rto_expiries"].notna().all()
    assert runs.loc["default", "segments_sent"].isna().all()
    flows = res.flows[res.flows["transport"] == "tcp"]
    assert len(flows) == 4 and (flows["bytes_delivered"] > 20000).all()
    # The runs' sums are those of their flows.
    assert int(flows["segments_sent"].sum()) == int(tcp["segments_sent"].sum())
    # The report of a TCP study draws the TCP figures, the sequence/cwnd trace of one transfer
    # per algorithm among them (PNG only: fast).
    from coapcc.reporting import report

    tcp_only = Experiment.from_dict(
        {
            "name": "tcp-report",
            "seed": 5,
            "replications": 1,
            "base": {
                "preset": "helsinki2018",
                "workload": "bulk:20000",
                "buffer_bytes": 2500,
                "transport": "tcp",
            },
            "block": [{"name": "tcp", "grid": {"algorithm": ["newreno", "bbr"]}}],
        }
    )
    out = sweep(tcp_only, tmp_path / "ds-tcp", workers=1, progress=False).out
    with open(os.devnull, "w") as quiet:
        html = report(out, formats=("png",), log=quiet).read_text()
    for fig in ("segments", "rto", "tcp-seq"):
        assert (out / "figures" / f"{fig}.png").stat().st_size > 1000, fig
        assert f'id="fig-{fig}"' in html, fig


def test_catalogue_has_the_coap_tcp_thesis_grid():
    from coapcc.experiment import find_experiment

    exp = find_experiment("coap-tcp-thesis")
    blocks = {b.name: b for b in exp.blocks}
    runs = [r.config for r in exp.runs()]
    main = [r.config for r in exp.runs() if r.block in ("udp", "tcp-newreno", "tcp-bbr")]
    assert len(main) == (2 * 2 + 2 + 1) * 4 * 4 * 20
    # The sensitivity blocks: the start delay (2 more values x 2 buffers) and the rest of the
    # path drawn per packet (2 algorithms x 2 buffers).
    assert set(blocks) == {"udp", "tcp-newreno", "tcp-bbr", "start-delay", "rest-of-path"}
    assert len(runs) == len(main) + (2 * 2 + 2 * 2) * 20
    assert {c.error_clock for c in main} == {"packet"} and {c.start_jitter_ms for c in main} == {1000.0}
    assert {c.transport for c in runs} == {"udp", "tcp"}
    assert {c.workload for c in runs} == {"bulk:102400"}
    assert {c.clients for c in runs if c.algorithm == "bbr"} == {1}
    assert {c.label for c in runs if c.transport == "tcp"} == {"newreno", "bbr"}
