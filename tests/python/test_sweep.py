"""Experiment files, sweeps, the results dataset, resume and executor equivalence."""

import hashlib
import json
import os
import signal
import subprocess

import pytest

import coapcc
from coapcc import ConfigError, SimConfig
from coapcc.config import canonical_json
from coapcc.dataset import compact, done_hashes
from coapcc.experiment import Experiment, derive_seed, load_experiment
from coapcc.sweeper import plan
from conftest import COAPCC, assert_same_tables, subprocess_env, wait_for_runs

# -- experiment files ---------------------------------------------------------------------


def test_experiment_file_grid_blocks_replications(tiny_file):
    exp = load_experiment(tiny_file)
    assert exp.name == "tiny" and exp.seed == 11 and [b.name for b in exp.blocks] == ["single", "mixed"]
    runs = exp.runs()
    assert len(runs) == 2 * 2 * 2 * 2 + 1
    single = [r for r in runs if r.block == "single"]
    # Cartesian product, first key outermost, in file order.
    assert [(r.config.algorithm, r.config.clients, r.config.buffer_bytes) for r in single[:4]] == [
        ("default", 1, 2500),
        ("default", 1, 2500),
        ("default", 1, 28200),
        ("default", 1, 28200),
    ]
    assert all(r.config.exchanges == 4 for r in runs)
    mixed = [r for r in runs if r.block == "mixed"][0].config
    assert mixed.label == "default+default-fb1" and mixed.algorithm_specs()[1][1] == 3
    quick = exp.quick_variant()
    assert quick.name == "tiny-quick" and len(quick.runs()) == 2 * 2 + 1
    assert "single: algorithm[2] x clients[2] x buffer_bytes[2] x 2 replications = 16 runs" in exp.summary()


def test_seed_derivation_is_documented_and_order_free(tiny_file):
    exp = load_experiment(tiny_file)
    runs = exp.runs()
    seeds = [r.config.seed for r in runs]
    assert len(set(seeds)) == len(seeds)
    r = runs[5]
    point = r.config.to_dict()
    point.pop("seed")
    point.pop("trace")
    material = canonical_json({"base_seed": 11, "point": point, "replication": r.replication})
    expected = int.from_bytes(hashlib.sha256(material.encode()).digest()[:8], "big") & (2**63 - 1)
    assert r.config.seed == expected == derive_seed(11, r.config, r.replication)
    # Reordering the grid or renaming the block does not change any seed.
    text = (
        tiny_file.read_text().replace("clients = [1, 6]", "clients = [6, 1]").replace('"single"', '"renamed"')
    )
    other = Experiment.from_dict(__import__("tomllib").loads(text))
    assert sorted(seeds) == sorted(x.config.seed for x in other.runs())


@pytest.mark.parametrize(
    "patch, key, needle",
    [
        (("clients = [1, 6]", "clients = [1, 0]"), "clients", "block 'single'"),
        (("exchanges = 4", "exchanges = 4\nbogus = 1"), "bogus", "unknown configuration key"),
        (("clients = [1, 6]", "clients = []"), "block[0].grid.clients", "non-empty list"),
        (('name = "tiny"', 'name = "tiny"\ncolour = "red"'), "colour", "unknown experiment key"),
    ],
)
def test_experiment_errors_name_the_key(tiny_file, patch, key, needle):
    tiny_file.write_text(tiny_file.read_text().replace(*patch))
    with pytest.raises(ConfigError) as e:
        load_experiment(tiny_file)
    assert e.value.key == key and needle in str(e.value)


def test_unknown_algorithm_in_grid_fails_the_plan(tiny_file):
    tiny_file.write_text(tiny_file.read_text().replace('["default", "cocoa"]', '["default", "reno"]'))
    with pytest.raises(ConfigError, match="unknown algorithm 'reno'.*block 'single'"):
        plan(load_experiment(tiny_file))


