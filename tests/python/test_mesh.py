"""coapcc.mesh: the multi-hop 802.15.4 mesh simulator from Python."""

from __future__ import annotations

import json

import pytest

import coapcc
from coapcc.meshsim import mesh_config


def test_mesh_runs_and_returns_tidy_tables(tmp_path):
    trace = tmp_path / "ex.jsonl"
    r = coapcc.mesh(
        "grid:3", "cocoa-plus:preset=ancillotti-cooja", "periodic:1", duration_s=300, seed=2, trace=trace
    )
    assert len(r.clients) == 7  # every node but the root and the sink
    assert set(r.clients.columns) >= {"node", "hops", "messages", "lost", "plr", "retransmissions_per_frame"}
    assert r.summary.loc[0, "plr_mean"] == r.plr_mean
    assert r.clients["messages"].sum() > 300
    assert set(r.loss_causes["cause"]) == {
        "no_caching",
        "coap_give_up",
        "buffer_overflow",
        "neighbor_queues_full",
        "mac_no_ack",
        "mac_channel_access",
        "air_collision",
        "air_fading",
        "fifo_overflow",
    }
    frames = r.clients["frames"].sum()
    lines = trace.read_text().splitlines()
    # One trace line per finished unit exchange (the last one may still be in flight).
    assert frames - 7 <= len(lines) <= frames
    assert json.loads(lines[0])["outcome"] in {"acked", "give_up"}


def test_mesh_is_deterministic_and_seeded():
    a = coapcc.mesh("grid:3", traffic="periodic:2", duration_s=120, seed=5).report
    b = coapcc.mesh("grid:3", traffic="periodic:2", duration_s=120, seed=5).report
    c = coapcc.mesh("grid:3", traffic="periodic:2", duration_s=120, seed=6).report
    for r in (a, b, c):
        r["wall_s"] = 0
    assert a == b
    assert a != c


def test_mesh_options_and_errors():
    cfg = mesh_config("makarem2021", **{"mac.queue_packets": 4}, radio__capture_db=None)
    assert cfg["mac"]["rdc"] == "contikimac" and cfg["mac"]["queue_packets"] == 4
    assert cfg["radio"]["capture_db"] is None
    with pytest.raises(ValueError, match="unknown mesh parameter"):
        mesh_config(mac__nope=1)
    with pytest.raises(ValueError, match="bad traffic"):
        coapcc.mesh("grid:3", traffic="periodic:x", duration_s=10)
    with pytest.raises(ValueError, match="bad topology"):
        coapcc.mesh("grid:1", duration_s=10)
    with pytest.raises(ValueError, match="unknown mesh preset"):
        coapcc.mesh("grid:3", preset="nope")
    # Checking without running, for sweep planners.
    assert coapcc._native.mesh_check_json(json.dumps(mesh_config(topology="grid:3"))) is None
    with pytest.raises(ValueError, match="cannot reach"):
        coapcc._native.mesh_check_json(json.dumps(mesh_config(topology="chain:3", spacing_m=30.0)))


def test_ancillotti_experiment_points_are_valid_mesh_configs():
    """Every grid point of the `ancillotti` mesh experiment builds and runs (1 simulated s)."""
    import itertools
    from pathlib import Path

    from coapcc.experiment import tomllib

    path = Path(coapcc.__file__).parent / "experiments" / "ancillotti.toml"
    data = tomllib.loads(path.read_text())
    assert data["kind"] == "mesh" and data["replications"] == 10
    base = dict(data["base"])
    preset = base.pop("preset")
    runs = 0
    for block in data["block"]:
        grid = block["grid"]
        for values in itertools.product(*grid.values()):
            point = dict(zip(grid, values))
            cfg = mesh_config(preset, **{**base, **point, "duration_s": 1})
            r = json.loads(coapcc._native.mesh_json(json.dumps(cfg)))
            assert r["config"]["traffic"] == point["traffic"]
            runs += 1
    # monitoring, events-tb, events-size, then the sensitivity blocks (sens-radio 4 values,
    # sens-routing 2, sens-release 1, sens-linkack 2, sens-cpu 4, sens-rpl 2, sens-clients 2,
    # sens-dither: 2 specs of CoAP-CC), each on 2 grids x 3 loads x 2 algorithms.
    assert runs == 48 + 20 + 16 + 12 * (4 + 2 + 1 + 2 + 4 + 2 + 2 + 1)
