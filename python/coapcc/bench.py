"""Speed of the Python layer: ``python -m coapcc.bench [--sweeps]``.

1. Overhead of :func:`coapcc.simulate` against calling the simulator directly
   (``coapcc._native.simulate_json``) for runs of 400 clients. Calls are interleaved and the
   median of many repetitions is reported, for:

   * ``direct``: ``_native.simulate_json(config_json)`` (a JSON string out);
   * ``direct+parse``: the same plus ``json.loads`` (what any Python caller needs to read it);
   * ``simulate``: ``coapcc.simulate(cfg)`` (validation, mapping, run; the report is parsed
     lazily);
   * ``simulate+raw``: plus reading ``.raw`` (the parsed report);
   * ``simulate+tables``: plus building the three DataFrames.

2. With ``--sweeps``: the full ``anrw18`` and ``fasor18`` sweeps (or the catalogue
   experiments named by ``--experiments``, of either kind) with ``--workers``
   (default 2) into a temporary directory (or ``--out``), each in a fresh ``coapcc sweep``
   process: wall time; CPU time of the sweep (its process and its workers) against the CPU
   time spent in the simulator itself (thread CPU time measured around each call of the
   simulator, ``simulate_columns`` or ``simulate_json``, or ``mesh_json`` for a mesh
   experiment such as ``ancillotti``, in the same run), whose difference
   is the overhead of the Python layer (planning, encoding, Arrow, Parquet, process pool);
   the sweep process's peak memory (``VmHWM``); and the time to load the dataset back.
   ``--quick`` sweeps the ``[quick]`` variants instead. ``--baseline DIR`` also runs every
   sweep with the ``coapcc`` package of another checkout (``DIR`` = its ``python`` folder,
   with this build's ``_native`` extension copied in), alternating with this one,
   ``--repeat-sweeps N`` times each, and prints the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def _median_ms(samples: list[float]) -> float:
    return 1000.0 * statistics.median(samples)


def overhead(
    clients: int = 400, repeat: int = 40, algorithms=("default", "cocoa"), buffers=(2500, 28200)
) -> list[dict]:
    """Median times (ms) of the direct call and the API for each (algorithm, buffer)."""
    import coapcc
    from coapcc import _native
    from coapcc.config import ConfigError, SimConfig, to_native

    rows = []
    for alg in algorithms:
        for buf in buffers:
            cfg = SimConfig(algorithm=alg, clients=clients, buffer_bytes=buf, seed=1)
            try:
                cfg.validate()
            except ConfigError as e:
                print(f"bench: skipping {alg}: {e}", file=sys.stderr)
                continue
            cj = json.dumps(to_native(cfg))
            cases = {
                "direct": lambda cj=cj: _native.simulate_json(cj),
                "direct+parse": lambda cj=cj: json.loads(_native.simulate_json(cj)),
                "simulate": lambda cfg=cfg: coapcc.simulate(cfg),
                "simulate+raw": lambda cfg=cfg: coapcc.simulate(cfg).raw,
                "simulate+tables": lambda cfg=cfg: _tables(coapcc.simulate(cfg)),
            }
            for f in cases.values():  # warm up (imports, caches)
                f()
            samples: dict[str, list[float]] = {k: [] for k in cases}
            for _ in range(repeat):
                for k, f in cases.items():
                    t = time.perf_counter()
                    f()
                    samples[k].append(time.perf_counter() - t)
            med = {k: _median_ms(v) for k, v in samples.items()}
            rows.append({"algorithm": alg, "buffer_bytes": buf, "clients": clients, **med})
    return rows


def _tables(r):
    r.flows, r.retransmissions_per_exchange, r.links  # noqa: B018 - build them
    return r


#: The simulator, timed: each call's CPU time (seconds) appended to $COAPCC_BENCH_CPU_FILE.
#: Written as a module of its own next to the sweep, so that the code measured and the
#: baseline (whose ``coapcc.bench`` may differ) call the simulator through the same wrapper:
#: ``json_runner`` as a JSON runner, ``columnar_runner`` as a columnar one (what sweeps use
#: when the code has them).
_RUNNERS_SOURCE = """
import os
import time

_log = None


def _record(dt):
    global _log
    if _log is None:
        _log = open(os.environ["COAPCC_BENCH_CPU_FILE"], "a", buffering=1)
    _log.write(repr(dt) + "\\n")


