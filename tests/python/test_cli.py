"""The ``coapcc`` command and the top-level API."""

import json
import subprocess
import sys

import pytest

import coapcc

COAPCC = [sys.executable, "-m", "coapcc"]

EXPECTED = {
    "default",
    "default-fb1",
    "default-fb2",
    "cocoa",
    "cocoa-strong",
    "cocoa-fb1",
    "cocoa-fb2",
    "cocoa-plus",
    "fasor",
    "fasor-token",
    "pcocoa",
    "californium-cocoa",
    "basic-rto",
    "linux-rto",
    "peakhopper-rto",
}


def run(*args, check=True):
    return subprocess.run([*COAPCC, *args], capture_output=True, text=True, check=check)


def test_version():
    out = run("--version").stdout
    assert out.strip() == f"coapcc {coapcc.__version__}"


def test_algorithms_lists_every_algorithm_with_parameters():
    out = run("algorithms").stdout
    for name in EXPECTED:
        assert f"\n{name} " in out or out.startswith(name), name
    assert "max_retransmit" in out and "backoff_cap" in out


def test_algorithms_json_matches_api():
    items = json.loads(run("algorithms", "--json").stdout)
    assert {a["name"] for a in items} == EXPECTED
    assert items == coapcc.algorithms()
    for a in items:
        # The default spec lists every parameter with its documented default.
        spec = a["default_spec"]
        for p in a["params"] + a["common_params"]:
            assert f"{p['key']}={p['default']}" in spec, (a["name"], p["key"], spec)


def test_unknown_algorithm_is_one_line_error():
    r = run("algorithms", "nope", check=False)
    assert r.returncode != 0
    assert r.stderr.count("\n") == 1 and "valid algorithms: default" in r.stderr


def test_resolve_algorithm_errors_name_valid_choices():
    with pytest.raises(ValueError, match="valid parameters: preset"):
        coapcc.resolve_algorithm("default:nonsense=1")
    with pytest.raises(ValueError, match="expected"):
        coapcc.resolve_algorithm("default:max_retransmit=-1")
    assert "max_retransmit=20" in coapcc.resolve_algorithm("default:preset=helsinki2018")
