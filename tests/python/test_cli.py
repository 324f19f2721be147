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
    # Makarem 2021
    "makarem-rto",
    "cocoa-4state",
    "idc-coap",
    "idc-coap-extra",
    "idc-coap-probing",
    "idc-coap-exp",
    "mbc-coap",
    "bdp-coap",
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


def test_help_command_prints_a_commands_help():
    r = run("help", "simulate")
    assert r.returncode == 0 and "--cc" in r.stdout and "--buffer" in r.stdout
    r = run("help", "sweep")
    assert r.returncode == 0 and "usage: coapcc sweep" in r.stdout


def test_no_command_prints_help_and_exits_2():
    r = run(check=False)
    assert r.returncode == 2 and "Commands:" in r.stderr and r.stdout == ""


@pytest.mark.parametrize("name", ["frobnicate", "simulte"])
def test_unknown_command_lists_every_command(name):
    r = run(name, check=False)
    assert r.returncode == 2 and f"unknown command '{name}'" in r.stderr
    for cmd in ("algorithms", "simulate", "server", "client", "emulate", "sweep", "report", "reproduce"):
        assert f"\n  {cmd} " in r.stderr, cmd
    assert "Traceback" not in r.stderr
    if name == "simulte":
        assert "did you mean 'simulate'" in r.stderr


@pytest.mark.parametrize("args", [["algorithms"], ["algorithms", "--json"], ["sweep", "anrw18", "--list"]])
def test_a_closed_pipe_ends_quietly(args):
    """`coapcc algorithms | head -1`: no error message, no traceback, exit 0."""
    p = subprocess.Popen([*COAPCC, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdout.close()  # the reader goes away with most of the output unread
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 0, err
    assert err == ""


def _threads(pid: int) -> int:
    """The number of threads of process ``pid`` (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def test_ctrl_c_exits_130_without_a_traceback():
    import signal
    import time

    # a simulation that runs for many seconds
    p = subprocess.Popen(
        # 2 000 clients x 100 000 exchanges: the time bound scales with the work, so this runs
        # for hours at any speed (the test interrupts it).
        [*COAPCC, "simulate", "--clients", "2000", "--exchanges", "100000", "--buffer", "1410000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Ready when the simulation runs: the front has handed the command to its worker thread
    # (a second thread of the process). Waited for, not slept for.
    deadline = time.monotonic() + 120
    while _threads(p.pid) < 2:
        assert p.poll() is None, p.communicate()
        assert time.monotonic() < deadline, "the simulation never started"
        time.sleep(0.01)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(shell):
    out = run("completion", shell).stdout
    for cmd in ("simulate", "sweep", "report", "reproduce"):
        assert cmd in out
    if shell == "bash":
        assert subprocess.run(["bash", "-n"], input=out, text=True).returncode == 0


def test_python_front_lists_every_rust_subcommand():
    """The Python ``coapcc`` forwards exactly the Rust CLI's subcommands (no silent drift)."""
    import json

    from coapcc import _native
    from coapcc.cli import RUST_COMMANDS

    rust = [name for name, _ in json.loads(_native.rust_commands_json()) if name != "help"]
    assert sorted(RUST_COMMANDS) == sorted(rust)
