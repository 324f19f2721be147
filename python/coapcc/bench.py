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

2. With ``--sweeps``: the full ``anrw18`` and ``fasor18`` sweeps with ``--workers``
   (default 2) into a temporary directory (or ``--out``), each in a fresh ``coapcc sweep``
   process: wall time; CPU time of the sweep (its process and its workers) against the CPU
   time spent in the simulator itself (measured around each ``simulate_json`` call in the
   same run), whose difference is the overhead of the Python layer (planning, encoding,
   Arrow, Parquet, process pool); the sweep process's peak memory (max RSS); and the time to
   load the dataset back. ``--quick`` sweeps the ``[quick]`` variants instead.
"""

from __future__ import annotations

import argparse
import json
import os
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


def cpu_timed_runner(config_json: str) -> str:
    """The simulator, appending the CPU time of each call (seconds) to $COAPCC_BENCH_CPU_FILE."""
    from coapcc.runner import native_runner

    t = time.thread_time()
    report = native_runner(config_json)
    dt = time.thread_time() - t
    with open(os.environ["COAPCC_BENCH_CPU_FILE"], "a") as f:
        f.write(f"{dt!r}\n")
    return report


def _peak_rss_mb(fallback: float) -> float:
    """This process's peak resident memory (MB) since it started: ``VmHWM`` (Linux), which,
    unlike ``ru_maxrss``, does not include the image of the parent it was forked from."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return fallback


def _sweep_child(name: str, out: str, workers: int, quick: bool) -> None:
    """In a fresh process: one sweep; prints its wall time and resource usage as JSON."""
    import resource

    import coapcc

    t = time.perf_counter()
    o = coapcc.sweep(
        name, out, workers=workers, quick=quick, runner=f"{__name__}:cpu_timed_runner", progress=False
    )
    wall = time.perf_counter() - t
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        json.dumps(
            {
                "runs": o.total,
                "ran": o.ran,
                "failed": len(o.failed),
                "wall_s": wall,
                "parent_cpu_s": me.ru_utime + me.ru_stime,
                "workers_cpu_s": kids.ru_utime + kids.ru_stime,
                "parent_maxrss_mb": _peak_rss_mb(me.ru_maxrss / 1024),
            }
        )
    )


def sweeps(
    names=("anrw18", "fasor18"), workers: int = 2, out: str | None = None, quick: bool = False
) -> list[dict]:
    """Full sweeps (fresh datasets), each in its own process; see the module docstring."""
    import coapcc

    rows = []
    with tempfile.TemporaryDirectory(prefix="coapcc-bench-") as tmp:
        for name in names:
            dest = f"{out or tmp}/{name}"
            cpu_file = f"{tmp}/{name}.cpu"
            env = {**os.environ, "COAPCC_BENCH_CPU_FILE": cpu_file}
            code = (
                "import sys; from coapcc.bench import _sweep_child; "
                f"_sweep_child({name!r}, {dest!r}, {workers}, {quick})"
            )
            r = subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
            )
            if r.returncode != 0:
                raise RuntimeError(f"sweep {name} failed: {r.stderr[-2000:]}")
            row = json.loads(r.stdout.strip().splitlines()[-1])
            with open(cpu_file) as f:
                row["simulator_cpu_s"] = sum(float(x) for x in f.read().split())
            row["cpu_s"] = row["parent_cpu_s"] + row["workers_cpu_s"]
            row["overhead"] = 1.0 - row["simulator_cpu_s"] / row["cpu_s"]
            t = time.perf_counter()
            res = coapcc.load_results(dest)
            row["load_s"] = time.perf_counter() - t
            row["flows"] = len(res.flows)
            rows.append({"experiment": name + ("-quick" if quick else ""), "workers": workers, **row})
    return rows


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
    a = p.parse_args(argv)
    if a.only_sweeps:
        a.sweeps = True

    if not a.only_sweeps:
        _print_overhead(a)
    if a.sweeps:
        print(f"Sweeps, {a.workers} workers, each in a fresh process:")
        for r in sweeps(tuple(a.experiments.split(",")), workers=a.workers, out=a.out, quick=a.quick):
            print(
                f"{r['experiment']}: {r['runs']} runs ({r['failed']} failed), {r['flows']} flows: "
                f"wall {r['wall_s']:.1f} s; CPU {r['cpu_s']:.1f} s (sweep process {r['parent_cpu_s']:.1f} s, "
                f"workers {r['workers_cpu_s']:.1f} s), of which simulator {r['simulator_cpu_s']:.1f} s: "
                f"overhead {100 * r['overhead']:.1f} % of the CPU; sweep process peak "
                f"{r['parent_maxrss_mb']:.0f} MB; load {r['load_s']:.1f} s",
                flush=True,
            )
    return 0


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
