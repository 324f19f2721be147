"""``coapcc sweep``: run every point of an experiment, locally or on a Dask cluster.

Executors (:mod:`coapcc.executors`; all give identical tables, the simulator being
deterministic given the seed): ``serial`` (``--workers 1``), ``pool`` (default, ``--workers N``,
default = CPU cores: a local process pool, spawned) and ``dask`` (``--scheduler ADDRESS``, or
``--dask local`` for a LocalCluster of ``--workers`` single-threaded worker processes).

Every kind of experiment (:mod:`coapcc.kinds`: simulator runs, mesh runs, Makarem's studies,
the sensitivity study) sweeps the same way: the kind resolves, identifies and runs each run,
and its dataset has the same layout, journal, resume and format checks.

Whatever the executor, the simulator runs on the workers and this process writes each
finished run into the dataset at once (see :mod:`coapcc.dataset`), so workers need no shared
filesystem, and an interrupted sweep (Ctrl-C, crash, lost worker) loses no finished run: a
rerun only does what is missing.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import argcheck
from .config import ConfigError
from .executors import dask as _dask
from .executors import describe as _describe
from .executors import pool as _pool
from .executors import serial as _serial
from .experiment import DEFAULT_KIND, Experiment, PlannedRun, check_name, find_experiment
from .kinds import SEED_PLACEHOLDER, SEED_TEXT, PointTemplate, get_kind
from .runner import RunnerLike

__all__ = ["sweep", "plan", "Task", "SweepOutcome", "DatasetMismatch", "main"]


@dataclass(frozen=True)
class Task:
    """One run to do: what it is (``planned``), its hash and the runner's input."""

    planned: PlannedRun
    config_hash: str
    block_index: int
    #: The runner's input for the run's grid point, the seed a placeholder (shared by every
    #: replication of the point).
    template: PointTemplate
    #: The experiment's kind (:mod:`coapcc.kinds`).
    kind: str = "sim"
    #: Every block that has this run, its own block first (listed in a ``blocks`` column by
    #: kinds that ask for it).
    blocks: tuple[str, ...] = ()

    @property
    def config_json(self) -> str:
        """The runner's input (made when the run is sent, so a plan stays small)."""
        return self.template.input_json(self.planned.config.seed)

    @property
    def cost(self) -> float:
        """Rough relative cost (to start the longest runs first)."""
        return get_kind(self.kind).cost(self.planned.config)

    def ident(self) -> dict:
        p = self.planned
        out = {
            "experiment": p.experiment,
            "block": p.block,
            "block_index": self.block_index,
            "point": p.point,
            "replication": p.replication,
            "config_hash": self.config_hash,
            "point_hash": p.point_hash,
        }
        if get_kind(self.kind).lists_blocks:
            out["blocks"] = "|".join(self.blocks or (p.block,))
        return out

    def _point_columns(self) -> dict:
        """The kind's configuration columns of the run's grid point (computed once per point)."""
        p = self.planned
        cols = _POINT_COLUMNS.get(p.point_hash) if p.point_hash else None
        if cols is None:
            cols = get_kind(self.kind).columns(p.config)
            if p.point_hash:
                if len(_POINT_COLUMNS) > 4096:
                    _POINT_COLUMNS.clear()
                _POINT_COLUMNS[p.point_hash] = cols
        return cols

    def common(self) -> dict:
        """The run's configuration columns: its identity, then its kind's configuration
        columns, ``seed`` included."""
        cols = {**self.ident(), **self._point_columns()}
        cols["seed"] = self.planned.config.seed
        return cols

    def common_json(self) -> str:
        """:meth:`common` as JSON text (the configuration's part made once per grid point)."""
        p = self.planned
        if not p.point_hash:
            return json.dumps(self.common(), separators=(",", ":"))
        text = _POINT_TEXT.get(p.point_hash)
        if text is None:
            cols = {**self._point_columns(), "seed": SEED_PLACEHOLDER}
            if len(_POINT_TEXT) > 4096:
                _POINT_TEXT.clear()
            text = _POINT_TEXT[p.point_hash] = json.dumps(cols, separators=(",", ":"))
        ident = json.dumps(self.ident(), separators=(",", ":"))
        return ident[:-1] + "," + text[1:].replace(SEED_TEXT, str(int(p.config.seed)), 1)


