"""``coapcc sweep``: run every point of an experiment, locally or on a Dask cluster.

Executors (all give identical tables; the simulator is deterministic given the seed):

* ``serial`` (``--workers 1``): in this process.
* ``pool`` (default, ``--workers N``, default = CPU cores): a local process pool (spawn).
* ``dask`` (``--scheduler ADDRESS``, or ``--dask local`` for a LocalCluster of ``--workers``
  single-threaded worker processes): dask.distributed; lost workers' runs are rescheduled.

Whatever the executor, the simulator runs on the workers and this process writes each
finished run into the dataset at once (see :mod:`coapcc.dataset`), so workers need no shared
filesystem, and an interrupted sweep (Ctrl-C, crash, lost worker) loses no finished run: a
rerun only does what is missing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .config import ConfigError, config_hash, to_native
from .experiment import Experiment, PlannedRun, find_experiment
from .runner import RunnerLike, run_one, worker_init

__all__ = ["sweep", "plan", "Task", "SweepOutcome", "main"]


@dataclass(frozen=True)
class Task:
    """One run to do: what it is (``planned``), its hash and the simulator's input."""

    planned: PlannedRun
    config_hash: str
    config_json: str
    block_index: int

    @property
    def cost(self) -> float:
        """Rough relative cost (for ordering and the progress bar): flows x exchanges."""
        c = self.planned.config
        return float(c.clients * c.exchanges)

    def ident(self) -> dict:
        p = self.planned
        return {
            "experiment": p.experiment,
            "block": p.block,
            "block_index": self.block_index,
            "point": p.point,
            "replication": p.replication,
            "config_hash": self.config_hash,
            "point_hash": p.point_hash,
        }


@dataclass
class SweepOutcome:
    """What a sweep did."""

    experiment: str
    out: Path
    total: int  #: distinct runs in the experiment
    done_before: int  #: already in the dataset when the sweep started
    ran: int = 0  #: finished and written by this sweep
    failed: list = field(default_factory=list)  #: (config_hash, error message)
    interrupted: bool = False
    wall_s: float = 0.0

    @property
    def complete(self) -> bool:
        return not self.failed and not self.interrupted and self.done_before + self.ran == self.total


def plan(experiment: Experiment) -> list[Task]:
    """Every distinct run of ``experiment`` as a :class:`Task`, validated (algorithm specs are
    resolved against the Rust registry, so a bad spec fails here, naming the key)."""
    resolved: dict[str, str] = {}
    block_index = {b.name: i for i, b in enumerate(experiment.blocks)}
    tasks, seen = [], set()
    for run in experiment.runs():
        cfg = run.config
        specs = []
        for i, (spec, _) in enumerate(cfg.algorithm_specs()):
            if spec not in resolved:
                try:
                    resolved[spec] = cfg.resolved_specs()[i]
                except ConfigError as e:
                    raise ConfigError(
                        e.key,
                        f"{str(e).split(': ', 1)[1]} [in block '{run.block}' point {dict(run.assignment)}]",
                    ) from None
            specs.append(resolved[spec])
        h = config_hash(cfg, specs)
        if h in seen:
            continue
        seen.add(h)
        tasks.append(Task(run, h, json.dumps(to_native(cfg)), block_index[run.block]))
    return tasks


# -- executors ------------------------------------------------------------------------------


def execute(runner: RunnerLike, config_json: str, ident: dict, cfg):
    """Worker entry point: run one configuration and encode its tables (picklable)."""
    from .dataset import encode_run

    return encode_run(ident, cfg, json.loads(run_one(runner, config_json)))


def _args(t: Task) -> tuple:
    return (t.config_json, t.ident(), t.planned.config)


def _serial(tasks, runner) -> Iterator[tuple[Task, object, BaseException | None]]:
    for t in tasks:
        try:
            yield t, execute(runner, *_args(t)), None
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as e:  # noqa: BLE001 - reported per run
            yield t, None, e


def _pool(tasks, runner, workers: int):
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    ex = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"), initializer=worker_init)
    try:
        futures = {ex.submit(execute, runner, *_args(t)): t for t in tasks}
        for f in as_completed(futures):
            e = f.exception()
            yield futures[f], (None if e else f.result()), e
    finally:
        # On Ctrl-C (or any early exit) do not wait for running simulations: stop our workers.
        procs = list(getattr(ex, "_processes", {}).values())
        ex.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(timeout=5)