def json_runner(config_json):
    from coapcc import _native

    t = time.thread_time()
    report = _native.simulate_json(config_json)
    _record(time.thread_time() - t)
    return report


def columnar_runner(config_json, packed=False):
    from coapcc import _native

    t = time.thread_time()
    report = _native.simulate_columns(config_json, packed)
    _record(time.thread_time() - t)
    return report


columnar_runner.columnar = True


def mesh_runner(config_json):
    from coapcc import _native

    t = time.thread_time()
    report = _native.mesh_json(config_json, None)
    _record(time.thread_time() - t)
    return report
"""

#: One sweep in a fresh process; prints its wall time and resource usage as JSON. Inline code
#: (not a function of this module) for the same reason.
_SWEEP_CODE = """
import json, resource, time
import coapcc, coapcc.runner

import coapcc.experiment

columnar = hasattr(coapcc.runner, "run_columns")
exp = coapcc.experiment.find_experiment({name!r})
# The bench's runner of each kind of experiment (the simulator's: columnar when this coapcc has it).
runners = {{"mesh": "mesh_runner"}}
runner = "coapcc_bench_runners:" + runners.get(
    getattr(exp, "kind", "sim"), "columnar_runner" if columnar else "json_runner"
)
t = time.perf_counter()
o = coapcc.sweep({name!r}, {out!r}, workers={workers}, quick={quick}, runner=runner, progress=False)
wall = time.perf_counter() - t
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
peak = me.ru_maxrss / 1024
with open("/proc/self/status") as f:  # VmHWM: unlike ru_maxrss, not the image it was forked from
    for line in f:
        if line.startswith("VmHWM:"):
            peak = int(line.split()[1]) / 1024
print(json.dumps({{
    "runs": o.total, "ran": o.ran, "failed": len(o.failed), "wall_s": wall,
    "parent_cpu_s": me.ru_utime + me.ru_stime, "workers_cpu_s": kids.ru_utime + kids.ru_stime,
    "parent_maxrss_mb": peak,
}}))
"""


#: Loads a dataset and prints the time and its number of flows as JSON (inline code, so that
#: a baseline checkout's coapcc, whose bench module may differ, runs it too).
_LOAD_CODE = (
    "import json, time, coapcc; t = time.perf_counter(); res = coapcc.load_results({out!r}); "
    "print(json.dumps({{'load_s': time.perf_counter() - t, 'flows': len(res.flows)}}))"
)


def _child(code: str, env: dict) -> dict:
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"benchmark child failed: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def sweeps(
    names=("anrw18", "fasor18"),
    workers: int = 2,
    out: str | None = None,
    quick: bool = False,
    baseline: str | None = None,
    repeat: int = 1,
) -> list[dict]:
    """Full sweeps (fresh datasets), each in its own process; see the module docstring.
    ``names``: catalogue names or experiment files, of either kind (simulator or mesh).

    With ``baseline`` (the ``python`` folder of another checkout of coapcc, with the same
    ``_native`` extension in it), every sweep is also run with that code (``PYTHONPATH``), the
    two alternating (baseline first), ``repeat`` times each; one row per sweep and code."""
    codes = [("this", None)] if not baseline else [("baseline", baseline), ("this", None)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="coapcc-bench-") as tmp:
        with open(f"{tmp}/coapcc_bench_runners.py", "w") as f:
            f.write(_RUNNERS_SOURCE)
        for name in names:
            label = os.path.splitext(os.path.basename(name))[0]  # a catalogue name, or a file's
            for rep in range(repeat):
                for code_name, path in codes:
                    dest = f"{out or tmp}/{label}-{code_name}-{rep}"
                    cpu_file = f"{tmp}/{label}-{code_name}-{rep}.cpu"
                    env = {**os.environ, "COAPCC_BENCH_CPU_FILE": cpu_file}
                    env["PYTHONPATH"] = os.pathsep.join(filter(None, [path, tmp, env.get("PYTHONPATH")]))
                    row = _child(_SWEEP_CODE.format(name=name, out=dest, workers=workers, quick=quick), env)
                    with open(cpu_file) as f:
                        row["simulator_cpu_s"] = sum(float(x) for x in f.read().split())
                    row["cpu_s"] = row["parent_cpu_s"] + row["workers_cpu_s"]
                    row["overhead"] = 1.0 - row["simulator_cpu_s"] / row["cpu_s"]
                    row.update(_child(_LOAD_CODE.format(out=dest), env))
                    rows.append(
                        {
                            "experiment": label + ("-quick" if quick else ""),
                            "code": code_name,
                            "rep": rep,
                            "workers": workers,
                            **row,
                        }
                    )
                    if out is None:
                        shutil.rmtree(dest, ignore_errors=True)
    return rows


def _median_rows(rows: list[dict]) -> list[dict]:
    """One row per (experiment, code): the median of every figure over the repetitions."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["experiment"], r["code"]), []).append(r)
    out = []
    for (exp, code), rs in groups.items():
        med = {k: statistics.median(r[k] for r in rs) for k, v in rs[0].items() if isinstance(v, float)}
        out.append({**rs[0], **med, "experiment": exp, "code": code, "n": len(rs)})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m coapcc.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, default=400)
    p.add_argument("--repeat", type=int, default=40)
    p.add_argument("--sweeps", action="store_true", help="also time the full anrw18 and fasor18 sweeps")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", default=None, help="keep the sweep datasets here")
    p.add_argument("--quick", action="store_true", help="with --sweeps: the [quick] variants")
    p.add_argument("--only-sweeps", action="store_true", help="skip the overhead measurement")
    p.add_argument("--experiments", default="anrw18,fasor18", help="with --sweeps: comma-separated names")
    p.add_argument(
        "--baseline",
        default=None,
        metavar="DIR",
        help="with --sweeps: also run each sweep with the coapcc package in DIR (the python/ folder of "
        "another checkout, with this _native extension copied in), alternating with this one",
    )
    p.add_argument("--repeat-sweeps", type=int, default=1, metavar="N", help="with --sweeps: N runs of each")
    a = p.parse_args(argv)
    if a.only_sweeps:
        a.sweeps = True

    if not a.only_sweeps:
        _print_overhead(a)
    if a.sweeps:
        print(f"Sweeps, {a.workers} workers, each in a fresh process; load average {_loadavg()}:")
        rows = sweeps(
            tuple(a.experiments.split(",")),
            workers=a.workers,
            out=a.out,
            quick=a.quick,
            baseline=a.baseline,
            repeat=a.repeat_sweeps,
        )
        for r in rows:
            print("  " + _sweep_line(r), flush=True)
        print(f"Medians (load average now {_loadavg()}):")
        for r in _median_rows(rows):
            print(f"  {_sweep_line(r)} [median of {r['n']}]", flush=True)
    return 0


