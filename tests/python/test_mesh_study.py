"""Mesh studies (`kind = "mesh"`, `coapcc reproduce ancillotti`) are sweeps: one experiment
loader, the sweep's plan and executors, the journaled dataset with resume, and the mesh report."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import time

import pandas as pd
import pytest

import coapcc
from coapcc.config import ConfigError, canonical_json
from coapcc.dataset import DatasetFormatError, done_hashes, load_results
from coapcc.experiment import find_experiment, load_experiment
from coapcc.sweeper import plan
from conftest import COAPCC, assert_same_tables, subprocess_env, wait_for_runs
from conftest import TINY as SIM_TINY

CCS = '["default:preset=ancillotti-cooja", "cocoa-plus:preset=ancillotti-cooja"]'

#: A scaled-down ancillotti: the same blocks on 3x3 / 4x4 grids, 2 minutes, 2 replications.
TINY = f"""
name = "tinymesh"
kind = "mesh"
title = "A tiny mesh study"
seed = 5
replications = 2

[base]
preset = "ancillotti-cooja"
duration_s = 120
message_bytes = 96

[[block]]
name = "monitoring"
[block.grid]
cc = {CCS}
topology = ["grid:3", "grid:4"]
traffic = ["periodic:2", "periodic:3"]

[[block]]
name = "events-tb"
[block.grid]
cc = {CCS}
topology = ["grid:3"]
traffic = ["events:30,96", "events:60,96"]

[[block]]
name = "events-size"
[block.grid]
cc = {CCS}
topology = ["grid:3"]
traffic = ["events:60,96", "events:60,192"]

[quick]
replications = 1
base = {{ duration_s = 60 }}
"""

#: 12 short runs, for the interruption tests.
SMALL = f"""
name = "smallmesh"
kind = "mesh"
seed = 9
replications = 3

[base]
duration_s = 60
"mac.queue_packets" = 6

