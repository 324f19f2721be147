"""Bad input to every subcommand: a one-line message, the documented exit status, no traceback
or panic, in bounded time (each case runs as a subprocess with a timeout).

Each row is (arguments, exit status, text the message must contain). Status 2 is a usage
error (the arguments themselves), 1 a failure found while checking what they describe.
"""

from __future__ import annotations

import json
import random
import subprocess
import textwrap

import pytest

from coapcc import argcheck
from conftest import COAPCC, subprocess_env

MODEL = ["model", "bernoulli", "--p", "0.1", "--r", "4", "--rto", "2", "--rtt", "0.2"]
U64 = str(2**64 - 1)

CASES: list[tuple[list[str], int, str]] = [
    # Negative numbers are values, refused with their range.
    (["simulate", "--clients", "-5"], 1, "--clients: -5 is not in 0..=1000000"),
    (["simulate", "--clients", "99999999999"], 1, "99999999999 is not in 0..=1000000"),
    (["simulate", "--exchanges", "-5"], 2, "-5 is not in 0..=4294967295"),
    (["simulate", "--seed", "-1"], 2, "-1 is not in 0..=18446744073709551615"),
    (["simulate", "--server-delay-ms", "1e300"], 1, "must be <= 1e12, got 1e+300"),
    (["simulate", "--server-delay-ms", "-1"], 1, "must be >= 0, got -1"),
    (["simulate", "--server-delay-ms", "nan"], 2, "must be a finite number"),
    (["simulate", "--cc", "cocao"], 1, "did you mean 'cocoa'?"),
    (["simulate", "--preset", "helsinky2018"], 1, "did you mean 'helsinki2018'?"),
    (["algorithms", "cocao"], 1, "did you mean 'cocoa'?"),
    (["mesh", "--cc", "cocao"], 1, "did you mean 'cocoa'?"),
    (["mesh", "--message-bytes", "4294967295"], 1, "must be 1 to 1048576 bytes"),
    (["mesh", "--message-bytes", "-1"], 2, "-1 is not in 0..=4294967295"),
    (["mesh", "--topology", f"dumbbell:{U64},2"], 1, "needs 2 to 1024 nodes, got more than 1024"),
    (["mesh", "--topology", f"dumbbell:2,{U64}"], 1, "needs 2 to 1024 nodes, got more than 1024"),
    (["mesh", "--topology", "dumbbell:0,0"], 1, "a dumbbell needs K >= 1"),
    (["mesh", "--topology", "grid:4294967296x4294967296"], 1, "needs 2 to 1024 nodes"),
    (["resbw", "--resbw", "fixed:-1"], 1, "resbw: the values must be >= 0 packets/s"),
    (["resbw", "--rtt-ms", "fixed:0"], 1, "rtt_ms: the values must be > 0 ms"),
    (["resbw", "--duration-s", "1e300"], 1, "got 1e300"),
    (["resbw", "--cc", "cocao"], 1, "did you mean 'cocoa'?"),
    (["rtt-scenarios", "--cc", "default", "--len", "-3"], 2, "-3 is not in 0..="),
    (["client", "coap://127.0.0.1:9/hello", "--nstart", "0"], 1, "--nstart must be at least 1"),
    (["client", "coap://127.0.0.1:9/hello", "--nstart", "-1"], 2, "-1 is not in 0..=4294967295"),
    (["client", "coap://127.0.0.1:9/hello", "--timeout", "1e300"], 1, "got 1e300"),
    (["client", "http://127.0.0.1:9/hello"], 1, "coap+tcp://"),
    (["server", "--max-connections", "-1"], 2, "-1 is not in 0..="),
    (["server", "--idle-timeout", "1e300"], 1, "got 1e300"),
    (["rtt-scenarios", "--cc", "cocao"], 1, "did you mean 'cocoa'?"),
    ([*MODEL[:3], "1.5", *MODEL[4:]], 2, "--p: must be a number in [0, 1], got 1.5"),
    ([*MODEL, "--f", "0.5"], 2, "--f: must be a number in [1, 100], got 0.5"),
    ([*MODEL, "--Y", "0"], 2, "--Y: must be a number in (0, 1e+06], got 0"),
    ([*MODEL, "--Z", "-1"], 2, "--Z: must be a number in (0, 1e+06], got -1"),
    ([*MODEL, "--Y", "200"], 2, "--Y (payload) must be at most --Z"),
    ([*MODEL[:5], "1100", *MODEL[6:]], 2, "--r: must be an integer in [0, 255], got 1100"),
    ([*MODEL[:5], "1000000000", *MODEL[6:]], 2, "--r: must be an integer in [0, 255]"),
    ([*MODEL[:5], str(2**64), *MODEL[6:]], 2, "--r: must be an integer in [0, 255]"),
    ([*MODEL, "--simulate", "1000000000000"], 2, "--simulate: must be an integer in [0, 200000]"),
    ([*MODEL, "--simulate", "5"], 2, "--simulate needs at least 40 messages"),
    (
        [
            *MODEL,
            "--p",
            "0,0.1,0.2,0.3,0.4",
            "--rto",
            ",".join(str(x) for x in range(1, 101)),
            "--rtt",
            ",".join(str(x / 10) for x in range(1, 301)),
        ],
        2,
        "more than 100000",
    ),  # fmt: skip
    (
        ["sweep", "anrw18", "--workers", "0", "--list"],
        2,
        "--workers/-j: must be an integer in [1, 1024], got 0",
    ),
    (["sweep", "anrw18", "--workers", "-2", "--list"], 2, "got -2"),
    (["sweep", "anrw81", "--list"], 2, "'anrw81' (did you mean 'anrw18'?)"),
    (["reproduce", "fasor81", "--list"], 2, "'fasor81' (did you mean 'fasor18'?)"),
    (["report", "/nonexistent-dataset"], 2, "not a results dataset"),
    (["report", "/nonexistent-dataset", "--workers", "0"], 2, "--workers/-j: must be an integer"),
    (["simulat"], 2, "did you mean 'simulate'?"),
]