#: Configuration columns of grid points, and the same as JSON text with the seed a placeholder
#: (see :meth:`Task.common_json`).
_POINT_COLUMNS: dict[str, dict] = {}
_POINT_TEXT: dict[str, str] = {}


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
    signal: int = 0  #: the signal that interrupted it (2 = SIGINT, 15 = SIGTERM)
    wall_s: float = 0.0

    @property
    def complete(self) -> bool:
        return not self.failed and not self.interrupted and self.done_before + self.ran == self.total


def plan(experiment: Experiment) -> list[Task]:
    """Every distinct run of ``experiment`` as a :class:`Task`, validated (a simulator run's
    algorithm specs are resolved against the Rust registry, so a bad spec fails here, naming
    the key). A run that several blocks have is planned once, in its first block, and lists
    them all (:attr:`Task.blocks`)."""
    kind = get_kind(experiment.kind)
    block_index = {b.name: i for i, b in enumerate(experiment.blocks)}
    templates: dict[str, PointTemplate] = {}
    tasks: dict[str, Task] = {}
    blocks: dict[str, list[str]] = {}
    for run in experiment.runs():
        tpl = templates.get(run.point_hash) if run.point_hash else None
        if tpl is None:
            try:
                tpl = kind.template(run.config)
            except ConfigError as e:
                raise ConfigError(
                    e.key,
                    f"{str(e).split(': ', 1)[1]} [in block '{run.block}' point {dict(run.assignment)}]",
                ) from None
            if run.point_hash:
                templates[run.point_hash] = tpl
        h = tpl.config_hash(run.config.seed)
        if h in tasks:
            if run.block not in blocks[h]:
                blocks[h].append(run.block)
            continue
        tasks[h] = Task(run, h, block_index[run.block], tpl, kind.name)
        blocks[h] = [run.block]
    return [dataclasses.replace(t, blocks=tuple(blocks[h])) for h, t in tasks.items()]


# -- the sweep --------------------------------------------------------------------------------


class Interrupted(KeyboardInterrupt):
    """SIGTERM (or SIGHUP), handled like Ctrl-C: stop the workers, keep every finished run."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _terminate_like_interrupt():
    """While sweeping, SIGTERM and SIGHUP raise :class:`Interrupted` (as SIGINT raises
    KeyboardInterrupt), so batch schedulers and ``timeout`` stop a sweep cleanly."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Interrupted(signum)

    old = {}
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            old[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)


def default_out(experiment: Experiment) -> Path:
    return Path("results") / check_name(experiment.name)


def definition(experiment: Experiment) -> dict:
    """What defines an experiment's runs (not its title or description): base seed,
    replications, base and blocks, as stored in ``experiment.json``."""
    # "kind", "seeds" and "sections" only when they say something, so that simulator datasets
    # record what they always did.
    extra: dict = {}
    if experiment.kind != DEFAULT_KIND:
        extra["kind"] = experiment.kind
    if experiment.seeds != "per-point":
        extra["seeds"] = experiment.seeds
    if experiment.sections:
        extra["sections"] = dict(experiment.sections)
    return {
        **extra,
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
    }


def _plain_json(x):
    return json.loads(json.dumps(x, default=str, sort_keys=True))


class DatasetMismatch(RuntimeError):
    """The dataset holds runs of another definition of the experiment."""