def _dask(tasks, runner, workers: int, scheduler: str | None):
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:  # pragma: no cover
        raise RuntimeError(
            "the dask executor needs dask.distributed: pip install 'dask[distributed]'"
        ) from None
    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        client = Client(cluster)
    try:
        futures = {}
        for t in tasks:
            f = client.submit(
                execute, runner, *_args(t), key=f"coapcc-run-{t.config_hash}", pure=False, retries=2
            )
            futures[f] = t
        for f in as_completed(list(futures)):
            t = futures[f]
            if f.status == "error":
                yield t, None, f.exception()
            else:
                yield t, f.result(), None
    finally:
        if "futures" in locals():
            with contextlib.suppress(Exception):
                client.cancel(list(futures))
        client.close()
        if cluster is not None:
            cluster.close()


# -- the sweep --------------------------------------------------------------------------------


def default_out(experiment: Experiment) -> Path:
    return Path("results") / experiment.name


def _write_meta(out: Path, experiment: Experiment, tasks: list[Task]) -> None:
    from . import __version__

    out.mkdir(parents=True, exist_ok=True)
    if experiment.source is not None:
        tmp = out / ".experiment.toml.tmp"
        tmp.write_text(experiment.source)
        os.replace(tmp, out / "experiment.toml")
    meta = {
        "name": experiment.name,
        "title": experiment.title,
        "description": experiment.description,
        "seed": experiment.seed,
        "replications": experiment.replications,
        "base": dict(experiment.base),
        "blocks": [
            {
                "name": b.name,
                "grid": dict(b.grid),
                "base": dict(b.base),
                "replications": b.replications or experiment.replications,
            }
            for b in experiment.blocks
        ],
        "runs": len(tasks),
        "coapcc_version": __version__,
        "source_path": experiment.path,
    }
    tmp = out / ".experiment.json.tmp"
    tmp.write_text(json.dumps(meta, indent=2, default=str))
    os.replace(tmp, out / "experiment.json")


