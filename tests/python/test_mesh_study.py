"""coapcc.mesh_study: planning, running with resume, and the report of a mesh experiment
(`coapcc reproduce ancillotti`)."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time

import pytest
from pandas import read_csv, read_parquet

from coapcc.config import ConfigError, canonical_json
from coapcc.mesh_study import (
    find_mesh_experiment,
    load_mesh_experiment,
    load_tables,
    plan,
    reproduce_mesh,
    run_study,
)

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

#: Many runs of similar length, for the kill-and-resume test.
RESUME = f"""
name = "resumemesh"
kind = "mesh"
seed = 9
replications = 4

[base]
duration_s = 3600

[[block]]
name = "monitoring"
[block.grid]
cc = {CCS}
topology = ["grid:5"]
traffic = ["periodic:1", "periodic:3"]
"""


def _write(tmp_path, text, name):
    p = tmp_path / f"{name}.toml"
    p.write_text(text)
    return p


def test_plan_of_ancillotti_runs_seeds_and_shared_points():
    exp = load_mesh_experiment("ancillotti")
    runs = plan(exp)
    # monitoring 2 x 4 x 6, events-tb 2 x 2 x 5, events-size 2 x 2 x 4 points, 10 replications;
    # events:600,192 is in both event blocks (2 algorithms x 2 grids): run once.
    assert len(runs) == (48 + 20 + 16 - 4) * 10
    assert sum(1 for r in runs if r.blocks == ("events-tb", "events-size")) == 40
    seeds = [r.seed for r in runs]
    assert len(set(seeds)) == len(seeds)
    assert len({r.run_id for r in runs}) == len(runs)
    assert all(r.config["duration_s"] == 10800 and r.config["preset"] == "ancillotti-cooja" for r in runs)
    # Deterministic: planning again gives the same runs and seeds.
    again = plan(load_mesh_experiment("ancillotti"))
    assert [(r.run_id, r.seed) for r in again] == [(r.run_id, r.seed) for r in runs]
    # The documented derivation: sha256 of the base seed, the configuration without its seed
    # and the replication index.
    r = runs[13]
    point = {k: v for k, v in r.config.items() if k != "seed"}
    material = canonical_json({"base_seed": 2017, "point": point, "replication": r.replication})
    assert r.seed == int.from_bytes(hashlib.sha256(material.encode()).digest()[:8], "big") & (2**63 - 1)
    # Replications of one point differ only in the seed.
    reps = [x for x in runs if x.point_hash == r.point_hash]
    assert sorted(x.replication for x in reps) == list(range(10))
    assert len({x.seed for x in reps}) == 10
    quick = plan(exp.quick_variant())
    assert len(quick) == 80 * 2 and all(x.config["duration_s"] == 1800 for x in quick)
    assert {x.run_id for x in quick}.isdisjoint({x.run_id for x in runs})


def test_bad_mesh_experiments_are_refused_with_the_key(tmp_path):
    bad_key = _write(tmp_path, TINY.replace("message_bytes = 96", 'message_bytes = 96\n"mac.nope" = 1'), "a")
    with pytest.raises(ConfigError, match="mac.nope.*block 'monitoring'"):
        plan(load_mesh_experiment(bad_key))
    seeded = _write(tmp_path, TINY.replace("duration_s = 120", "duration_s = 120\nseed = 3"), "b")
    with pytest.raises(ConfigError, match="base.seed"):
        load_mesh_experiment(seeded)
    unreachable = _write(
        tmp_path,
        TINY.replace('"grid:3", "grid:4"', '"grid:3", "chain:3"').replace(
            "duration_s = 120", "duration_s = 120\nspacing_m = 30.0"
        ),
        "c",
    )
    with pytest.raises(ConfigError, match="block 'monitoring'"):
        plan(load_mesh_experiment(unreachable))
    # The simulator-sweep loader routes mesh files to `coapcc reproduce`.
    from coapcc.experiment import load_experiment

    with pytest.raises(ConfigError, match="coapcc reproduce"):
        load_experiment(_write(tmp_path, TINY, "tinymesh"))
    assert find_mesh_experiment("anrw18") is None
    assert find_mesh_experiment(str(tmp_path / "tinymesh.toml")) is not None


def _comparable(df):
    return df.drop(columns=["wall_s", "cpu_s"], errors="ignore").reset_index(drop=True)


def test_resume_after_kill_gives_the_same_tables(tmp_path):
    path = _write(tmp_path, RESUME, "resumemesh")
    exp = load_mesh_experiment(path)
    runs = plan(exp)
    assert len(runs) == 16
    out = tmp_path / "killed"
    code = (
        "import sys; from coapcc.mesh_study import main; "
        f"sys.exit(main([{str(path)!r}, '--out', {str(out)!r}, '--workers', '1', '--no-progress']))"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if len(list((out / "runs").glob("[!.]*.parquet"))) >= 2:
                break
            time.sleep(0.02)
        assert proc.poll() is None, f"the study ended before it could be killed: {proc.stderr.read()!r}"
        os.kill(proc.pid, signal.SIGKILL)  # the parent only: its worker must die with it
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    kept = {p.stem for p in (out / "runs").glob("[!.]*.parquet")}
    assert 2 <= len(kept) < len(runs)
    # No orphan worker keeps writing: the set of finished runs stays put.
    time.sleep(1.0)
    assert {p.stem for p in (out / "runs").glob("[!.]*.parquet")} == kept
    resumed = run_study(exp, out, workers=2, progress=False)
    assert resumed.reused == len(kept) and resumed.ran == len(runs) - len(kept) and not resumed.failed
    fresh = run_study(exp, tmp_path / "fresh", workers=2, progress=False)
    assert fresh.ran == len(runs)
    a_runs, a_clients = load_tables(out, runs)
    b_runs, b_clients = load_tables(tmp_path / "fresh", runs)
    assert len(a_runs) == len(runs) and a_clients["node"].notna().all()
    assert _comparable(a_runs).equals(_comparable(b_runs))
    assert _comparable(a_clients).equals(_comparable(b_clients))
    # A rerun of a complete study runs nothing.
    assert run_study(exp, out, workers=2, progress=False).ran == 0


def test_tiny_reproduction_writes_tables_figures_and_report(tmp_path):
    path = _write(tmp_path, TINY, "tinymesh")
    out = tmp_path / "res"
    report, outcome = reproduce_mesh(str(path), out=out, workers=2, progress=False)
    assert outcome.total == (8 + 4 + 4 - 2) * 2 and outcome.ran == outcome.total and not outcome.failed
    runs_df = read_parquet(out / "runs.parquet")
    assert len(runs_df) == outcome.total
    assert set(runs_df["algorithm"]) == {"CoAP-CC", "CoCoA+"}
    assert (runs_df["clients"] == runs_df["grid_n"] ** 2 - 2).all()
    assert runs_df["plr_mean"].between(0, 1).all()
    cocoa = runs_df[runs_df["algorithm"] == "CoCoA+"]
    assert cocoa["rtt_strong_s_median"].notna().all()
    text = report.read_text()
    for fid in ("plr-load", "plr-grid", "retx", "rto-first", "early", "rtt-estimates", "plr-tb", "plr-size"):
        assert f'id="fig-{fid}"' in text
        assert (out / "figures" / f"{fid}.png").stat().st_size > 1000
    assert text.count("data:image/png;base64,") == 8
    summary = read_csv(out / "summary.csv")
    assert len(summary) == 8 + 4 + 4 and summary["replications"].eq(2).all()
    # Through the command line, the --quick variant (1 replication of 60 s) into its own folder.
    from coapcc.reproduction import main

    qout = tmp_path / "quick"
    assert main([str(path), "--quick", "--out", str(qout), "--workers", "1", "--no-progress"]) == 0
    q = read_parquet(qout / "runs.parquet")
    assert len(q) == 14 and (q["duration_s"] == 60).all()
    assert "rtt-estimates" in (qout / "report.html").read_text()
    # `coapcc sweep` of a mesh experiment: the runs and tables, no report; the finished
    # runs of the --quick reproduction are reused.
    from coapcc.sweeper import main as sweep_main

    assert sweep_main([str(path), "--quick", "--out", str(qout), "--no-progress"]) == 0
    assert read_parquet(qout / "runs.parquet").equals(q)