[[block]]
name = "monitoring"
[block.grid]
cc = {CCS}
topology = ["grid:3"]
traffic = ["periodic:1", "periodic:3"]
"""


def _write(tmp_path, text, name):
    p = tmp_path / f"{name}.toml"
    p.write_text(text)
    return p


# -- one experiment loader ------------------------------------------------------------------


def test_plan_of_ancillotti_runs_seeds_and_shared_points():
    exp = find_experiment("ancillotti")  # the catalogue, as for anrw18
    assert exp.kind == "mesh"
    tasks = plan(exp)
    # monitoring 2 x 4 x 6, events-tb 2 x 2 x 5, events-size 2 x 2 x 4 points, 10 replications;
    # events:600,192 is in both event blocks (2 algorithms x 2 grids): run once, in both blocks.
    # The sensitivity blocks: 18 values x 12 points, 5 replications; the preset's value of
    # sens-radio, sens-linkack, sens-cpu, sens-rpl, sens-clients (12 points each) and
    # sens-dither (6) are monitoring's runs (their first 5 replications), one task listing
    # every block that has it.
    assert len(tasks) == (48 + 20 + 16 - 4) * 10 + 18 * 12 * 5 - (12 * 5 + 6) * 5
    shared = [t for t in tasks if len(t.blocks) > 1]
    events = [t for t in shared if t.blocks == ("events-tb", "events-size")]
    assert len(events) == 40 and {t.planned.config.to_dict()["traffic"] for t in events} == {"events:600,192"}
    assert {t.blocks for t in shared if t not in events} == {
        ("monitoring", "sens-radio", "sens-linkack", "sens-cpu", "sens-rpl", "sens-clients"),
        ("monitoring", "sens-radio", "sens-linkack", "sens-cpu", "sens-rpl", "sens-clients", "sens-dither"),
    }
    assert len(shared) == 40 + 12 * 5
    assert "events-size: cc[2] x topology[2] x traffic[4] x 10 replications = 160 runs (40 already" in (
        exp.summary([t.planned for t in tasks])
    )
    seeds = [t.planned.config.seed for t in tasks]
    assert len(set(seeds)) == len(seeds)
    assert len({t.config_hash for t in tasks}) == len(tasks)
    cfgs = [t.planned.config.to_dict() for t in tasks]
    assert all(c["duration_s"] == 10800 and c["preset"] == "ancillotti-cooja" for c in cfgs)
    # Deterministic: planning again gives the same runs and seeds.
    again = plan(find_experiment("ancillotti"))
    assert [(t.config_hash, t.planned.config.seed) for t in again] == [
        (t.config_hash, t.planned.config.seed) for t in tasks
    ]
    # The documented derivations: the seed is sha256 of the base seed, the configuration
    # without its seed and the replication index; the run's hash is sha256 of its
    # configuration, seed included, with its algorithm spec fully resolved.
    t = tasks[13]
    cfg = t.planned.config.to_dict()
    point = {k: v for k, v in cfg.items() if k != "seed"}
    material = canonical_json({"base_seed": 2017, "point": point, "replication": t.planned.replication})
    assert cfg["seed"] == int.from_bytes(hashlib.sha256(material.encode()).digest()[:8], "big") & (2**63 - 1)
    assert cfg["seed"] == coapcc.derive_seed(2017, t.planned.config, t.planned.replication)
    resolved = json.dumps(coapcc.resolve_algorithm(cfg["cc"]))
    material = f'{{"mesh":{canonical_json(cfg)},"resolved":{resolved},"v":1}}'
    assert t.config_hash == hashlib.sha256(material.encode()).hexdigest()[:16]
    # Replications of one point differ only in the seed.
    reps = [x for x in tasks if x.planned.point_hash == t.planned.point_hash]
    assert sorted(x.planned.replication for x in reps) == list(range(10))
    assert len({x.planned.config.seed for x in reps}) == 10
    quick = plan(exp.quick_variant())
    assert len(quick) == (80 + 18 * 12 - 66) * 2 and all(
        x.planned.config.to_dict()["duration_s"] == 1800 for x in quick
    )
    assert {x.config_hash for x in quick}.isdisjoint({x.config_hash for x in tasks})


def test_the_runs_table_keeps_each_replications_blocks():
    """Replications of one point can belong to different blocks (a 5-replication sensitivity
    block shares monitoring's first 5): the runs table keeps each run's own ``blocks``, though
    the configuration columns of a point are stored once."""
    from coapcc.tables import _common_table

    tasks = [t for t in plan(find_experiment("ancillotti")) if "sens-cpu" in t.blocks]
    point = tasks[0].planned.point_hash
    reps = sorted(
        (t for t in plan(find_experiment("ancillotti")) if t.planned.point_hash == point),
        key=lambda t: -t.planned.replication,  # replications 9..0: the first ones not in sens-cpu
    )
    commons = [t.common() for t in reps]
    assert len({c["blocks"] for c in commons}) == 2
    table = _common_table(commons)
    assert table.column("blocks").to_pylist() == [c["blocks"] for c in commons]
    assert table.column("replication").to_pylist() == list(range(9, -1, -1))


#: Mistakes made the same way in a simulator experiment file and a mesh one: (name, edit of
#: the text, the key the error names, what its message says).
MISTAKES = [
    ("unknown top-level key", ("\nseed = ", '\ncolour = "red"\nseed = '), "colour", "unknown experiment key"),
    ("seed in a base", ("[base]\n", "[base]\nseed = 3\n"), "base.seed", "run seeds are derived"),
    ("empty grid", ("[block.grid]\n", "[block.grid]\nextra = []\n"), "block[0].grid.extra", "non-empty list"),
    (
        "value twice",
        ("[block.grid]\n", "[block.grid]\nextra = [1, 1]\n"),
        "block[0].grid.extra",
        "listed twice",
    ),
    (
        "replications",
        ("\nreplications = 2\n", "\nreplications = 0\n"),
        "replications",
        "must be an integer >= 1",
    ),
    ("bad name", ("\nseed = ", '\nname = "../x"\nseed = '), "name", "cannot name a results folder"),
    ("unknown kind", ("\nseed = ", '\nkind = "nope"\nseed = '), "kind", "not a kind of study"),
]


@pytest.mark.parametrize("mistake", MISTAKES, ids=[m[0] for m in MISTAKES])
@pytest.mark.parametrize("kind", ["sim", "mesh"])
def test_a_malformed_file_gets_the_same_error_whatever_its_kind(tmp_path, kind, mistake):
    _, (old, new), key, needle = mistake
    text = SIM_TINY if kind == "sim" else TINY
    if "name = " in new:
        text = re.sub(r'\nname = "[^"]*"', "", text, count=1)
    if "kind = " in new:
        text = text.replace('kind = "mesh"\n', "")
    assert old in text
    path = _write(tmp_path, text.replace(old, new, 1), "bad")
    with pytest.raises(ConfigError) as e:
        load_experiment(path)
    assert e.value.key == key and needle in str(e.value), str(e.value)


@pytest.mark.parametrize("kind", ["sim", "mesh"])
def test_a_bad_point_names_the_key_block_and_point(tmp_path, kind):
    """Both kinds check every point when loading, and say where: `KEY: message [in block
    'NAME' point {...}]`, from the library and from `coapcc sweep` (exit status 2)."""
    text = (SIM_TINY if kind == "sim" else TINY).replace("[base]\n", "[base]\nbogus = 1\n")
    path = _write(tmp_path, text, "bad")
    with pytest.raises(ConfigError) as e:
        load_experiment(path)
    assert e.value.key == "bogus"
    assert re.fullmatch(r"bogus: unknown .+ \[in block '(single|monitoring)' point \{.+\}\]", str(e.value))
    r = subprocess.run(
        [*COAPCC, "sweep", str(path), "--out", str(tmp_path / "o")], capture_output=True, text=True
    )
    assert r.returncode == 2 and r.stderr.startswith("coapcc sweep: error: bogus: unknown"), r.stderr
    assert not (tmp_path / "o").exists()
    broken = _write(tmp_path, text.replace("[base]\n", "[base\n"), "broken")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_experiment(broken)


def test_mesh_points_are_checked_by_the_simulator(tmp_path):
    unreachable = TINY.replace('"grid:3", "grid:4"', '"grid:3", "chain:3"').replace(
        "duration_s = 120", "duration_s = 120\nspacing_m = 30.0"
    )
    with pytest.raises(ConfigError, match=r"cannot reach the DODAG root .*\[in block 'monitoring' point"):
        load_experiment(_write(tmp_path, unreachable, "a"))
    bad_cc = TINY.replace('"cocoa-plus:preset=ancillotti-cooja"]', '"reno"]', 1)
    with pytest.raises(ConfigError) as e:
        load_experiment(_write(tmp_path, bad_cc, "b"))
    assert e.value.key == "cc" and "unknown algorithm 'reno'" in str(e.value)
    with pytest.raises(ConfigError) as e:
        load_experiment(_write(tmp_path, TINY.replace('"ancillotti-cooja"\n', '"nope"\n', 1), "c"))
    assert e.value.key == "preset" and "unknown mesh preset" in str(e.value)


# -- the dataset ----------------------------------------------------------------------------


def _tables(path):
    res = load_results(path)
    return (
        res.runs.drop(columns=["wall_s", "cpu_s"]).reset_index(drop=True),
        res.clients.reset_index(drop=True),
    )


def test_a_mesh_sweep_writes_a_tidy_dataset(tmp_path, capsys):
    path = _write(tmp_path, TINY, "tinymesh")
    out = tmp_path / "res"
    o = coapcc.sweep(str(path), out, workers=1, progress=True)
    assert (o.total, o.done_before, o.ran, o.failed, o.complete) == (28, 0, 28, [], True)
    err = capsys.readouterr().err
    assert "28 runs, 0 done, 28 to run (serial)" in err
    assert re.search(r"tinymesh: 100%\|.*\| 28/28 runs", err)  # the sweep's progress bar
    meta = json.loads((out / "experiment.json").read_text())
    assert meta["kind"] == "mesh" and meta["dataset_format"] == coapcc.dataset.DATASET_FORMAT
    assert all(p.name.startswith("part-") for p in (out / "runs").iterdir())
    res = load_results(out)
    runs, clients = res.runs, res.clients
    assert res.kind == "mesh" and clients is res.flows
    assert len(runs) == 28 and runs["config_hash"].is_unique
    ident = [
        "experiment",
        "block",
        "block_index",
        "point",
        "replication",
        "config_hash",
        "point_hash",
        "blocks",
    ]
    config = ["preset", "topology", "grid_n", "cc", "algorithm", "traffic", "pattern", "load_kbps", "tb_s"]
    config += ["event_bytes", "message_bytes", "duration_s", "seed", "mac_queue_packets", "radio_capture_db"]
    metrics = ["clients", "plr_mean", "plr_max", "plr_event_mean", "retransmissions_per_message_mean"]
    metrics += ["loss_no_caching", "loss_mac_no_ack", "rto_first_s_median", "rtt_strong_s_p90", "events"]
    for col in [*ident, *config, *metrics, "config_json", "cpu_s", "coapcc_version"]:
        assert col in runs.columns, col
    assert list(runs.columns[: len(ident)]) == ident
    for col in [*ident, *config, "node", "hops", "messages", "lost", "plr", "retransmissions_per_frame"]:
        assert col in clients.columns, col
    assert runs[[*ident, "topology", "cc", "seed", "clients", "plr_mean"]].notna().all().all()
    # Sorted by block, point, replication; clients by node within a run.
    assert list(runs["block_index"]) == sorted(runs["block_index"])
    assert (clients.groupby("config_hash")["node"].apply(lambda s: s.is_monotonic_increasing)).all()
    # One client row per client of each run, carrying its run's configuration.
    assert (runs["clients"] == runs["grid_n"] ** 2 - 2).all()
    assert clients.groupby("config_hash").size().sort_index().tolist() == (
        runs.set_index("config_hash")["clients"].sort_index().tolist()
    )
    merged = clients.merge(runs[["config_hash", "topology", "seed"]], on="config_hash", suffixes=("", "_run"))
    assert (merged["topology"] == merged["topology_run"]).all() and (
        merged["seed"] == merged["seed_run"]
    ).all()
    # The run shared by both event blocks is stored once and lists both.
    shared = runs[runs["traffic"] == "events:60,96"]
    assert len(shared) == 2 * 2 and set(shared["blocks"]) == {"events-tb|events-size"}
    assert set(runs["algorithm"]) == {"CoAP-CC", "CoCoA+"}
    assert runs["plr_mean"].between(0, 1).all()
    assert runs.loc[runs["algorithm"] == "CoCoA+", "rtt_strong_s_median"].notna().all()
    # A row is the run that ran: its configuration, run again directly, gives its numbers.
    row = runs.iloc[5]
    cfg = json.loads(row["config_json"])
    assert cfg["seed"] == row["seed"]
    planned = {t.config_hash: t.planned.config.to_dict() for t in plan(load_experiment(path))}
    assert cfg == planned[row["config_hash"]]  # as resolved by the simulator (120 s reads as 120.0)
    assert row["cc_resolved"] == coapcc.resolve_algorithm(cfg["cc"])
    direct = coapcc.mesh(cfg.pop("topology"), cfg.pop("cc"), cfg.pop("traffic"), **cfg)
    assert direct.plr_mean == row["plr_mean"] and direct.report["events"] == row["events"]
    same = [c for c in direct.summary.columns if c in runs.columns and c != "wall_s"]
    assert len(same) > 50  # one function makes both rows (coapcc.meshsim.report_metrics)
    pd.testing.assert_series_equal(
        direct.summary.loc[0, same], row[same], check_names=False, check_dtype=False, check_exact=True
    )
    mine = clients[clients["config_hash"] == row["config_hash"]].reset_index(drop=True)
    assert mine["plr"].tolist() == direct.clients["plr"].tolist()
    assert mine["retransmissions"].tolist() == direct.clients["retransmissions"].tolist()
    # Rerun: nothing to do.
    o2 = coapcc.sweep(str(path), out, workers=1, progress=False)
    assert (o2.done_before, o2.ran) == (28, 0)
    # Serially, on the process pool and on Dask: the same tables.
    pool, dask = tmp_path / "pool", tmp_path / "dask"
    coapcc.sweep(str(path), pool, workers=2, progress=False)
    assert coapcc.sweep(str(path), dask, workers=2, dask_local=True, progress=False).complete
    assert_same_tables(_tables(out), _tables(pool))
    assert_same_tables(_tables(out), _tables(dask))


def test_an_interrupted_mesh_sweep_resumes_keeping_finished_runs(tmp_path, monkeypatch):
    """A sweep whose runs fail after k of them keeps those k; the rerun runs only the others
    (counted) and the tables equal an uninterrupted sweep's."""
    import fakesim

    path = _write(tmp_path, SMALL, "smallmesh")
    count = tmp_path / "count.txt"
    monkeypatch.setenv("COAPCC_COUNT_FILE", str(count))
    monkeypatch.setenv("COAPCC_FAIL_AFTER", "5")
    out = tmp_path / "res"
    o = coapcc.sweep(str(path), out, workers=1, runner=fakesim.mesh_counting_runner, progress=False)
    assert o.ran == 5 and len(o.failed) == 7 and not o.complete
    kept = done_hashes(out)
    assert len(kept) == 5
    monkeypatch.setenv("COAPCC_FAIL_AFTER", "-1")
    count.write_text("")
    o = coapcc.sweep(str(path), out, workers=1, runner=fakesim.mesh_counting_runner, progress=False)
    assert (o.done_before, o.ran) == (5, 7) and o.complete
    assert len(count.read_text().split()) == 7  # only the missing runs executed
    assert kept <= done_hashes(out)
    ref = tmp_path / "ref"
    coapcc.sweep(str(path), ref, workers=1, progress=False)
    assert_same_tables(_tables(out), _tables(ref))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_a_killed_mesh_sweep_subprocess_resumes(tmp_path, sig):
    """Ctrl-C (SIGINT) or a crash (SIGKILL, the whole process group) in the middle of a pool
    sweep loses no finished run; the rerun says what is done and does the rest; the tables
    equal an uninterrupted sweep's."""
    path = _write(tmp_path, SMALL, "smallmesh")
    out = tmp_path / "res"
    env = subprocess_env(COAPCC_COUNT_FILE=tmp_path / "count.txt", COAPCC_SLEEP="0.2")
    cmd = [*COAPCC, "sweep", str(path), "--out", str(out), "--workers", "2"]
    cmd += ["--runner", "fakesim:mesh_counting_runner", "--no-progress"]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        wait_for_runs(out, 3, proc)
        os.killpg(proc.pid, sig) if sig == signal.SIGKILL else proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if sig == signal.SIGINT:
        assert proc.returncode == 130, err
        assert "interrupted" in err
    done = done_hashes(out)
    assert 3 <= len(done) < 12
    time.sleep(0.5)  # no worker outlives the sweep and keeps writing
    assert done_hashes(out) == done
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"12 runs, {len(done)} done, {12 - len(done)} to run" in r.stderr
    assert not list(out.glob("*/.*.tmp"))
    ref = tmp_path / "ref"
    coapcc.sweep(str(path), ref, workers=1, progress=False)
    assert_same_tables(_tables(out), _tables(ref))


def test_the_per_run_layout_of_earlier_versions_is_refused_untouched(tmp_path):
    """A results folder of the earlier mesh study (runs/RUN_ID.parquet, clients/RUN_ID.parquet,
    no experiment.json) is neither read nor rewritten: a clear error says what to do."""
    path = _write(tmp_path, SMALL, "smallmesh")
    old = tmp_path / "old"
    for sub in ("runs", "clients"):
        (old / sub).mkdir(parents=True)
        pd.DataFrame({"run_id": ["0123456789abcdef"], "plr_mean": [0.5]}).to_parquet(
            old / sub / "0123456789abcdef.parquet"
        )
    (old / "experiment.toml").write_text(SMALL)
    before = sorted(str(p.relative_to(old)) for p in old.rglob("*"))
    with pytest.raises(DatasetFormatError, match="layout of earlier coapcc versions.*Move the folder"):
        coapcc.sweep(str(path), old, workers=1, progress=False)
    with pytest.raises(DatasetFormatError, match="layout of earlier coapcc versions"):
        load_results(old)
    r = subprocess.run([*COAPCC, "sweep", str(path), "--out", str(old)], capture_output=True, text=True)
    assert r.returncode == 2 and "layout of earlier coapcc versions" in r.stderr
    after = sorted(str(p.relative_to(old)) for p in old.rglob("*") if p.name != ".lock")
    assert after == before


# -- the report -----------------------------------------------------------------------------


def test_tiny_reproduction_writes_figures_summary_and_report(tmp_path, capsys):
    path = _write(tmp_path, TINY, "tinymesh")
    out = tmp_path / "res"
    report = coapcc.reproduce(str(path), out=out, workers=2, progress=False)
    assert report == out / "report.html"
    runs, _ = _tables(out)
    assert len(runs) == 28
    text = report.read_text()
    for fid in ("plr-load", "plr-grid", "retx", "rto-first", "early", "rtt-estimates", "plr-tb", "plr-size"):
        assert f'id="fig-{fid}"' in text
        assert (out / "figures" / f"{fid}.png").stat().st_size > 1000
    assert text.count("data:image/png;base64,") == 8
    assert "28 of 28" in text
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) == 8 + 4 + 4 and summary["replications"].eq(2).all()
    # The summary is the mean of the runs of each point.
    mon = runs[
        (runs["topology"] == "grid:4") & (runs["traffic"] == "periodic:3") & (runs["algorithm"] == "CoCoA+")
    ]
    row = summary[(summary["block"] == "monitoring") & (summary["topology"] == "grid:4")]
    row = row[(row["traffic"] == "periodic:3") & (row["algorithm"] == "CoCoA+")]
    assert row["plr_mean"].item() == pytest.approx(mon["plr_mean"].mean())
    # `coapcc report DIR` writes the same report again from the dataset alone.
    first = (out / "figures" / "plr-load.png").read_bytes()
    (out / "report.html").unlink()
    from coapcc.reporting import main as report_main

    assert report_main([str(out), "-q"]) == 0
    assert (out / "report.html").read_text().count("data:image/png;base64,") == 8
    assert (out / "figures" / "plr-load.png").read_bytes() == first
    # The command line: --list, then the --quick variant (1 replication of 60 s) into its own
    # folder; `coapcc sweep` of the same variant then has nothing left to do.
    from coapcc.reproduction import main

    capsys.readouterr()
    assert main([str(path), "--quick", "--list"]) == 0
    assert capsys.readouterr().out.startswith("tinymesh-quick: 14 runs\n")
    qout = tmp_path / "quick"
    assert main([str(path), "--quick", "--out", str(qout), "--workers", "1", "--no-progress"]) == 0
    q = load_results(qout).runs
    assert len(q) == 14 and (q["duration_s"] == 60).all() and (q["replication"] == 0).all()
    assert "rtt-estimates" in (qout / "report.html").read_text()
    from coapcc.sweeper import main as sweep_main

    capsys.readouterr()
    assert sweep_main([str(path), "--quick", "--out", str(qout), "--no-progress"]) == 0
    assert "14 runs, 14 done, 0 to run" in capsys.readouterr().err