def test_catalogue_entries_plan():
    cat = coapcc.catalogue()
    assert {"anrw18", "fasor18"} <= set(cat)
    anrw = coapcc.find_experiment("anrw18")
    tasks = plan(anrw)  # resolves every algorithm spec with the helsinki2018 preset
    assert len(tasks) == 6 * 6 * 4 * 2 * 20 + 2 * 5 * 4 * 2 * 20
    algs = {t.planned.config.label for t in tasks}
    assert algs == {
        "default",
        "cocoa",
        "default-fb1",
        "default-fb2",
        "cocoa-fb1",
        "cocoa-fb2",
        "default+default-fb1",
        "default+default-fb2",
    }
    assert all(t.planned.config.preset == "helsinki2018" and t.planned.config.exchanges == 50 for t in tasks)
    fasor = coapcc.find_experiment("fasor18")
    ft = plan(fasor)
    errs = [t for t in ft if t.planned.block == "errors"]
    assert len(errs) == 5 * 2 * 2 * 40
    assert {(t.planned.config.clients, t.planned.config.buffer_bytes) for t in errs} == {(10, 2500)}
    assert {t.planned.config.errors for t in errs} == {"medium", "high"}
    assert len(ft) - len(errs) == 5 * 3 * 3 * 2 * 20
    assert {t.planned.config.label for t in ft} == {"default", "cocoa", "cocoa-fb1", "fasor", "fasor-token"}
    for exp in (anrw, fasor):
        assert exp.quick_variant().replications < exp.replications


# -- sweeps ---------------------------------------------------------------------------------


def _tables(path):
    res = coapcc.load_results(path)
    return res.runs.drop(columns=["wall_s"]), res.flows


def test_sweep_writes_a_tidy_dataset(tiny_file, tmp_path, capsys):
    out = tmp_path / "res"
    o = coapcc.sweep(str(tiny_file), out, workers=1, progress=False)
    assert (o.total, o.done_before, o.ran, o.failed, o.complete) == (17, 0, 17, [], True)
    err = capsys.readouterr().err
    assert "17 runs, 0 done, 17 to run (serial)" in err
    res = coapcc.load_results(out)
    runs, flows = res.runs, res.flows
    assert len(runs) == 17 and runs["config_hash"].is_unique
    assert len(flows) == 2 * 2 * 2 * (1 + 6) + 6
    for t in (runs, flows):
        for col in (
            "config_hash",
            "seed",
            "point_hash",
            "algorithm",
            "clients",
            "buffer_bytes",
            "errors",
            "workload",
            "exchanges",
            "preset",
            "link_downlink_rate_bps",
            "coap_token_len",
            "server_duplicate_mode",
            "block",
            "replication",
        ):
            assert col in t.columns, col
            assert t[col].notna().all(), col
    # A run row's configuration is the exact configuration that ran.
    for _, r in runs.iterrows():
        cfg = SimConfig.from_flat(r.to_dict())
        assert cfg.seed == r["seed"] and coapcc.config.config_hash(cfg) == r["config_hash"]
        assert json.loads(r["config_json"])["seed"] == r["seed"]
    # Histogram: every completed exchange counted once.
    h = res.histogram
    assert h.groupby("config_hash")["count"].sum().sum() == runs["completed_exchanges"].sum()
    assert (runs["completed_exchanges"] == runs["clients"] * 4).all()
    # Mixed run: per-flow algorithm.
    mixed = flows[flows["groups"] != ""]
    assert mixed.groupby("cc").size().to_dict() == {"default": 3, "default-fb1": 3}
    # Parts: the per-run files were consolidated.
    assert all(p.name.startswith("part-") for p in (out / "runs").glob("*.parquet"))
    # Rerun: nothing to do.
    o2 = coapcc.sweep(str(tiny_file), out, workers=1, progress=False)
    assert (o2.done_before, o2.ran) == (17, 0)
    assert "17 done, 0 to run" in capsys.readouterr().err