def _loadavg() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - not on every platform
        return "?"


def _sweep_line(r: dict) -> str:
    return (
        f"{r['experiment']} ({r['code']}): {r['runs']} runs ({r['failed']} failed), {r['flows']} flows: "
        f"wall {r['wall_s']:.1f} s; CPU {r['cpu_s']:.1f} s (sweep process {r['parent_cpu_s']:.1f} s, "
        f"workers {r['workers_cpu_s']:.1f} s), of which simulator {r['simulator_cpu_s']:.1f} s: "
        f"overhead {100 * r['overhead']:.1f} % of the CPU; sweep process peak "
        f"{r['parent_maxrss_mb']:.0f} MB; load {r['load_s']:.1f} s"
    )


def _print_overhead(a) -> None:
    print(f"Python-layer overhead, {a.clients} clients (median of {a.repeat}, ms):")
    hdr = (
        f"{'algorithm':<10} {'buffer':>8} {'direct':>8} {'+parse':>8} {'simulate':>9} {'+raw':>8} {'+tables':>8}"
        f"  {'overhead':>9} {'+raw vs +parse':>15}"
    )
    print(hdr)
    for r in overhead(a.clients, a.repeat):
        ov = 100.0 * (r["simulate"] - r["direct"]) / r["direct"]
        ov_raw = 100.0 * (r["simulate+raw"] - r["direct+parse"]) / r["direct+parse"]
        print(
            f"{r['algorithm']:<10} {r['buffer_bytes']:>8} {r['direct']:>8.2f} {r['direct+parse']:>8.2f} "
            f"{r['simulate']:>9.2f} {r['simulate+raw']:>8.2f} {r['simulate+tables']:>8.2f}  {ov:>8.1f}% "
            f"{ov_raw:>14.1f}%"
        )


if __name__ == "__main__":
    sys.exit(main())
