"""Sweeps never hang, never orphan, never corrupt: full disks, killed sweeps, concurrent
sweeps, damaged parts, hostile experiment files, changed experiments."""

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest

import coapcc
from coapcc import ConfigError
from coapcc.dataset import DatasetBusy, DatasetLock, decode_record, done_hashes
from coapcc.experiment import Experiment, load_experiment
from coapcc.sweeper import DatasetMismatch, plan
from conftest import COAPCC, HERE, subprocess_env

CI = os.environ.get("CI") == "true"


def _tables(path):
    res = coapcc.load_results(path)
    return res.runs.drop(columns=["wall_s"]), res.flows


def _assert_same(a, b):
    pd.testing.assert_frame_equal(a[0], b[0])
    pd.testing.assert_frame_equal(a[1], b[1])


def _sweep_cmd(exp, out, *extra, runner="fakesim:fake_runner", workers=2):
    return [
        *COAPCC,
        "sweep",
        str(exp),
        "--out",
        str(out),
        "--workers",
        str(workers),
        "--runner",
        runner,
        "--no-progress",
        *extra,
    ]


def _children(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(d))
    return out


def _alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting for its new parent to reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _wait(cond, timeout=60, what="condition", proc=None):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if cond():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"sweep ended early: {proc.communicate()}")
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