def test_resume_after_a_failure_runs_only_the_missing(tiny_file, tmp_path, monkeypatch):
    import fakesim

    count = tmp_path / "count.txt"
    monkeypatch.setenv("COAPCC_COUNT_FILE", str(count))
    monkeypatch.setenv("COAPCC_FAIL_AFTER", "6")
    out = tmp_path / "res"
    o = coapcc.sweep(str(tiny_file), out, workers=1, runner=fakesim.counting_runner, progress=False)
    assert o.ran == 6 and len(o.failed) == 11 and not o.complete
    assert len(done_hashes(out)) == 6
    monkeypatch.setenv("COAPCC_FAIL_AFTER", "-1")
    count.write_text("")
    o = coapcc.sweep(str(tiny_file), out, workers=1, runner=fakesim.counting_runner, progress=False)
    assert (o.done_before, o.ran) == (6, 11) and o.complete
    assert len(count.read_text().split()) == 11  # only the missing runs executed
    ref = tmp_path / "ref"
    coapcc.sweep(str(tiny_file), ref, workers=1, progress=False)
    assert_same_tables(_tables(out), _tables(ref))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_interrupted_sweep_subprocess_resumes(tiny_file, tmp_path, sig):
    """Ctrl-C (SIGINT) or a crash (SIGKILL) in the middle of a pool sweep loses no finished run;
    the rerun reports what is done and does the rest; totals equal an uninterrupted sweep."""
    out = tmp_path / "res"
    env = subprocess_env(COAPCC_COUNT_FILE=tmp_path / "count.txt", COAPCC_SLEEP="0.15")
    cmd = [
        *COAPCC,
        "sweep",
        str(tiny_file),
        "--out",
        str(out),
        "--workers",
        "2",
        "--runner",
        "fakesim:counting_runner",
        "--no-progress",
    ]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    wait_for_runs(out, 3, proc)
    os.killpg(proc.pid, sig) if sig == signal.SIGKILL else proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    if sig == signal.SIGINT:
        assert proc.returncode == 130, err
        assert "interrupted" in err
    done = len(done_hashes(out))
    assert 3 <= done < 17
    assert not list(out.glob("*/.*.tmp")) or sig == signal.SIGKILL
    r = subprocess.run(cmd[:-3] + ["--no-progress"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"17 runs, {done} done, {17 - done} to run" in r.stderr
    assert not list(out.glob("*/.*.tmp"))
    ref = tmp_path / "ref"
    coapcc.sweep(str(tiny_file), ref, workers=1, progress=False)
    assert_same_tables(_tables(out), _tables(ref))


def test_compact_consolidates_leftover_runs(tiny_file, tmp_path, monkeypatch):
    from coapcc.dataset import DatasetWriter

    out = tmp_path / "res"
    with monkeypatch.context() as m:  # a sweep that dies before writing its part
        m.setattr(DatasetWriter, "flush", lambda self: None)
        coapcc.sweep(str(tiny_file), out, workers=1, progress=False)
    assert not list((out / "runs").glob("*.parquet"))
    assert [p.name[:8] for p in (out / "runs").glob("journal-*")] == ["journal-"]
    assert len(done_hashes(out)) == 17
    before = _tables(out)  # runs still in a journal are read too
    assert compact(out) == 17
    assert [p.name[:5] for p in (out / "runs").iterdir()] == ["part-"]
    assert_same_tables(before, _tables(out))


def test_executors_give_identical_tables(tiny_file, tmp_path):
    serial, pool, dask = tmp_path / "serial", tmp_path / "pool", tmp_path / "dask"
    coapcc.sweep(str(tiny_file), serial, workers=1, progress=False)
    coapcc.sweep(str(tiny_file), pool, workers=2, progress=False)
    o = coapcc.sweep(str(tiny_file), dask, workers=2, dask_local=True, progress=False)
    assert o.complete
    ref = _tables(serial)
    assert_same_tables(ref, _tables(pool))
    assert_same_tables(ref, _tables(dask))