def _run(args: list[str], timeout: float = 60, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*COAPCC, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=subprocess_env(),
        cwd=cwd,
    )


def _one_line(p: subprocess.CompletedProcess, status: int, text: str) -> None:
    assert p.returncode == status, (p.returncode, p.stderr)
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and text in lines[0], p.stderr
    assert "Traceback" not in p.stderr, p.stderr


@pytest.mark.parametrize(("args", "status", "text"), CASES, ids=[" ".join(c[0])[:60] for c in CASES])
def test_bad_input_gets_one_line(args, status, text):
    p = _run(args)
    assert p.returncode == status, (p.returncode, p.stderr)
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    if args[0] != "simulat":  # an unknown command also prints the list of commands
        assert len(lines) == 1, p.stderr
    assert text in lines[0], p.stderr
    assert "Traceback" not in p.stderr and "panicked" not in p.stderr, p.stderr
    assert "Warning" not in p.stderr, p.stderr


MAKAREM = """
name = "mk"
kind = "makarem-studies"
[models]
rtt = 0.2
loss = [0.1]
rto = [2.0]
r = [4]
fixed_rto = 2.0
fixed_r = 4
simulate_messages = 40
"""


@pytest.mark.parametrize(
    ("change", "text"),
    [
        (('name = "mk"', 'name = "../../../x"'), "name: '../../../x'"),
        (('name = "mk"', 'name = "/tmp/x"'), "name: '/tmp/x'"),
        (("loss = [0.1]", 'loss = ["a"]'), "models.loss[0]: must be a number in (0, 1], got 'a'"),
        (("r = [4]", "r = [1e9]"), "models.r[0]: must be an integer"),
        (("r = [4]", "r = [1000000000]"), "models.r[0]: must be an integer in [0, "),
        (("fixed_rto = 2.0", "fixed_rto = -1"), "models.fixed_rto: must be a number in (0, 3600], got -1"),
        (("fixed_r = 4", "fixed_r = 4\ncc = 5"), "models.cc: unknown key"),
        (("[models]", "[modles]"), "modles"),
    ],
)
def test_study_toml_values_are_checked(tmp_path, change, text):
    """Every kind's TOML through the same checks: a makarem-studies file's bad values."""
    f = tmp_path / "mk.toml"
    f.write_text(textwrap.dedent(MAKAREM).replace(*change, 1))
    p = _run(["sweep", f, "--list"], cwd=tmp_path)
    _one_line(p, 2, text)
    assert not (tmp_path / "results").exists() and not (tmp_path.parent / "x").exists()


def test_quick_grid_typo_is_an_error(tiny_file):
    tiny_file.write_text(tiny_file.read_text().replace("clients = [6]\n", "clients = [6]\nclient = [1]\n"))
    p = _run(["sweep", tiny_file, "--quick", "--list"])
    _one_line(p, 2, "quick.grid.client: no block sweeps this key")


