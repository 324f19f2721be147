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

2. With ``--sweeps``: wall time of the full ``anrw18`` and ``fasor18`` sweeps with
   ``--workers`` (default 2) into a temporary directory (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import statistics
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


def sweeps(names=("anrw18", "fasor18"), workers: int = 2, out: str | None = None) -> list[dict]:
    """Wall time of full sweeps (fresh datasets)."""
    import coapcc

    rows = []
    with tempfile.TemporaryDirectory(prefix="coapcc-bench-") as tmp:
        for name in names:
            dest = f"{out or tmp}/{name}"
            t = time.perf_counter()
            o = coapcc.sweep(name, dest, workers=workers, progress=False)
            wall = time.perf_counter() - t
            t = time.perf_counter()
            res = coapcc.load_results(dest)
            load = time.perf_counter() - t
            rows.append(
                {
                    "experiment": name,
                    "runs": o.total,
                    "ran": o.ran,
                    "failed": len(o.failed),
                    "workers": workers,
                    "wall_s": wall,
                    "simulator_s": float(res.runs["wall_s"].sum()),
                    "load_s": load,
                    "flows": len(res.flows),
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m coapcc.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, default=400)
    p.add_argument("--repeat", type=int, default=40)
    p.add_argument("--sweeps", action="store_true", help="also time the full anrw18 and fasor18 sweeps")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", default=None, help="keep the sweep datasets here")
    a = p.parse_args(argv)

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
    if a.sweeps:
        print(f"\nFull sweeps, {a.workers} workers:")
        for r in sweeps(workers=a.workers, out=a.out):
            print(
                f"{r['experiment']}: {r['runs']} runs ({r['failed']} failed), {r['flows']} flows: "
                f"wall {r['wall_s']:.1f} s (simulator {r['simulator_s']:.1f} s CPU), load {r['load_s']:.1f} s"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