# -- hostile experiment files -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["../../x", "/abs", "a/b", "..", ".hidden", "a\\b"])
def test_path_escaping_names_are_refused(name, tmp_path, monkeypatch):
    with pytest.raises(ConfigError) as e:
        Experiment.from_dict({"name": name, "grid": {"clients": [1]}})
    assert e.value.key == "name"
    # From the command line: exit 2, a clear message, nothing written anywhere.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.toml").write_text(f"name = {json.dumps(name)}\n[grid]\nclients = [1]\n")
    before = sorted(p.name for p in tmp_path.parent.iterdir())
    r = subprocess.run(
        [*COAPCC, "sweep", "bad.toml", "--workers", "1", "--runner", "fakesim:fake_runner"],
        cwd=tmp_path,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "cannot name a results folder" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert sorted(p.name for p in tmp_path.parent.iterdir()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]


@pytest.mark.parametrize(
    "text, key, needle",
    [
        ("[grid]\nseed = [1, 2]\n", "block[0].grid.seed", "derived"),
        ("[base]\nseed = 5\n[grid]\nclients = [1]\n", "base.seed", "derived"),
        ('[grid]\ntrace = ["a.jsonl"]\n', "block[0].grid.trace", "no traces"),
        ("[grid]\nclients = [1, 2, 1]\n", "block[0].grid.clients", "listed twice"),
        ("[grid]\nclients = [1]\n[quick]\nreplications = 0\n", "quick.replications", ">= 1"),
        ("[grid]\nclients = [1]\n[quick.grid]\nclients = [7]\n", "quick.grid", "keeps no block"),
    ],
)
def test_meaningless_grids_are_refused(text, key, needle, tmp_path):
    p = tmp_path / "e.toml"
    p.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_experiment(p)
    assert e.value.key == key and needle in str(e.value)


def test_list_agrees_with_the_sweep_when_blocks_share_runs(tmp_path, capsys):
    p = tmp_path / "shared.toml"
    p.write_text(
        textwrap.dedent(
            """
            name = "shared"
            replications = 2
            [base]
            exchanges = 3
            [[block]]
            name = "a"
            [block.grid]
            clients = [1, 2]
            [[block]]
            name = "b"
            [block.grid]
            clients = [2, 3]
            """
        )
    )
    from coapcc.sweeper import main

    assert main([str(p), "--list"]) == 0
    listed = capsys.readouterr().out
    assert listed.splitlines()[0] == "shared: 6 runs"
    assert "b: clients[2] x 2 replications = 4 runs (2 already in an earlier block, run once)" in listed
    o = coapcc.sweep(str(p), tmp_path / "out", workers=1, runner="fakesim:fake_runner", progress=False)
    assert o.total == o.ran == 6


def test_huge_grid_is_refused_before_planning(tmp_path):
    p = tmp_path / "huge.toml"
    p.write_text(f"[grid]\nclients = {list(range(1, 10001))}\nbuffer_bytes = {list(range(1000, 11000))}\n")
    # In a subprocess, bounded: planning 10^8 runs would take forever and gigabytes.
    for args in (["--list"], ["--workers", "1"]):
        r = subprocess.run(
            [*COAPCC, "sweep", str(p), "--out", str(tmp_path / "out"), *args],
            env=subprocess_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 2, r.stderr
        assert "100,000,000 runs, more than the limit" in r.stderr and "COAPCC_MAX_RUNS" in r.stderr
        assert len(r.stdout) < 1000


def test_interrupt_while_planning_exits_130_without_traceback(tiny_file, monkeypatch, capsys):
    from coapcc import sweeper

    def interrupted(exp):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweeper, "plan", interrupted)
    assert sweeper.main([str(tiny_file), "--workers", "1"]) == 130
    assert sweeper.main([str(tiny_file), "--list"]) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "Traceback" not in err


def test_empty_sweep_is_refused(tmp_path):
    exp = Experiment.from_dict({"name": "e", "grid": {"clients": [1]}})
    object.__setattr__(exp, "blocks", ())
    with pytest.raises(ConfigError, match="no runs"):
        coapcc.sweep(exp, tmp_path / "out", workers=1, progress=False)


# -- killed sweeps: no orphans ------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killing_a_sweep_leaves_no_worker(tiny_file, tmp_path, sig):
    out = tmp_path / "res"
    env = subprocess_env(COAPCC_COUNT_FILE=tmp_path / "count.txt", COAPCC_SLEEP="0.3")
    cmd = _sweep_cmd(tiny_file, out, runner="fakesim:counting_runner")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait(lambda: len(_children(proc.pid)) >= 2 and len(done_hashes(out)) >= 2, what="workers", proc=proc)
        workers = _children(proc.pid)
        proc.send_signal(sig)  # the sweep process only, as a scheduler or a user would
        _, err = proc.communicate(timeout=30)
        _wait(lambda: not any(_alive(w) for w in workers), timeout=15, what="the workers to die")
    finally:
        if proc.poll() is None:
            proc.kill()
    if sig == signal.SIGTERM:
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert "interrupted" in err and "Traceback" not in err
    else:
        assert proc.returncode == -signal.SIGKILL
    done = len(done_hashes(out))
    assert done >= 2
    # The rerun does the rest, and the result is the uninterrupted sweep's.
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"17 runs, {done} done, {17 - done} to run" in r.stderr
    ref = tmp_path / "ref"
    coapcc.sweep(str(tiny_file), ref, workers=1, progress=False)
    _assert_same(_tables(out), _tables(ref))


def test_a_dying_worker_fails_its_run_only(tiny_file, tmp_path, monkeypatch):
    monkeypatch.setenv("COAPCC_DIE_SEED_MOD", "5")
    o = coapcc.sweep(
        str(tiny_file), tmp_path / "res", workers=2, runner="fakesim:dying_runner", progress=False
    )
    assert o.failed and all("WorkerDied" in m for _, m in o.failed)
    assert o.ran + len(o.failed) == 17 and o.ran > 0


# -- concurrent sweeps --------------------------------------------------------------------------


def test_a_second_sweep_into_the_same_dataset_is_refused(tiny_file, tmp_path):
    out = tmp_path / "res"
    env = subprocess_env(COAPCC_COUNT_FILE=tmp_path / "count.txt", COAPCC_SLEEP="0.2")
    cmd = _sweep_cmd(tiny_file, out, runner="fakesim:counting_runner")
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait(lambda: len(done_hashes(out)) >= 1, what="the first sweep", proc=first)
        second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        assert second.returncode == 2, second.stderr
        assert f"is in use by another sweep (pid {first.pid})" in second.stderr
        _, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err
    ref = tmp_path / "ref"
    coapcc.sweep(str(tiny_file), ref, workers=1, progress=False)
    _assert_same(_tables(out), _tables(ref))


def test_dataset_lock_is_exclusive_and_released(tmp_path):
    with DatasetLock(tmp_path / "d"), pytest.raises(DatasetBusy, match="in use by another sweep"):
        DatasetLock(tmp_path / "d").acquire()
    with DatasetLock(tmp_path / "d"):
        pass


# -- damaged datasets ---------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["empty-runs", "cut-runs", "empty-flows", "cut-flows", "no-flows"])
def test_damaged_part_is_quarantined_and_rerun(tiny_file, tmp_path, damage, capsys):
    out, ref = tmp_path / "res", tmp_path / "ref"
    kw = {"runner": "fakesim:fake_runner", "progress": False}
    coapcc.sweep(str(tiny_file), ref, workers=1, **kw)
    # The same runs, written in two parts (as two sweeps, or the part limit, would).
    from coapcc.dataset import DatasetWriter
    from coapcc.executors import args as _args
    from coapcc.executors import execute
    from coapcc.sweeper import _write_meta

    exp = load_experiment(tiny_file)
    tasks = plan(exp)
    _write_meta(out, exp, tasks)
    w = DatasetWriter(out, part_runs=9)
    for t in tasks:
        w.add(*execute("fakesim:fake_runner", *_args(t)))
    w.close()
    parts = sorted((out / "runs").glob("part-*.parquet"))
    assert len(parts) == 2
    victim = parts[0].name
    sub = "runs" if damage.endswith("runs") else "flows"
    f = out / sub / victim
    if damage.startswith("empty"):
        f.write_bytes(b"")
    elif damage.startswith("cut"):
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    else:
        f.unlink()
    capsys.readouterr()
    # Reading skips the damaged part with a warning (no crash).
    with pytest.warns(RuntimeWarning, match="damaged part skipped"):
        res = coapcc.load_results(out)
    assert len(res.runs) == 17 - 9
    # The next sweep quarantines it, says so, and runs its runs again.
    o = coapcc.sweep(str(tiny_file), out, workers=1, **kw)
    err = capsys.readouterr().err
    assert f"damaged part {victim}" in err and "quarantine" in err
    assert (o.done_before, o.ran) == (8, 9) and o.complete
    assert any(p.name.endswith(victim) for p in (out / "quarantine").iterdir())
    _assert_same(_tables(out), _tables(ref))


def test_files_are_fsynced_before_they_count(tiny_file, tmp_path, monkeypatch):
    synced = []
    real = os.fsync

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    out = tmp_path / "res"
    coapcc.sweep(str(tiny_file), out, workers=1, runner="fakesim:fake_runner", progress=False)
    names = [os.path.basename(p) for p in synced]
    assert any(n.startswith(".part-") for n in names)  # the part files, before their rename
    assert str(out / "runs") in synced and str(out / "flows") in synced  # and their folders
    assert any(n.startswith(".experiment.json") for n in names)


def test_a_write_that_fails_midway_leaves_nothing(tmp_path):
    """An exception while a dataset file is written (here a table whose schema changes halfway)
    leaves neither the file nor its temporary; a file written before stays as it was."""
    import pyarrow as pa

    from coapcc import storage as dataset

    path = tmp_path / "part.parquet"
    dataset.atomic_write_bytes(b"old", path)
    good = pa.table({"a": [1, 2]})
    bad = pa.table({"b": ["x"]})
    with pytest.raises(ValueError):
        dataset._atomic_write_tables([good, bad], path)
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["part.parquet"]
    dataset._atomic_write_tables([good, good], path)
    assert pa.parquet.read_table(path).num_rows == 4


# -- full disk --------------------------------------------------------------------------------


BIG = """
name = "big"
seed = 3
replications = 10
[base]
exchanges = 20
[grid]
algorithm = ["default", "cocoa"]
clients = [150, 300]
"""


def _can_mount() -> bool:
    return os.geteuid() == 0 and shutil.which("mount") is not None and sys.platform.startswith("linux")


def test_full_disk_stops_the_sweep_cleanly(tmp_path):
    """On a full disk the sweep stops (no hang), says why, leaves no worker, and keeps the
    finished runs; once there is room the rerun completes to the uninterrupted result. Uses a
    small tmpfs (root), else a fault-injecting writer."""
    exp = tmp_path / "big.toml"
    exp.write_text(BIG)
    disk = tmp_path / "disk"
    disk.mkdir()
    out = disk / "res"
    mounted = False
    if _can_mount():
        r = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=384k", "tmpfs", str(disk)], capture_output=True
        )
        mounted = r.returncode == 0
        assert mounted or not CI, r.stderr
    try:
        cmd = _sweep_cmd(exp, out)
        env = subprocess_env()
        if not mounted:  # fault injection: ENOSPC after some bytes
            cmd = [sys.executable, os.path.join(HERE, "diskfull.py"), *cmd[3:]]
            env["COAPCC_DISK_BYTES"] = str(384 * 1024)
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen: set[int] = set()
        t0 = time.monotonic()
        while proc.poll() is None and time.monotonic() - t0 < 120:
            seen.update(_children(proc.pid))
            time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
            raise AssertionError("the sweep hung on a full disk")
        _, err = proc.communicate(timeout=10)
        assert proc.returncode == 1, err
        assert "No space left on device" in err and "Traceback" not in err, err
        _wait(lambda: not any(_alive(w) for w in seen), timeout=15, what="the workers to die")
        kept = len(done_hashes(out))
        if mounted:
            subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        else:
            env["COAPCC_DISK_BYTES"] = str(1 << 40)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert f"40 runs, {kept} done, {40 - kept} to run" in r.stderr
        assert not list(out.glob("*/.*.tmp"))
        ref = tmp_path / "ref"
        coapcc.sweep(str(exp), ref, workers=1, runner="fakesim:fake_runner", progress=False)
        _assert_same(_tables(out), _tables(ref))
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(disk)], check=False)


