"""One meaning per name (the same spec resolves to the same configuration from the command
line, Python and an experiment file), shared transmission parameters, group labels, and the
Python conveniences: numpy numbers, "did you mean", refusals with the key at fault."""

import json
import subprocess
import textwrap

import numpy as np
import pandas as pd
import pytest

import coapcc
from coapcc import ConfigError, SimConfig
from coapcc.experiment import Experiment
from coapcc.schema import shared_params
from conftest import COAPCC

try:
    import tomllib
except ImportError:  # pragma: no cover
    import tomli as tomllib

NAMES = [a["name"] for a in coapcc.algorithms()]


def cli_resolved(*cc: str) -> list[str]:
    flags = [x for c in cc for x in ("--cc", c)]
    r = subprocess.run([*COAPCC, "simulate", "--print-config", *flags], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return [g["cc"] for g in json.loads(r.stdout)["groups"]]


def toml_resolved(algorithm: str, base: str = "") -> str:
    text = textwrap.dedent(
        f"""
        name = "one"
        [base]
        {base}
        [grid]
        algorithm = ["{algorithm}"]
        """
    )
    exp = Experiment.from_dict(tomllib.loads(text))
    (run,) = exp.runs()
    return run.config.resolved_specs()[0]


def test_a_name_alone_means_the_specification_defaults_everywhere():
    """Every algorithm name: command line, Python and TOML give one resolved configuration,
    the registry's default (``default`` is RFC 7252: MAX_RETRANSMIT 4)."""
    cli = cli_resolved(*NAMES)
    defaults = {a["name"]: a["default_spec"] for a in coapcc.algorithms()}
    for name, from_cli in zip(NAMES, cli):
        py = SimConfig(algorithm=name).resolved_specs()[0]
        assert from_cli == py == toml_resolved(name) == defaults[name], name
    assert "max_retransmit=4," in SimConfig(algorithm="default").resolved_specs()[0]


@pytest.mark.parametrize(
    "spec", ["default:preset=helsinki2018", "cocoa:preset=helsinki2018,max_retransmit=7"]
)
def test_an_explicit_preset_resolves_alike_everywhere(spec):
    (from_cli,) = cli_resolved(spec)
    assert from_cli == SimConfig(algorithm=spec).resolved_specs()[0] == toml_resolved(spec)
    # ... and the run-wide preset field is the same as writing it in the spec
    name, _, rest = spec.partition(":")
    rest = ",".join(p for p in rest.split(",") if not p.startswith("preset="))
    plain = name + (f":{rest}" if rest else "")
    assert SimConfig(algorithm=plain, preset="helsinki2018").resolved_specs()[0] == from_cli
    assert toml_resolved(plain, 'preset = "helsinki2018"') == from_cli


def test_the_command_line_default_is_the_python_default():
    r = subprocess.run([*COAPCC, "simulate", "--print-config"], capture_output=True, text=True, check=True)
    assert json.loads(r.stdout)["groups"][0]["cc"] == SimConfig().resolved_specs()[0]


def test_shared_transmission_parameters_apply_to_every_group():
    assert {"ack_timeout", "ack_random_factor", "max_retransmit"} <= set(shared_params())
    cfg = SimConfig.from_dict(
        {
            "groups": [
                {"algorithm": "default", "clients": 2},
                {"algorithm": "fasor", "clients": 2},
                {"algorithm": "cocoa:max_retransmit=6", "clients": 2},
            ],
            "max_retransmit": 20,
            "transmission.ack_timeout": 3,
        }
    )
    assert cfg.transmission == {"max_retransmit": 20, "ack_timeout": 3}
    table = cfg.groups_table()
    # the group's own parameter wins over the shared one, and the table shows it
    assert table["max_retransmit"].tolist() == ["20", "20", "6"]
    assert table["ack_timeout"].tolist() == ["3", "3", "3"]
    diff = cfg.groups_table(differences=True)
    assert "max_retransmit" in diff.columns and "ack_timeout" not in diff.columns
    # the simulator runs what the table shows
    r = coapcc.simulate(cfg, exchanges=2)
    assert r.groups_table()["max_retransmit"].tolist() == ["20", "20", "6"]
    # keywords of simulate() are the same thing
    assert SimConfig(algorithm="cocoa").replace(max_retransmit=20).transmission == {"max_retransmit": 20}
    with pytest.raises(ConfigError) as e:
        SimConfig(transmission={"max_retransmits": 20})
    assert e.value.key == "transmission.max_retransmits" and "did you mean 'max_retransmit'" in str(e.value)
    with pytest.raises(ConfigError) as e:
        SimConfig(transmission={"max_retransmit": -1}).validate()
    assert e.value.key == "transmission.max_retransmit"


def test_shared_parameters_keep_the_identity_of_earlier_configurations():
    """An unset ``transmission`` is not part of to_dict(), so derived seeds of existing
    experiments do not change."""
    assert "transmission" not in SimConfig().to_dict()
    c = SimConfig.from_dict({"max_retransmit": 20})
    assert c.to_dict()["transmission"] == {"max_retransmit": 20}
    assert SimConfig.from_dict(c.to_dict()) == c and SimConfig.from_flat(c.flat()) == c
    assert hash(c) == hash(SimConfig.from_dict(c.to_dict()))


def test_group_labels():
    cfg = SimConfig(
        groups=[
            {"algorithm": "fasor=fasor:preset=helsinki2018", "share": 0.5},
            {"algorithm": "cocoa:preset=helsinki2018", "share": 0.5, "label": "CoCoA"},
        ],
        clients=4,
    )
    assert cfg.label == "fasor+CoCoA"
    assert cfg.algorithm_specs() == [("fasor:preset=helsinki2018", 2), ("cocoa:preset=helsinki2018", 2)]
    r = coapcc.simulate(cfg, exchanges=2, seed=8)
    assert r.flows["label"].tolist() == ["fasor", "fasor", "CoCoA", "CoCoA"]
    assert (r.flows["seed"] == 8).all()
    assert r.groups_table()["label"].tolist() == ["fasor", "CoCoA"]
    assert SimConfig(algorithm="short=default:max_retransmit=20").label == "short"


def test_flows_of_several_runs_concatenate():
    runs = [coapcc.simulate(clients=2, exchanges=2, seed=s) for s in (1, 2)]
    flows = pd.concat([r.flows for r in runs], ignore_index=True)
    assert flows.groupby("seed").size().to_dict() == {1: 2, 2: 2}


def test_numpy_and_pandas_numbers_are_accepted():
    cfg = SimConfig(
        clients=np.int64(10),
        buffer_bytes=np.int32(2500),
        exchanges=np.float64(3.0),
        start_jitter_ms=np.float32(1.5),
        seed=np.uint64(7),
        link={"downlink_delay_ms": np.int64(300)},
    )
    assert type(cfg.clients) is int and cfg.clients == 10 and type(cfg.seed) is int
    assert type(cfg.link.downlink_delay_ms) is float
    r = coapcc.simulate(algorithm="default", clients=pd.Series([3]).iloc[0], exchanges=np.int64(2))
    assert len(r.flows) == 3
    g = SimConfig.from_dict(
        {"groups": [{"algorithm": "default", "clients": np.int64(2)}], "max_retransmit": np.int64(9)}
    )
    assert g.clients == 2 and g.transmission == {"max_retransmit": 9}
    assert "max_retransmit=9" in g.resolved_specs()[0]
    with pytest.raises(ConfigError, match="expected an integer"):
        SimConfig(clients=np.float64(2.5))


@pytest.mark.parametrize(
    "fields, key, needle",
    [
        ({"clinets": 3}, "clinets", "did you mean 'clients'"),
        ({"link.downlink_rate": 3}, "link.downlink_rate", "did you mean 'downlink_rate_bps'"),
        ({"groups": [{"algoritm": "x", "clients": 1}]}, "groups[0].algoritm", "did you mean 'algorithm'"),
        ({"clients": 10**9}, "clients", "must be <= 1000000"),
        ({"groups": [{"algorithm": "default", "clients": 10**9}]}, "groups[0].clients", "<= 1000000"),
        ({"exchanges": 2**40}, "exchanges", "must be <="),
        ({"seed": 2**64}, "seed", "must be <="),
        (
            {"groups": [{"algorithm": "default", "share": 0.7}, {"algorithm": "cocoa", "share": 0.7}]},
            "groups",
            "add up to 1.4",
        ),
        ({"trace": 5}, "trace", "expected a file path"),
        ({"preset": "helsinki18"}, "preset", "did you mean 'helsinki2018'"),
        ({"max_sim_time_s": 0}, "max_sim_time_s", "must be > 0"),
        ({"groups": [{"algorithm": "default", "share": 0}]}, "groups[0].share", "must be > 0"),
    ],
)
def test_bad_values_are_refused_with_their_key(fields, key, needle):
    with pytest.raises(ConfigError) as e:
        SimConfig.from_dict(fields)
    assert e.value.key == key, str(e.value)
    assert needle in str(e.value)


def test_every_algorithm_runs_under_every_preset_and_a_bad_preset_is_reported_under_preset():
    algs = {a["name"]: a["presets"] for a in coapcc.algorithms()}
    presets = {p for ps in algs.values() for p in ps}
    assert {"rfc7252", "helsinki2018", "ancillotti-cooja", "makarem2021"} <= presets
    for name, ps in algs.items():
        assert set(ps) == presets, name
        for p in ps:
            SimConfig(algorithm=name, preset=p).validate()
    with pytest.raises(ConfigError) as e:
        SimConfig(algorithm="cocoa", preset="no-such-preset").validate()
    assert e.value.key == "preset"


def test_simulator_checks_are_config_errors():
    """What only the simulator checks (message sizes against the MTU...) still comes back
    as a ConfigError with the Python key, before anything runs."""
    with pytest.raises(ConfigError) as e:
        coapcc.simulate(**{"coap.response_payload_bytes": 5000})
    assert e.value.key == "coap.response_payload_bytes" and "MTU" in str(e.value)


def test_one_median_everywhere():
    r = coapcc.simulate(clients=4, exchanges=3, buffer_bytes=2500, seed=2)
    med = r.flows["fct_s"].median()
    assert r.summary()["fct_median"] == pytest.approx(med)
    assert f"median FCT {med:.3f} s" in repr(r)


def test_summary_keeps_counts_integer():
    r = coapcc.simulate(
        clients=4,
        exchanges=3,
        groups=[{"algorithm": "default", "share": 0.5}, {"algorithm": "cocoa", "share": 0.5}],
    )
    s = r.summary()
    for k in ("flows", "transmissions", "retransmissions", "failed_exchanges", "seed"):
        assert isinstance(s[k], int), k
    by = r.summary(by="label")
    assert by["transmissions"].dtype == np.int64 and by["flows"].dtype == np.int64


def test_python_defaults_are_the_simulators():
    """SimConfig() maps to the simulator's own default configuration (apart from the default
    algorithm, see above): the defaults are read from Rust, not restated."""
    from coapcc import _native
    from coapcc.config import to_native

    rust = json.loads(_native.default_sim_config_json())
    mine = to_native(SimConfig())
    rust.pop("groups"), mine.pop("groups")
    assert mine == rust
    limits = json.loads(_native.sim_limits_json())
    assert set(limits["choices"]["workload"]) == {"continuous", "random"}
    with pytest.raises(ConfigError) as e:
        SimConfig(endpoint_model="fast")
    assert e.value.choices == limits["choices"]["endpoint_model"]


def test_a_testbed_profile_sets_the_shared_parameters_of_every_group():
    """profile="helsinki2018": MAX_RETRANSMIT 20 (and the testbed's ACK_TIMEOUT and
    ACK_RANDOM_FACTOR) for every algorithm, each keeping its other defaults."""
    groups = [{"algorithm": a, "share": 0.25} for a in ("default", "cocoa", "fasor", "pcocoa")]
    cfg = SimConfig(groups=groups, clients=8, profile="helsinki2018")
    t = cfg.groups_table()
    assert t["max_retransmit"].tolist() == ["20"] * 4
    assert t["ack_timeout"].tolist() == ["2"] * 4
    # other parameters are the algorithms' own: default keeps RFC 7252 dithering and no cap
    default = SimConfig(algorithm="default").groups_table()
    assert t.loc[0, "dither"] == default.loc[0, "dither"] and t.loc[0, "backoff_cap"] == "none"
    # transmission wins over the profile, the spec over both
    c2 = SimConfig(
        algorithm="default:max_retransmit=7", profile="helsinki2018", transmission={"ack_timeout": 3}
    )
    assert "ack_timeout=3," in c2.resolved_specs()[0] and "max_retransmit=7," in c2.resolved_specs()[0]
    assert "profile" not in SimConfig().to_dict() and SimConfig.from_flat(cfg.flat()) == cfg
    with pytest.raises(ConfigError) as e:
        SimConfig(profile="helsinky2018")
    assert e.value.key == "profile" and "did you mean 'helsinki2018'" in str(e.value)
    coapcc.simulate(cfg, exchanges=2)  # runs


@pytest.mark.parametrize(
    "name, runs, digest", [("anrw18", 7360, "3ca61e02cb5d4671"), ("fasor18", 2600, "f4cf02f1bda2fcbe")]
)
def test_catalogue_runs_keep_their_seeds(name, runs, digest):
    """The catalogue's presets are explicit, and new optional fields (profile, transmission,
    labels) stay out of a run's identity: every run of anrw18 and fasor18 keeps the seed it had
    when the preset was implicit (digest of the seeds as planned before this change)."""
    import hashlib

    from coapcc.experiment import find_experiment

    exp = find_experiment(name)
    assert exp.base.get("preset") == "helsinki2018"
    seeds = [str(r.config.seed) for r in exp.runs()]
    assert len(seeds) == runs
    assert hashlib.sha256(",".join(seeds).encode()).hexdigest()[:16] == digest


def test_empty_parameter_items_are_refused_like_the_simulator():
    import pytest

    from coapcc.config import ConfigError, compose_spec

    for spec in ("default:,", "cocoa:aging=on,,cap=32", "default: ,"):
        with pytest.raises(ConfigError, match="empty key=value item"):
            compose_spec(spec)
    assert compose_spec("default:") == "default"