def test_report_on_a_dataset_of_another_format(tmp_path):
    d = tmp_path / "ds"
    (d / "runs").mkdir(parents=True)
    (d / "experiment.json").write_text(json.dumps({"dataset_format": 999, "coapcc_version": "9.9"}))
    _one_line(_run(["report", d]), 2, "dataset format 999")
    (d / "experiment.json").write_text("{not json")
    _one_line(_run(["report", d]), 2, "is this a coapcc dataset?")


def test_report_trace_run_that_matches_nothing(tiny_file, tmp_path):
    out = tmp_path / "ds"
    assert (
        _run(["sweep", tiny_file, "--out", out, "--no-progress", "--workers", "1"], timeout=300).returncode
        == 0
    )
    p = _run(["report", out, "--trace-run", "zzzz", "--no-progress"], timeout=300)
    _one_line(p, 2, "--trace-run zzzz: no such run")


def test_help_help_prints_the_commands():
    p = _run(["help", "help"])
    assert p.returncode == 0 and "Commands:" in p.stdout, p.stderr


def test_model_json_keys_follow_the_convention():
    p = _run([*MODEL, "--json"])
    assert p.returncode == 0, p.stderr
    row = json.loads(p.stdout)
    keys = list(row)
    for new, old in [("p_loss", "P_L"), ("delay_s", "D_s"), ("goodput_pps", "GP"), ("rto_s", "rto")]:
        assert row[new] == row[old]
        assert keys.index(new) < keys.index(old)  # the deprecated keys come after


def test_model_large_r_is_finite():
    p = _run([*MODEL[:5], "255", *MODEL[6:], "--json"])
    assert p.returncode == 0 and not p.stderr, p.stderr
    row = json.loads(p.stdout)
    assert all(row[k] is not None for k in ("p_loss", "delay_s", "goodput_pps", "byte_overhead"))


@pytest.mark.parametrize(
    "args",
    [
        ["simulate", "--json"],
        ["mesh", "--json", "--duration-s", "60"],
        ["algorithms", "--json"],
        [*MODEL, "--json"],
        ["rtt-scenarios", "--cc", "default", "--json"],
    ],
)
def test_closed_stdout_ends_quietly(args):
    proc = subprocess.Popen([*COAPCC, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.read(5)
    proc.stdout.close()  # the reader goes away, as `| head -c5` does
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert err == b"" or b"Broken pipe" not in err, err


def test_argcheck_random_values():
    """Random values against the one Python check: in range -> the value, else a one-line
    ValueError naming the range; never anything else."""
    rng = random.Random(20261128)
    specials = [0, -0.0, 1, -1, 2**63, 2**64, -(2**64), 1e300, -1e300, 5e-324, float("nan"), float("inf")]
    for _ in range(5000):
        lo = rng.choice([None, 0, 1, -5.5, 0.0])
        hi = rng.choice([None, 1, 255, 1e6, 2**64 - 1])
        if lo is not None and hi is not None and lo > hi:
            lo, hi = hi, lo
        integer = rng.random() < 0.5
        lo_open = rng.random() < 0.3
        v = rng.choice(
            [
                rng.choice(specials),
                rng.uniform(-1e9, 1e9),
                rng.randint(-(2**70), 2**70),
                rng.random(),
                True,
                "3",
                None,
            ]
        )
        try:
            got = argcheck.check("x", v, lo=lo, hi=hi, lo_open=lo_open, integer=integer)
        except ValueError as e:
            msg = str(e)
            assert msg.startswith("x must be ") and "\n" not in msg and len(msg) < 200, msg
            continue
        assert not isinstance(v, (bool, str)) and v is not None
        assert isinstance(got, int if integer else float)
        assert lo is None or got >= lo and not (lo_open and got == lo)
        assert hi is None or got <= hi
        # The argparse type agrees with the check on the same value written as text.
        text = str(int(got)) if integer else repr(float(v))
        assert argcheck.number(lo=lo, hi=hi, lo_open=lo_open, integer=integer)(text) == got


def test_model_simulation_honours_ctrl_c(tmp_path):
    """SIGINT during ``--simulate``: exit 130 at once, no traceback, its temporary file gone."""
    import signal
    import time

    proc = subprocess.Popen(
        [*COAPCC, *MODEL[:5], "20", *MODEL[6:], "--simulate", "200000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(TMPDIR=tmp_path),
    )
    # Ready when the simulation's trace file exists (created just before it starts): waited
    # for, not slept for.
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("coapcc-model-*")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the simulation never started"
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.strip() == "coapcc: interrupted", err
    assert not list(tmp_path.glob("coapcc-model-*"))