def _check_same_definition(out: Path, experiment: Experiment, has_runs: bool) -> None:
    """Refuse to add runs of a changed experiment to a dataset of another version of it: the
    dataset would silently mix two grids."""
    meta_path = out / "experiment.json"
    if not has_runs or not meta_path.exists():
        return
    try:
        old = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        return
    new = _plain_json({"name": experiment.name, **definition(experiment)})
    old = _plain_json({k: old.get(k) for k in new})
    if old == new:
        return
    changed = [k for k in new if old.get(k) != new[k]]
    if "blocks" in changed:
        ob = {b.get("name"): b for b in old.get("blocks") or []}
        nb = {b["name"]: b for b in new["blocks"]}
        details = [f"block {n!r} added" for n in nb if n not in ob]
        details += [f"block {n!r} removed" for n in ob if n not in nb]
        for n in nb:
            if n in ob and ob[n] != nb[n]:
                keys = [k for k in nb[n] if ob[n].get(k) != nb[n][k]]
                details.append(f"block {n!r}: {', '.join(keys)} changed")
        changed = [k for k in changed if k != "blocks"] + details
    raise DatasetMismatch(
        f"{out} holds runs of another version of experiment {old.get('name')!r} ({'; '.join(changed)}): "
        "sweeping the new version into it would mix two grids. Sweep into another folder (--out), "
        "or delete the dataset to start again"
    )


def _write_meta(out: Path, experiment: Experiment, tasks: list[Task]) -> None:
    from . import __version__
    from .storage import DATASET_FORMAT, atomic_write_bytes

    out.mkdir(parents=True, exist_ok=True)
    if experiment.source is not None:
        atomic_write_bytes(experiment.source.encode(), out / "experiment.toml")
    meta = {
        "name": experiment.name,
        "title": experiment.title,
        "description": experiment.description,
        **definition(experiment),
        "runs": len(tasks),
        "coapcc_version": __version__,
        "dataset_format": DATASET_FORMAT,
        "source_path": experiment.path,
        **({"figures": list(experiment.figures)} if experiment.figures else {}),
    }
    atomic_write_bytes(json.dumps(meta, indent=2, default=str).encode(), out / "experiment.json")


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
    started=None,
) -> SweepOutcome:
    """Run every missing run of ``experiment`` into the dataset ``out`` (default
    ``results/NAME``) and return a :class:`SweepOutcome`.

    ``workers=1`` runs serially in this process; otherwise a process pool of ``workers``
    (default: CPU cores), or Dask when ``scheduler`` (an address) or ``dask_local`` is given.

    One sweep at a time writes a dataset (a second one raises
    :class:`coapcc.dataset.DatasetBusy`), and a dataset holds one version of an experiment
    (a changed grid raises :class:`DatasetMismatch`). ``started``: called (with no argument)
    once the runs are handed to the executor, from where this process mostly waits for them
    (``coapcc reproduce`` loads the report's libraries then). SIGTERM stops a sweep as Ctrl-C does
    (``outcome.interrupted``); a full disk raises ``OSError`` after stopping the workers, with
    every finished run kept.

    >>> outcome = coapcc.sweep("anrw18", workers=2)   # doctest: +SKIP
    >>> res = coapcc.load_results(outcome.out)        # doctest: +SKIP
    """
    log = log or sys.stderr
    from .storage import DatasetLock, check_format, compact, done_hashes, quarantine_damaged

    if isinstance(experiment, str):
        experiment = find_experiment(experiment)
    if quick:
        experiment = experiment.quick_variant()
    out = Path(out) if out is not None else default_out(experiment)
    t0 = time.perf_counter()
    tasks = plan(experiment)
    if not tasks:
        raise ConfigError("grid", f"experiment {experiment.name!r} has no runs")
    with DatasetLock(out), _terminate_like_interrupt():
        check_format(out)  # before anything rewrites a part
        quarantine_damaged(out, log=log)
        compact(out)  # runs left in journals (or per-run files) by an interrupted sweep join a part
        done = done_hashes(out)
        _check_same_definition(out, experiment, bool(done))
        _write_meta(out, experiment, tasks)
        todo = [t for t in tasks if t.config_hash not in done]
        outcome = SweepOutcome(experiment.name, out, len(tasks), len(tasks) - len(todo))
        if len(done) > outcome.done_before:
            print(
                f"sweep: note: {out} also holds {len(done) - outcome.done_before} runs that are not in this "
                "plan (another coapcc version resolved an algorithm differently?)",
                file=log,
                flush=True,
            )
        _run(
            experiment, out, todo, outcome, workers, scheduler, dask_local, runner, progress, log, t0, started
        )
    return outcome


