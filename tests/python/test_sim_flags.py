"""`coapcc simulate`'s run-wide flags (--preset, --profile, shared transmission parameters,
LABEL=SPEC) resolve every group exactly as Python's ``preset=``, ``profile=`` and
``transmission=`` do: one order of application in both front ends."""

import json
import subprocess

import pytest

from coapcc import Group, SimConfig
from coapcc.config import split_label
from conftest import COAPCC


def cli_config(*args: str) -> dict:
    r = subprocess.run([*COAPCC, "simulate", "--print-config", *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


CASES = [
    (
        [
            "--cc",
            "default",
            "--cc",
            "cocoa:max_retransmit=6",
            "--profile",
            "helsinki2018",
            "--ack-timeout",
            "3",
        ],
        dict(
            groups=[Group("default", clients=1), Group("cocoa:max_retransmit=6", clients=1)],
            profile="helsinki2018",
            transmission={"ack_timeout": 3},
        ),
    ),
    (
        ["--cc", "fasor", "--preset", "helsinki2018", "--max-retransmit", "7"],
        dict(algorithm="fasor", preset="helsinki2018", transmission={"max_retransmit": 7}),
    ),
    (
        [
            "--cc",
            "default-fb1:preset=rfc7252",
            "--profile",
            "ancillotti-cooja",
            "--ack-random-factor",
            "1.25",
        ],
        dict(
            algorithm="default-fb1:preset=rfc7252",
            profile="ancillotti-cooja",
            transmission={"ack_random_factor": 1.25},
        ),
    ),
    (
        [
            "--cc",
            "fb1=default-fb1",
            "--cc",
            "Default=default:max_retransmit=9",
            "--profile",
            "helsinki2018",
            "--dither",
            "off",
            "--wait-after-last",
            "off",
        ],
        dict(
            groups=[
                Group("fb1=default-fb1", clients=1),
                Group("default:max_retransmit=9", clients=1, label="Default"),
            ],
            profile="helsinki2018",
            transmission={"dither": "off", "wait_after_last": False},
        ),
    ),
]


@pytest.mark.parametrize("args,py", CASES)
def test_cli_flags_resolve_as_python(args, py):
    cli = cli_config(*args)
    cfg = SimConfig(**py)
    assert [split_label(g["cc"])[1] for g in cli["groups"]] == cfg.resolved_specs()
    # the labels: the command line keeps LABEL= in front of the canonical spec
    labels = [split_label(g["cc"])[0] for g in cli["groups"]]
    expected = [g.label or split_label(g.algorithm)[0] for g in cfg.groups] or [split_label(cfg.algorithm)[0]]
    assert labels == expected


def test_no_cc_is_python_default():
    assert cli_config()["groups"][0]["cc"] == SimConfig().resolved_specs()[0]
    assert "max_retransmit=4," in SimConfig().resolved_specs()[0]
