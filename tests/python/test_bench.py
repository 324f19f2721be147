"""`python -m coapcc.bench --sweeps` times sweeps of both kinds: each run goes through the
timed wrapper of the right simulator entry point, and the dataset it writes is complete."""

import coapcc
from coapcc import bench
from coapcc.experiment import load_experiment, quick_variant
from coapcc.sweeper import plan
from conftest import TINY as SIM_TINY
from test_mesh_study import SMALL as MESH_SMALL


def _write(tmp_path, text, name):
    p = tmp_path / f"{name}.toml"
    p.write_text(text)
    return p


def test_sweep_timing_covers_simulator_and_mesh_experiments(tmp_path):
    files = [_write(tmp_path, SIM_TINY, "tiny"), _write(tmp_path, MESH_SMALL, "smallmesh")]
    out = tmp_path / "out"
    rows = bench.sweeps(names=tuple(str(f) for f in files), workers=1, quick=True, out=str(out))
    assert [r["experiment"] for r in rows] == ["tiny-quick", "smallmesh-quick"]
    for f, r in zip(files, rows):
        planned = plan(quick_variant(load_experiment(f)))
        assert r["runs"] == r["ran"] == len(planned) and r["failed"] == 0
        # Every run went through the timed wrapper: the simulator's own CPU time is part of
        # the sweep's, and the dataset holds every run's rows.
        assert 0 < r["simulator_cpu_s"] <= r["cpu_s"]
        res = coapcc.load_results(out / f"{r['experiment'][: -len('-quick')]}-this-0")
        assert r["flows"] == len(res.flows) > 0
        assert len(res.runs) == len(planned)