def _run(
    experiment, out, todo, outcome, workers, scheduler, dask_local, runner, progress, log, t0, started=None
) -> None:
    from .storage import DatasetWriter

    workers = workers or os.cpu_count() or 1
    if workers < 1:
        raise ConfigError("workers", f"must be >= 1, got {workers}")
    if scheduler or dask_local:
        import importlib.util

        if importlib.util.find_spec("distributed") is None:
            raise RuntimeError(
                "the Dask executor (--dask, --scheduler) needs dask.distributed, which is not "
                "installed: pip install 'coapcc[cluster]'"
            )
        mode = f"dask {scheduler}" if scheduler else f"dask LocalCluster, {workers} workers"
    elif workers == 1 or len(todo) <= 1:
        mode = "serial"
    else:
        mode = f"process pool, {min(workers, len(todo))} workers"
    print(
        f"sweep {experiment.name} -> {out}: {outcome.total} runs, {outcome.done_before} done, "
        f"{len(todo)} to run ({mode})",
        file=log,
        flush=True,
    )
    if not todo:
        outcome.wall_s = time.perf_counter() - t0
        return
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

        # Counts runs (the percentage is of runs; runs are started longest first, so the ETA
        # starts pessimistic).
        bar = tqdm(
            total=len(todo),
            file=sys.stderr,
            unit="run",
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} runs [{elapsed}<{remaining}]",
            desc=experiment.name,
            dynamic_ncols=True,
            mininterval=0.5,
        )
    ok = False
    try:
        if started is not None:
            started()
        for task, encoded, error in results:
            if error is not None:
                outcome.failed.append((task.config_hash, _describe(error)))
                print(
                    f"sweep: run {task.config_hash} ({task.planned.block} {dict(task.planned.assignment)} "
                    f"rep {task.planned.replication}) failed: {_describe(error)}",
                    file=log,
                    flush=True,
                )
            else:
                writer.add(*encoded, common=task.common())
                outcome.ran += 1
            if bar is not None:
                bar.update(1)
        ok = True
    except KeyboardInterrupt as e:
        outcome.interrupted = True
        outcome.signal = getattr(e, "signum", 2)
        ok = True
    finally:
        if bar is not None:
            bar.close()
        close = getattr(results, "close", None)
        if close:
            close()  # stops the workers
        if ok:
            writer.close()
        else:  # an error (a full disk): keep what can be kept, report the first error
            with contextlib.suppress(Exception):
                writer.close()
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


#: Most parallel simulations ``--workers`` may ask for.
MAX_WORKERS = 1024


def add_executor_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--workers",
        "-j",
        type=argcheck.number(lo=1, hi=MAX_WORKERS, integer=True),
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
    p = argcheck.Parser(
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
            print(exp.summary([t.planned for t in plan(exp)]))
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
    except KeyboardInterrupt as e:  # while planning, or reading the dataset
        print("coapcc sweep: interrupted", file=sys.stderr)
        return 128 + getattr(e, "signum", 2)
    except BrokenPipeError:  # --list | head
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - no flush error at exit
        return 0
    except (ConfigError, FileNotFoundError, RuntimeError) as e:
        print(f"coapcc sweep: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a full disk, a read-only folder...
        print(
            f"coapcc sweep: error: {e}; every finished run written so far is kept, rerun to continue",
            file=sys.stderr,
        )
        return 1
    if outcome.interrupted:
        return 128 + (outcome.signal or 2)
    return 1 if outcome.failed else 0