def test_full_disk_in_process_raises_oserror_and_keeps_runs(tiny_file, tmp_path, monkeypatch):
    """The same through the Python API, serially: a write fails with ENOSPC."""
    from coapcc import storage as dataset

    real = dataset._atomic_write_tables

    def full(tables, path):
        if path.name.startswith("part-"):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(tables, path)

    monkeypatch.setattr(dataset, "_atomic_write_tables", full)
    out = tmp_path / "res"
    with pytest.raises(OSError, match="No space left"):
        coapcc.sweep(str(tiny_file), out, workers=1, runner="fakesim:fake_runner", progress=False)
    assert len(done_hashes(out)) == 17  # all in the journal
    monkeypatch.setattr(dataset, "_atomic_write_tables", real)
    o = coapcc.sweep(str(tiny_file), out, workers=1, runner="fakesim:fake_runner", progress=False)
    assert (o.done_before, o.ran) == (17, 0)
    assert [p.name[:5] for p in (out / "runs").iterdir()] == ["part-"]


# -- a changed experiment -----------------------------------------------------------------------


def test_resweep_of_a_changed_experiment_is_refused(tiny_file, tmp_path):
    out = tmp_path / "res"
    kw = {"workers": 1, "runner": "fakesim:fake_runner", "progress": False}
    coapcc.sweep(str(tiny_file), out, **kw)
    before = _tables(out)
    text = tiny_file.read_text()
    # A new title or description is the same experiment.
    tiny_file.write_text(text.replace('name = "tiny"', 'name = "tiny"\ntitle = "Tiny, retitled"'))
    assert coapcc.sweep(str(tiny_file), out, **kw).ran == 0
    for patch in (
        ("clients = [1, 6]", "clients = [1, 6, 8]"),  # a grid value
        ("seed = 11", "seed = 12"),  # the base seed
        ("exchanges = 4", "exchanges = 5"),  # the base
        ('name = "mixed"\nreplications = 1', 'name = "mixed"\nreplications = 2'),
    ):
        assert patch[0] in text
        tiny_file.write_text(text.replace(*patch))
        with pytest.raises(DatasetMismatch, match="another version of experiment 'tiny'"):
            coapcc.sweep(str(tiny_file), out, **kw)
        _assert_same(before, _tables(out))  # nothing was added
    r = subprocess.run(
        _sweep_cmd(tiny_file, out), env=subprocess_env(), capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 2 and "would mix two grids" in r.stderr and "block 'mixed'" in r.stderr
    # Into a fresh folder it runs.
    assert coapcc.sweep(str(tiny_file), tmp_path / "new", **kw).complete


def test_progress_bar_counts_runs(tiny_file, tmp_path, capsys):
    coapcc.sweep(str(tiny_file), tmp_path / "res", workers=1, runner="fakesim:fake_runner", progress=True)
    err = capsys.readouterr().err
    assert "100%" in err and "17/17 runs" in err


# -- batching: bounded memory, same tables ------------------------------------------------------


def _records(tiny_file):
    from coapcc.executors import args as _args
    from coapcc.executors import execute

    tasks = plan(load_experiment(tiny_file))
    return [execute("fakesim:fake_runner", *_args(t)) for t in tasks]


def test_flows_chunks_make_the_same_table(tiny_file):
    import pyarrow as pa

    from coapcc.dataset import records_to_tables

    recs = [decode_record(r) for r, *_ in _records(tiny_file)]
    runs1, one = records_to_tables(recs, chunk_rows=10**6)
    runs2, many = records_to_tables(recs, chunk_rows=5)
    one, many = list(one), list(many)
    assert len(one) == 1 and len(many) > 5 and all(len(c) <= 6 for c in many)  # whole runs (<= 6 flows)
    assert runs1.equals(runs2)
    assert pa.concat_tables(many).equals(one[0])
    assert one[0].num_rows == sum(len(r["flows"]["client"]) for r in recs)


def test_writer_holds_at_most_one_part(tiny_file, tmp_path):
    from coapcc.dataset import DatasetWriter

    recs = _records(tiny_file)
    out = tmp_path / "res"
    w = DatasetWriter(out, part_flows=10)
    for rec, flows in recs:
        w.add(rec, flows)
        assert w._flows < 10 + 6  # flushed as soon as the limit is reached
    w.close()
    parts = list((out / "runs").glob("part-*.parquet"))
    assert len(parts) > 3 and not list((out / "runs").glob("journal-*"))
    res = coapcc.load_results(out)
    assert len(res.runs) == 17 and res.runs["config_hash"].is_unique


def test_fct_percentiles_equal_describe_bitwise():
    import random

    from coapcc.kinds.sim import _fct_percentiles
    from coapcc.stats import describe

    rng = random.Random(5)
    cases = [[], [1.5], [2.0, 2.0], [float("nan"), 3.0]]
    for _ in range(3000):
        n = rng.randint(1, 450)
        kind = rng.random()
        if kind < 0.3:  # ties, as completion times of identical flows have
            vals = [rng.choice([216.5, 217.25, 300.125]) for _ in range(n)]
        elif kind < 0.6:
            vals = [rng.uniform(0, 1e4) for _ in range(n)]
        else:
            vals = [rng.lognormvariate(3, 2) for _ in range(n)]
        cases.append(vals)
    for vals in cases:
        want = describe(vals)
        got = _fct_percentiles(vals)
        for k, v in got.items():
            w = want[k]
            assert (v == w) or (v != v and w != w), (k, v, w, vals)


def test_run_summary_of_packed_columns_equals_the_lists_bitwise():
    """A run's row from the simulator's packed columns (numpy on the arrays) holds exactly the
    values the same columns as lists give."""
    from coapcc import _native
    from coapcc.config import SimConfig, to_native
    from coapcc.kinds.sim import run_summary

    for kw in (
        {"algorithm": "cocoa", "clients": 40, "buffer_bytes": 2500, "errors": "bernoulli:0.01"},
        {"groups": [{"algorithm": "default", "clients": 3}, {"algorithm": "fasor", "clients": 2}]},
        {
            "transport": "tcp",
            "algorithm": "newreno:preset=helsinki2018",
            "workload": "bulk:1000",
            "clients": 3,
        },
    ):
        cj = json.dumps(to_native(SimConfig(seed=9, **{"exchanges": 5, **kw})))
        packed = run_summary(_native.simulate_columns(cj, packed=True))
        lists = run_summary(_native.simulate_columns(cj))
        assert list(packed) == list(lists)
        for k, v in lists.items():
            if k == "wall_s":  # the simulator's own running time
                continue
            assert type(packed[k]) is type(v) and (packed[k] == v or (v != v and packed[k] != packed[k])), k
        assert packed["finished_flows"] > 0 and packed["transmissions"] > 0


def test_per_run_files_of_older_versions_are_consolidated(tiny_file, tmp_path):
    """Datasets written by earlier versions hold one file per run: a sweep consolidates them
    into a part and runs nothing again."""
    import pyarrow.parquet as pq

    from coapcc.dataset import join_flows, records_to_tables
    from coapcc.sweeper import _write_meta

    out, ref = tmp_path / "res", tmp_path / "ref"
    coapcc.sweep(str(tiny_file), ref, workers=1, runner="fakesim:fake_runner", progress=False)
    exp = load_experiment(tiny_file)
    _write_meta(out, exp, plan(exp))
    for sub in ("runs", "flows"):
        (out / sub).mkdir(parents=True)
    for rec, *_ in _records(tiny_file):
        r = decode_record(rec)
        rt, chunks = records_to_tables([r])
        pq.write_table(rt, out / "runs" / f"{r['h']}.parquet")
        # Those versions wrote the configuration on every flow row.
        pq.write_table(join_flows(rt, pa_concat(chunks)), out / "flows" / f"{r['h']}.parquet")
    _assert_same(_tables(out), _tables(ref))
    o = coapcc.sweep(str(tiny_file), out, workers=1, runner="fakesim:fake_runner", progress=False)
    assert (o.done_before, o.ran) == (17, 0)
    assert [p.name[:5] for p in (out / "runs").iterdir()] == ["part-"]
    _assert_same(_tables(out), _tables(ref))


def pa_concat(tables):
    import pyarrow as pa

    return pa.concat_tables(list(tables))


# -- the flows layout: configuration once per run ----------------------------------------------


def test_flows_parts_store_the_configuration_once_per_run(tiny_file, tmp_path):
    """A flows part holds the run key and the per-flow fields; loading puts every run's
    configuration back on its flows. The simulator's columnar report (packed columns) and its
    JSON report make the same dataset."""
    import pyarrow.parquet as pq

    from coapcc.tables import RUN_COLUMNS_KEY

    out, via_json = tmp_path / "res", tmp_path / "json"
    coapcc.sweep(str(tiny_file), out, workers=1, progress=False)
    coapcc.sweep(str(tiny_file), via_json, workers=1, progress=False, runner="coapcc.runner:native_runner")
    parts = sorted((out / "flows").glob("part-*.parquet"))
    assert parts
    for p in parts:
        schema = pq.read_schema(p)
        assert RUN_COLUMNS_KEY in schema.metadata and schema.names[0] == "config_hash"
        assert not {"algorithm", "clients", "buffer_bytes", "seed", "link_downlink_rate_bps"} & set(
            schema.names
        )
        assert "fct_s" in schema.names and "cc" in schema.names
    res = coapcc.load_results(out)
    runs, flows = res.runs, res.flows
    assert flows.groupby("config_hash").size().to_dict() == runs.set_index("config_hash")["clients"].to_dict()
    keys = [
        "config_hash",
        "clients",
        "seed",
        "algorithm",
        "buffer_bytes",
        "link_downlink_rate_bps",
        "replication",
    ]
    merged = flows.merge(runs[keys], on="config_hash", suffixes=("", "_run"), validate="many_to_one")
    for c in keys[1:]:
        assert (merged[c] == merged[f"{c}_run"]).all(), c
    # Columns as before: the run's configuration columns first, then the flow's fields.
    cfg_cols = json.loads(pq.read_schema(parts[0]).metadata[RUN_COLUMNS_KEY])
    assert cfg_cols == list(runs.columns[: len(cfg_cols)]) and "point_hash" in cfg_cols
    assert list(flows.columns[: len(cfg_cols)]) == cfg_cols
    assert list(flows.columns[len(cfg_cols) :])[:4] == ["client", "group", "cc", "fct_s"]
    _assert_same(_tables(out), _tables(via_json))


def test_datasets_of_the_previous_layout_load_and_resume(tiny_file, tmp_path):
    """Parts written before the flows layout changed (every flow row with its run's
    configuration) and journals of the previous record format load as they are, and a
    sweep resumes such a dataset: the tables equal those of a fresh sweep."""
    import pyarrow.parquet as pq

    from coapcc.storage import join_flows, write_part
    from coapcc.sweeper import _write_meta

    kw = {"workers": 1, "runner": "fakesim:fake_runner", "progress": False}
    ref, out = tmp_path / "ref", tmp_path / "res"
    coapcc.sweep(str(tiny_file), ref, **kw)
    exp = load_experiment(tiny_file)
    _write_meta(out, exp, plan(exp))
    for sub in ("runs", "flows"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    recs = _records(tiny_file)
    # Ten runs in a part of the previous layout...
    pid = write_part(out, [decode_record(r) for r, *_ in recs[:10]])
    fp = out / "flows" / f"{pid}.parquet"
    pq.write_table(join_flows(pq.read_table(out / "runs" / f"{pid}.parquet"), pq.read_table(fp)), fp)
    assert {"algorithm", "clients", "seed"} <= set(pq.read_schema(fp).names)
    assert pq.read_schema(fp).metadata is None or b"coapcc.run_columns" not in pq.read_schema(fp).metadata
    # ... three in the journal of an interrupted sweep (records with flows as lists).
    (out / "runs" / "journal-1-1.jsonl").write_bytes(b"".join(_jsonl(r) for r, *_ in recs[10:13]))
    loaded = _tables(out)
    assert len(loaded[0]) == 13 and loaded[1]["clients"].notna().all()
    o = coapcc.sweep(str(tiny_file), out, **kw)
    assert (o.done_before, o.ran, o.complete) == (13, 4, True)
    _assert_same(_tables(out), _tables(ref))


@pytest.mark.parametrize(
    "kw",
    [
        {"algorithm": "cocoa", "clients": 30, "buffer_bytes": 2500, "errors": "bernoulli:0.00001"},
        {
            "groups": [{"algorithm": "default", "clients": 3}, {"algorithm": "fasor", "clients": 2}],
            "exchanges": 5,
        },
        {
            "transport": "tcp",
            "algorithm": "newreno:preset=helsinki2018",
            "workload": "bulk:1000",
            "clients": 3,
        },
    ],
)
def test_columnar_report_equals_the_json_report(kw):
    """simulate_columns holds the JSON report's values: per-flow columns (lists, or packed
    little-endian bytes), the run's scalars and link counters, and the resolved configuration
    as exactly the canonical text Python makes of the JSON report's."""
    import numpy as np

    from coapcc import _native
    from coapcc.config import SimConfig, canonical_json, to_native

    cj = json.dumps(to_native(SimConfig(seed=4, **kw)))
    report = json.loads(_native.simulate_json(cj))
    cols = _native.simulate_columns(cj)
    packed = _native.simulate_columns(cj, packed=True)
    assert cols["config_json"] == canonical_json(report["config"]) == packed["config_json"]
    for k in (
        "retransmissions_per_exchange",
        "links",
        "useful_fraction",
        "sim_time_s",
        "events",
        "truncated",
    ):
        assert cols[k] == report[k] == packed[k], k
    flows = report["flows"]
    assert list(cols["flows"]) == list(flows[0]) == list(packed["flows"])
    types = packed["flow_types"]
    assert "cc" not in types and {"client", "fct_s", "transmissions"} <= set(types)
    for k, col in cols["flows"].items():
        want = [f[k] for f in flows]
        assert col == want, k
        if k in types:
            got = np.frombuffer(packed["flows"][k], "<" + types[k]).tolist()
            assert len(got) == len(want), k
            assert all(g == w or (w is None and g != g) for g, w in zip(got, want)), k  # None: NaN
        else:
            assert packed["flows"][k] == want, k
    if kw.get("transport") == "tcp":
        assert {"segments_sent", "bytes_delivered", "setup_s"} <= set(cols["flows"])


def _jsonl(record: bytes) -> bytes:
    """A record as the JSON line of a journal of the previous version (packed columns as
    base64)."""
    import base64

    r = decode_record(record)
    for k, v in r["flows"].items():
        if isinstance(v, tuple):
            r["flows"][k] = {"t": v[0], "b": base64.b64encode(v[1]).decode()}
    return json.dumps(r, separators=(",", ":")).encode() + b"\n"


@pytest.mark.parametrize("layout", ["bin", "jsonl"])
def test_journal_of_packed_records_loads_and_becomes_a_part(tiny_file, tmp_path, layout):
    """Records of the simulator's packed columns read back as the same tables, before
    (pending runs) and after a sweep turns the journal into a part: from a journal of this
    version (binary records, the last one cut off by a crash) and of the previous one (JSON
    lines, base64 of the packed columns)."""
    from coapcc.executors import args as _args
    from coapcc.executors import execute
    from coapcc.sweeper import _write_meta

    ref, out = tmp_path / "ref", tmp_path / "res"
    coapcc.sweep(str(tiny_file), ref, workers=1, progress=False)
    exp = load_experiment(tiny_file)
    tasks = plan(exp)
    _write_meta(out, exp, tasks)
    (out / "runs").mkdir(parents=True)
    records = []
    for t in tasks:
        record, flows = execute(None, *_args(t))
        assert isinstance(decode_record(record)["flows"]["fct_s"], tuple)  # packed: ("f8", bytes)
        assert flows == len(decode_record(record)["flows"]["client"][1]) // 4
        records.append(record)
    if layout == "bin":
        cut = records[0][: len(records[0]) // 2]  # a crash while writing a run: not counted
        (out / "runs" / "journal-1-1.bin").write_bytes(b"".join(records) + cut)
        assert len(done_hashes(out)) == len(records)
    else:
        (out / "runs" / "journal-1-1.jsonl").write_bytes(b"".join(_jsonl(r) for r in records))
    _assert_same(_tables(out), _tables(ref))
    o = coapcc.sweep(str(tiny_file), out, workers=1, progress=False)
    assert (o.done_before, o.ran) == (17, 0)
    assert not list((out / "runs").glob("journal-*"))
    _assert_same(_tables(out), _tables(ref))


# -- the dataset's format version -----------------------------------------------------------------


def test_dataset_format_is_marked_and_a_newer_one_is_refused(tiny_file, tmp_path):
    from coapcc.dataset import DATASET_FORMAT, DatasetFormatError, check_format

    out = tmp_path / "res"
    kw = {"workers": 1, "runner": "fakesim:fake_runner", "progress": False}
    coapcc.sweep(str(tiny_file), out, **kw)
    meta_path = out / "experiment.json"
    meta = json.loads(meta_path.read_text())
    assert meta["dataset_format"] == DATASET_FORMAT == check_format(out)
    before = _tables(out)
    files = sorted((p.relative_to(out), p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file())
    # A dataset from a future coapcc is neither read nor touched by a sweep.
    meta_path.write_text(json.dumps({**meta, "dataset_format": DATASET_FORMAT + 1, "coapcc_version": "9.9"}))
    with pytest.raises(
        DatasetFormatError, match=r"coapcc 9\.9 in dataset format 3; this coapcc reads formats up to 2"
    ):
        coapcc.load_results(out)
    with pytest.raises(DatasetFormatError, match="upgrade coapcc"):
        coapcc.sweep(str(tiny_file), out, **kw)
    after = sorted((p.relative_to(out), p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file())
    untouched = [f for f in files if f[0].name not in ("experiment.json", ".lock")]
    assert untouched and [f for f in after if f[0].name not in ("experiment.json", ".lock")] == untouched
    r = subprocess.run(
        _sweep_cmd(tiny_file, out), env=subprocess_env(), capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 2 and "dataset format 3" in r.stderr and "Traceback" not in r.stderr
    # A garbled marker is a clear error too; an unmarked dataset (older coapcc) reads as before.
    meta_path.write_text(json.dumps({**meta, "dataset_format": "two"}))
    with pytest.raises(DatasetFormatError, match="not a format version"):
        coapcc.load_results(out)
    meta_path.write_text(json.dumps({k: v for k, v in meta.items() if k != "dataset_format"}))
    assert check_format(out) == 0
    _assert_same(before, _tables(out))
