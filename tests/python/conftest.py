"""Shared fixtures of the Python suite."""

import os
import signal
import sys
import textwrap
import time

import pytest

# Tests send Ctrl-C (SIGINT) to the commands they start. A suite launched as a background job
# without job control (`nohup scripts/test &`) inherits SIGINT ignored, and an ignored signal
# stays ignored across exec, so every command would shrug the Ctrl-C off. Handling it here
# (Python's own handler) makes the commands start with the default disposition again.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

HERE = os.path.dirname(os.path.abspath(__file__))

TINY = """
# A tiny experiment for tests: 2 algorithms x 2 client counts x 2 buffers, 2 replications,
# plus a mixed block; a few exchanges per flow.
name = "tiny"
seed = 11
replications = 2

[base]
exchanges = 4

[[block]]
name = "single"
[block.grid]
algorithm = ["default", "cocoa"]
clients = [1, 6]
buffer_bytes = [2500, 28200]

[[block]]
name = "mixed"
replications = 1
[block.base]
clients = 6
buffer_bytes = 2500
[block.grid]
groups = [[{ algorithm = "default", share = 0.5 }, { algorithm = "default-fb1", share = 0.5 }]]

[quick]
replications = 1
[quick.grid]
clients = [6]
"""


@pytest.fixture
def tiny_file(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text(textwrap.dedent(TINY))
    return p


def subprocess_env(**extra):
    """Environment for `python -m coapcc` subprocesses: this test folder importable (fake
    runners), plus ``extra``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [HERE, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    )
    env.update({k: str(v) for k, v in extra.items()})
    return env


COAPCC = [sys.executable, "-m", "coapcc"]


def wait_for_runs(out, n, proc, timeout=120):
    """Wait until the sweep writing ``out`` (in subprocess ``proc``) has finished ``n`` runs;
    fails if ``proc`` ends first or nothing comes within ``timeout`` seconds."""
    from coapcc.dataset import done_hashes

    t0 = time.time()
    while time.time() - t0 < timeout:
        if (out / "runs").is_dir() and len(done_hashes(out)) >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the sweep made no progress")


def assert_same_tables(a, b):
    """Two ``(runs, flows)`` table pairs are equal."""
    import pandas as pd

    pd.testing.assert_frame_equal(a[0], b[0])
    pd.testing.assert_frame_equal(a[1], b[1])
