"""One schema: Python's configuration is the simulator's parameters (``coapcc_sim::params``),
its checks the simulator's, its errors keyed by the simulator; and a mesh or extra access
links are parameters of one :class:`coapcc.SimConfig` like any other."""

import dataclasses
import json

import pytest

import coapcc
from coapcc import ConfigError, SimConfig, _native
from coapcc.config import Link, to_native
from coapcc.meshsim import MeshConfig
from coapcc.schema import params_schema


def test_the_fields_and_defaults_are_the_simulators():
    schema = params_schema()
    fields = {f.name: f for f in dataclasses.fields(SimConfig)}
    assert list(fields) == [f["name"] for f in schema["fields"]]
    for f in schema["fields"]:
        d = fields[f["name"]].default
        if d is not dataclasses.MISSING:
            assert d == f["default"], f["name"]
    assert [f.name for f in dataclasses.fields(Link)] == [f["name"] for f in schema["sections"]["link"]]
    # The documentation comes from the schema too.
    assert "Bottleneck buffer size" in SimConfig.__doc__


@pytest.mark.parametrize(
    "fields, key, choices",
    [
        ({"error_clock": "wall"}, "error_clock", ["time", "packet"]),
        ({"mesh_preset": "cooja"}, "mesh_preset", ["ancillotti-cooja", "makarem2021", "ieee802154"]),
        ({"topology": "grid:3", "mesh.mac.nope": 1}, "mesh.mac.nope", None),
        (
            {"topology": "grid:3", "workload": "periodic:3", "messages.unit_bytes": 0},
            "messages.unit_bytes",
            None,
        ),
        ({"access_links": [{"groups": [4]}]}, "access_links[0].groups", None),
        ({"workload": "events:0,10"}, "workload", None),
    ],
)
def test_errors_carry_the_simulators_key_and_choices(fields, key, choices):
    with pytest.raises(ConfigError) as e:
        SimConfig.from_dict(fields).validate()
    assert e.value.key == key, str(e.value)
    if choices is not None:
        assert e.value.choices == choices


def test_a_mesh_run_is_a_simconfig_and_the_mesh_command_is_its_view():
    cfg = SimConfig(
        topology="grid:3",
        mesh_preset="ancillotti-cooja",
        workload="periodic:2",
        clients=7,
        algorithm="cocoa-plus:preset=ancillotti-cooja",
        max_sim_time_s=120,
        mesh={"mac.queue_packets": 4},
        coap={"clock_tick_ns": 7_812_500},  # the mesh command's preset: Erbium's 1/128 s clock
    )
    native = to_native(cfg)
    assert native["coap"]["clock_tick_ns"] == 7_812_500
    assert native["topology"]["mesh"]["mac"]["queue_packets"] == 4
    assert native["workload"]["kind"] == {"periodic": {"load_kbps": 2.0}}
    flat = cfg.flat()
    assert flat["topology"] == "grid:3" and json.loads(flat["mesh"]) == {"mac.queue_packets": 4}
    assert SimConfig.from_flat(flat) == cfg
    r = coapcc.simulate(cfg)
    assert len(r.messages) == 7 and "plr_mean" in r.summary()
    # The same run through `coapcc mesh` (its flat configuration) reports the same metrics.
    m = MeshConfig.from_dict(
        {
            "preset": "ancillotti-cooja",
            "topology": "grid:3",
            "traffic": "periodic:2",
            "cc": "cocoa-plus:preset=ancillotti-cooja",
            "duration_s": 120,
            "mac.queue_packets": 4,
        }
    )
    view = coapcc.mesh(**{k: v for k, v in m.to_dict().items() if k != "preset"}, preset="ancillotti-cooja")
    assert view.plr_mean == r.raw["messages"]["plr_mean"]
    assert view.report["rto_first_s"] == r.raw["messages"]["rto_first_s"]
    same = m.to_sim_config()
    assert coapcc.simulate(same).raw["messages"] == r.raw["messages"]


def test_extra_access_links_are_parameters():
    cfg = SimConfig(
        groups=[{"algorithm": "cocoa", "clients": 2}, {"algorithm": "default", "clients": 3}],
        access_links=[{"groups": [1], "buffer_bytes": 2500, "downlink_delay_ms": 100}],
        exchanges=3,
    )
    assert to_native(cfg)["topology"]["access_links"][0]["groups"] == [1]
    assert "access_links" in coapcc.simulate(cfg).raw
    # Unset, the new fields stay out of a configuration's identity.
    assert "topology" not in SimConfig().to_dict() and "access_links" not in SimConfig().flat()
    assert (
        "clock_tick_ns" not in SimConfig().to_dict()["coap"]
        and "coap_clock_tick_ns" not in SimConfig().flat()
    )


def test_the_extension_raises_keyed_errors():
    with pytest.raises(_native.ConfigError) as e:
        _native.sim_params_normalize(json.dumps({"clients": 0}))
    assert (e.value.key, e.value.problem) == ("clients", "must be >= 1, got 0")
    assert isinstance(e.value, ValueError)


def test_a_message_workload_trace_reads_as_units(tmp_path):
    path = tmp_path / "units.jsonl"
    cfg = SimConfig(
        topology="grid:3",
        workload="periodic:2",
        clients=7,
        max_sim_time_s=60,
        trace=str(path),
        algorithm="cocoa",
    )
    r = coapcc.simulate(cfg)
    t = coapcc.read_trace(path)
    assert len(t.units) == sum(c["units"] for c in r.raw["messages"]["clients"]) - sum(
        c["in_flight_at_end"] for c in r.raw["messages"]["clients"]
    )
    assert set(t.units["outcome"]) <= {"acked", "give_up"} and len(t.exchanges) == 0


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_numbers_are_keyed_errors(value):
    with pytest.raises(ConfigError) as e:
        SimConfig(start_jitter_ms=value)
    assert e.value.key == "start_jitter_ms" and "must be finite" in str(e.value)