def sweep(
    experiment: Experiment | str,
    out: str | os.PathLike | None = None,
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    dask_local: bool = False,
    runner: RunnerLike = None,
    quick: bool = False,
    progress: bool = True,
    log=None,
) -> SweepOutcome:
    """Run every missing run of ``experiment`` into the dataset ``out`` (default
    ``results/NAME``) and return a :class:`SweepOutcome`.

    ``workers=1`` runs serially in this process; otherwise a process pool of ``workers``
    (default: CPU cores), or Dask when ``scheduler`` (an address) or ``dask_local`` is given.

    >>> outcome = coapcc.sweep("experiments/anrw18.toml", workers=2)   # doctest: +SKIP
    >>> res = coapcc.load_results(outcome.out)                         # doctest: +SKIP
    """
    log = log or sys.stderr
    from .dataset import DatasetWriter, compact, done_hashes

    if isinstance(experiment, str):
        experiment = find_experiment(experiment)
    if quick:
        experiment = experiment.quick_variant()
    out = Path(out) if out is not None else default_out(experiment)
    t0 = time.perf_counter()
    tasks = plan(experiment)
    _write_meta(out, experiment, tasks)
    compact(out)  # runs left as single files by an interrupted sweep join a part
    done = done_hashes(out)
    todo = [t for t in tasks if t.config_hash not in done]
    outcome = SweepOutcome(experiment.name, out, len(tasks), len(tasks) - len(todo))
    workers = workers or os.cpu_count() or 1
    if scheduler or dask_local:
        mode = f"dask {scheduler}" if scheduler else f"dask LocalCluster, {workers} workers"
    elif workers == 1 or len(todo) <= 1:
        mode = "serial"
    else:
        mode = f"process pool, {min(workers, len(todo))} workers"
    print(
        f"sweep {experiment.name} -> {out}: {len(tasks)} runs, {outcome.done_before} done, "
        f"{len(todo)} to run ({mode})",
        file=log,
        flush=True,
    )
    if not todo:
        outcome.wall_s = time.perf_counter() - t0
        return outcome
    # Longest first: better load balance; the order does not change any result.
    todo.sort(key=lambda t: -t.cost)
    if scheduler or dask_local:
        results = _dask(todo, runner, workers, scheduler)
    elif mode == "serial":
        results = _serial(todo, runner)
    else:
        results = _pool(todo, runner, min(workers, len(todo)))

    writer = DatasetWriter(out)
    bar = None
    if progress:
        from tqdm import tqdm

        # Progress is weighted by each run's estimated cost, so the ETA is meaningful although
        # runs differ in size by orders of magnitude; the description counts runs.
        bar = tqdm(
            total=sum(t.cost for t in todo),
            file=sys.stderr,
            bar_format="{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]",
            desc=f"{experiment.name} 0/{len(todo)} runs",
            dynamic_ncols=True,
            mininterval=0.5,
        )
    try:
        for task, encoded, error in results:
            if error is not None:
                outcome.failed.append((task.config_hash, f"{type(error).__name__}: {error}"))
                print(
                    f"sweep: run {task.config_hash} ({task.planned.block} {dict(task.planned.assignment)} "
                    f"rep {task.planned.replication}) failed: {error}",
                    file=log,
                    flush=True,
                )
            else:
                writer.add(encoded)
                outcome.ran += 1
            if bar is not None:
                bar.update(task.cost)
                bar.set_description_str(
                    f"{experiment.name} {outcome.ran + len(outcome.failed)}/{len(todo)} runs", refresh=False
                )
    except KeyboardInterrupt:
        outcome.interrupted = True
    finally:
        close = getattr(results, "close", None)
        if close:
            close()
        writer.close()
        if bar is not None:
            bar.close()
    outcome.wall_s = time.perf_counter() - t0
    if outcome.interrupted:
        print(
            f"sweep {experiment.name}: interrupted; {outcome.done_before + outcome.ran} of {outcome.total} "
            f"runs are in {out} (rerun to do the rest)",
            file=log,
            flush=True,
        )
    else:
        print(
            f"sweep {experiment.name}: {outcome.ran} runs in {outcome.wall_s:.1f} s, "
            f"{len(outcome.failed)} failed; {outcome.done_before + outcome.ran}/{outcome.total} in {out}",
            file=log,
            flush=True,
        )
    return outcome


def add_executor_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--workers",
        "-j",
        type=int,
        default=None,
        metavar="N",
        help="parallel simulations (default: CPU cores; 1 = serial, in this process)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="run on a Dask cluster: scheduler address (e.g. tcp://host:8786)",
    )
    p.add_argument(
        "--dask",
        choices=["local"],
        default=None,
        help="'local': start a Dask LocalCluster of --workers processes",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--runner", default=None, help=argparse.SUPPRESS)  # module:function, for tests


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="coapcc sweep",
        description="Run every point of an experiment (a TOML file, or a catalogue name such as anrw18) "
        "into a Parquet dataset. Finished runs are kept; a rerun does only what is missing.",
    )
    p.add_argument("experiment", help="experiment file (.toml) or catalogue name")
    p.add_argument(
        "--out", "-o", default=None, metavar="DIR", help="results dataset (default: results/NAME/)"
    )
    p.add_argument(
        "--quick", action="store_true", help="the experiment's [quick] variant (fewer replications)"
    )
    p.add_argument("--list", action="store_true", help="print the plan (blocks, runs) and exit")
    add_executor_args(p)
    a = p.parse_args(argv)
    try:
        exp = find_experiment(a.experiment)
        if a.quick:
            exp = exp.quick_variant()
        if a.list:
            print(exp.summary())
            return 0
        outcome = sweep(
            exp,
            a.out,
            workers=a.workers,
            scheduler=a.scheduler,
            dask_local=a.dask == "local",
            runner=a.runner,
            progress=not a.no_progress,
        )
    except (ConfigError, FileNotFoundError, RuntimeError) as e:
        print(f"coapcc sweep: error: {e}", file=sys.stderr)
        return 2
    if outcome.interrupted:
        return 130
    return 1 if outcome.failed else 0
