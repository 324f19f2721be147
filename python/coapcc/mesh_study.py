"""``coapcc reproduce ancillotti [--quick]``: mesh experiments (``kind = "mesh"``), planned,
run in parallel, stored run by run, and drawn.

An experiment file with ``kind = "mesh"`` (``experiments/ancillotti.toml`` in the package) has
the layout of the other experiment files (``seed``, ``replications``, ``[base]``,
``[[block]]`` with ``[block.grid]``, ``[quick]``), but its keys are mesh configuration fields
(:func:`coapcc.meshsim.mesh_config`): top-level ones (``topology``, ``cc``, ``traffic``,
``message_bytes``, ``duration_s``...), dotted section keys (``"mac.queue_packets"``) and
``preset`` (default ``ancillotti-cooja``).

**Plan.** Every grid point of every block is resolved to a full mesh configuration (checked
by the simulator, topology and DODAG included, before anything runs). The seed of replication
``r`` is derived from the base seed, the resolved configuration without its seed and ``r``,
exactly as for the other experiments (:func:`coapcc.experiment.derive_seed`): the first 8
bytes of ``sha256('{"base_seed":S,"point":P,"replication":R}')``. A run is identified by the
hash of its configuration, seed included (``run_id``), so a point that two blocks share
(``events:600,192`` is in ``events-tb`` and ``events-size``) runs once and belongs to both.

**Run.** Runs go to a process pool, one worker per core (``--workers``), longest first;
workers die with the parent (``PR_SET_PDEATHSIG``), even on SIGKILL. Each finished run is
written at once, atomically (a temporary file renamed into place), as two Parquet parts under
the results folder (``results/NAME/``, ``results/NAME-quick/`` with ``--quick``):
``runs/RUN_ID.parquet`` (one row: the run's configuration and scalar metrics) and
``clients/RUN_ID.parquet`` (one row per client). A run whose ``runs/`` part exists is done: an
interrupted reproduction resumes with the runs still missing, and gives the same tables as an
uninterrupted one (a run is a pure function of its configuration).

**Report.** ``runs.parquet`` and ``clients.parquet`` (every part, in plan order),
``summary.csv`` (per grid point: mean and 95 % confidence half-width over the replications),
``figures/*.png|svg`` and a self-contained ``report.html``. The figures are those of
Ancillotti & Bruno (the mapping is in docs/mesh.md): they are drawn from the blocks named
``monitoring``, ``events-tb`` and ``events-size``; a block that is absent leaves its figures
out with a note.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import ConfigError, canonical_json
from .experiment import Block, quick_variant

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "MeshExperiment",
    "MeshBlock",
    "MeshRun",
    "StudyOutcome",
    "load_mesh_experiment",
    "find_mesh_experiment",
    "plan",
    "plan_summary",
    "run_study",
    "load_tables",
    "write_report",
    "write_tables",
    "reproduce_mesh",
    "main",
    "DEFAULT_DIR",
]

#: Where the package's experiment files are (``ancillotti.toml``).
DEFAULT_DIR = Path(__file__).resolve().parent / "experiments"

#: Default preset of a mesh experiment without ``preset`` in its base.
DEFAULT_PRESET = "ancillotti-cooja"

#: Short labels of the study's algorithms in figures (the ``cc`` spec's name, before ``:``).
CC_LABELS = {"default": "CoAP-CC", "cocoa-plus": "CoCoA+"}

_TOP_KEYS = {"name", "kind", "title", "description", "seed", "replications", "base", "grid", "block", "quick"}
_BLOCK_KEYS = {"name", "grid", "base", "replications", "description"}
_NOT_SWEEPABLE = {
    "seed": "run seeds are derived from the top-level 'seed' and the replication index",
    "trace": "a mesh study records no traces",
}
_QUANTILES = ("count", "mean", "min", "p10", "p25", "median", "p75", "p90", "p95", "max")
_DISTS = ("rto_first_s", "rtt_strong_s", "rtt_weak_s", "unit_rtt_s")
_SCALARS = (
    "plr_mean",
    "plr_max",
    "plr_event_mean",
    "plr_event_max",
    "retransmissions_per_frame_mean",
    "retransmissions_per_frame_max",
    "retransmissions_per_message_mean",
    "early_retransmissions_mean",
    "early_retransmissions_max",
    "sim_time_s",
    "wall_s",
    "events",
)


# -- experiment files -----------------------------------------------------------------------


#: A block of a mesh experiment: the same cartesian product over ``grid`` as a simulator
#: experiment's block (the keys are mesh configuration fields here).
MeshBlock = Block


@dataclass(frozen=True)
class MeshExperiment:
    """A mesh experiment file: base configuration, blocks, replications, base seed."""

    name: str
    blocks: tuple[MeshBlock, ...]
    base: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 1
    replications: int = 1
    title: str = ""
    description: str = ""
    quick: Mapping[str, Any] = field(default_factory=dict)
    source: str | None = None
    path: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, name: str | None = None, source=None, path=None):
        """Build from the parsed TOML table (structure checked here; configurations by
        :func:`plan`)."""
        from .experiment import check_name

        data = dict(data)
        for k in data:
            if k not in _TOP_KEYS:
                raise ConfigError(k, "unknown mesh experiment key", sorted(_TOP_KEYS))
        if data.get("kind") != "mesh":
            raise ConfigError("kind", f'expected "mesh", got {data.get("kind")!r}')
        blocks_data = data.get("block")
        if blocks_data is None:
            blocks_data = [{"name": "main", "grid": data.get("grid", {})}]
        elif "grid" in data:
            raise ConfigError("grid", "give either a top-level [grid] or [[block]] tables, not both")
        blocks = []
        for i, b in enumerate(blocks_data):
            where = f"block[{i}]"
            for k in b:
                if k not in _BLOCK_KEYS:
                    raise ConfigError(f"{where}.{k}", "unknown block key", sorted(_BLOCK_KEYS))
            grid = dict(b.get("grid", {}))
            for k, v in grid.items():
                if not isinstance(v, list) or not v:
                    raise ConfigError(f"{where}.grid.{k}", f"expected a non-empty list of values, got {v!r}")
                if len({canonical_json(x) for x in v}) != len(v):
                    raise ConfigError(f"{where}.grid.{k}", "a value is listed twice")
            reps = b.get("replications")
            if reps is not None and (not isinstance(reps, int) or isinstance(reps, bool) or reps < 1):
                raise ConfigError(f"{where}.replications", f"must be an integer >= 1, got {reps!r}")
            for k in [*grid, *b.get("base", {})]:
                if k in _NOT_SWEEPABLE:
                    raise ConfigError(f"{where}.{k}", _NOT_SWEEPABLE[k])
            blocks.append(
                MeshBlock(
                    name=str(b.get("name", f"block{i}")),
                    grid=grid,
                    base=dict(b.get("base", {})),
                    replications=reps,
                    description=str(b.get("description", "")),
                )
            )
        names = [b.name for b in blocks]
        if len(set(names)) != len(names):
            raise ConfigError("block.name", f"block names must be unique, got {names}")
        reps = data.get("replications", 1)
        if not isinstance(reps, int) or isinstance(reps, bool) or reps < 1:
            raise ConfigError("replications", f"must be an integer >= 1, got {reps!r}")
        seed = data.get("seed", 1)
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ConfigError("seed", f"must be an integer >= 0, got {seed!r}")
        for k in data.get("base", {}):
            if k in _NOT_SWEEPABLE:
                raise ConfigError(f"base.{k}", _NOT_SWEEPABLE[k])
        quick = dict(data.get("quick", {}))
        for k in quick:
            if k not in ("replications", "base", "grid"):
                raise ConfigError(f"quick.{k}", "unknown key", ["replications", "base", "grid"])
        return cls(
            name=check_name(str(data.get("name") or name or "mesh")),
            blocks=tuple(blocks),
            base=dict(data.get("base", {})),
            seed=seed,
            replications=reps,
            title=str(data.get("title", "")),
            description=str(data.get("description", "")),
            quick=quick,
            source=source,
            path=path,
        )

    def quick_variant(self) -> MeshExperiment:
        """The ``--quick`` version (:func:`coapcc.experiment.quick_variant`)."""
        return quick_variant(self)


def _kind(path: Path) -> str | None:
    try:
        return tomllib.loads(path.read_text()).get("kind")
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None


def find_mesh_experiment(name_or_path: str) -> Path | None:
    """The file of a mesh experiment given as a path or a name (looked up in the experiment
    catalogue folders, then the package's ``experiments/``); ``None`` if it is not one."""
    p = Path(name_or_path)
    if p.suffix == ".toml":
        return p if p.is_file() and _kind(p) == "mesh" else None
    from .experiment import catalogue_dirs

    for d in [*catalogue_dirs(), DEFAULT_DIR]:
        f = d / f"{name_or_path}.toml"
        if f.is_file() and _kind(f) == "mesh":
            return f
    return None


def load_mesh_experiment(name_or_path: str | os.PathLike) -> MeshExperiment:
    """Read a mesh experiment file, by path or name (``ancillotti``)."""
    f = find_mesh_experiment(os.fspath(name_or_path))
    if f is None:
        raise ConfigError("experiment", f"{os.fspath(name_or_path)!r} is not a mesh experiment file or name")
    text = f.read_text()
    return MeshExperiment.from_dict(tomllib.loads(text), name=f.stem, source=text, path=str(f))


# -- plan -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MeshRun:
    """One run: its identity, where it comes from and its full mesh configuration."""

    run_id: str  #: hash of the configuration, seed included
    blocks: tuple[str, ...]  #: every block that contains this run (first one first)
    point: int  #: index of the grid point in its first block
    replication: int
    assignment: Mapping[str, Any]  #: the grid values of the point (in its first block)
    config: Mapping[str, Any]  #: the resolved mesh configuration, seed included
    point_hash: str  #: hash of the configuration without its seed

    @property
    def block(self) -> str:
        return self.blocks[0]

    @property
    def seed(self) -> int:
        return int(self.config["seed"])

    @property
    def cost(self) -> float:
        """Relative cost estimate (node-seconds) for scheduling the longest runs first."""
        return float(_nodes(self.config["topology"]) * self.config["duration_s"])


def _nodes(topology: str) -> int:
    kind, _, arg = topology.partition(":")
    try:
        if kind == "grid":
            n, _, m = arg.partition("x")
            return int(n) * int(m or n)
        if kind in ("chain", "ring"):
            return int(arg)
        if kind == "dumbbell":
            k, m = arg.split(",")
            return 2 * int(k) + int(m) + 2
    except ValueError:
        pass
    return 1


def plan(exp: MeshExperiment) -> list[MeshRun]:
    """Every distinct run of ``exp``, block by block, point by point, replication by
    replication; a run two blocks share is listed once (with both block names). Raises
    :class:`~coapcc.config.ConfigError` naming the block and point of a configuration the
    simulator refuses."""
    from . import _native
    from .experiment import _seed_from_point, max_runs
    from .meshsim import mesh_config

    total = sum(b.size() * (b.replications or exp.replications) for b in exp.blocks)
    if total > max_runs():
        raise ConfigError("grid", f"experiment {exp.name!r} has {total:,} runs, more than {max_runs():,}")
    runs: dict[str, MeshRun] = {}
    checked: dict[str, str] = {}
    for b in exp.blocks:
        for pi, assignment in enumerate(b.points()):
            fields = {**exp.base, **b.base, **assignment}
            preset = fields.pop("preset", DEFAULT_PRESET)
            where = f"block '{b.name}' point {assignment}"
            try:
                cfg = mesh_config(preset, **fields)
            except ValueError as e:
                raise ConfigError("grid", f"{e} [in {where}]") from None
            cfg.pop("seed", None)
            point_json = canonical_json(cfg)
            if point_json not in checked:
                try:
                    _native.mesh_check_json(json.dumps({**cfg, "seed": 0}))
                except ValueError as e:
                    raise ConfigError("grid", f"{e} [in {where}]") from None
                checked[point_json] = hashlib.sha256(point_json.encode()).hexdigest()[:16]
            for r in range(b.replications or exp.replications):
                seeded = {**cfg, "seed": _seed_from_point(exp.seed, cfg, r)}
                rid = hashlib.sha256(canonical_json(seeded).encode()).hexdigest()[:16]
                if rid in runs:
                    old = runs[rid]
                    if b.name not in old.blocks:
                        runs[rid] = MeshRun(
                            rid,
                            (*old.blocks, b.name),
                            old.point,
                            r,
                            old.assignment,
                            old.config,
                            old.point_hash,
                        )
                    continue
                runs[rid] = MeshRun(rid, (b.name,), pi, r, dict(assignment), seeded, checked[point_json])
    return list(runs.values())


def plan_summary(exp: MeshExperiment, runs: list[MeshRun]) -> str:
    """The plan in a few lines."""
    lines = [f"{exp.name}: {len(runs)} runs"]
    for b in exp.blocks:
        dims = " x ".join(f"{k}[{len(v)}]" for k, v in b.grid.items()) or "1 point"
        reps = b.replications or exp.replications
        shared = sum(1 for r in runs if b.name in r.blocks and r.block != b.name)
        line = f"  {b.name}: {dims} x {reps} replications = {b.size() * reps} runs"
        if shared:
            line += f" ({shared} already in an earlier block, run once)"
        lines.append(line)
    return "\n".join(lines)


# -- run ------------------------------------------------------------------------------------


def _run_one(config_json: str) -> tuple[str, float]:
    """Worker entry point: one mesh run; returns the report JSON and the CPU seconds."""
    from . import _native

    t0 = time.thread_time()
    text = _native.mesh_json(config_json, None)
    return text, time.thread_time() - t0


def _traffic_columns(traffic: str, message_bytes: int) -> dict:
    kind, _, arg = traffic.partition(":")
    row = {"pattern": kind, "load_kbps": math.nan, "tb_s": math.nan, "event_bytes": math.nan}
    try:
        if kind == "periodic":
            row["load_kbps"] = float(arg)
            row["event_bytes"] = math.nan
        elif kind == "events":
            tb, size = arg.split(",")
            row["tb_s"] = float(tb)
            row["event_bytes"] = float(size)
    except ValueError:
        pass
    return row


def _grid_n(topology: str) -> float:
    kind, _, arg = topology.partition(":")
    if kind == "grid" and "x" not in arg:
        try:
            return float(int(arg))
        except ValueError:
            pass
    return math.nan


def _cc_label(cc: str) -> str:
    name = cc.split(":", 1)[0]
    return CC_LABELS.get(name, name)


def _records(run: MeshRun, report: dict, cpu_s: float) -> tuple[dict, list[dict]]:
    """The run's row and its per-client rows (tidy: one observation per row)."""
    cfg = run.config
    ident = {
        "run_id": run.run_id,
        "block": run.block,
        "blocks": "|".join(run.blocks),
        "point": run.point,
        "point_hash": run.point_hash,
        "replication": run.replication,
        "seed": run.seed,
        "topology": cfg["topology"],
        "grid_n": _grid_n(cfg["topology"]),
        "cc": cfg["cc"],
        "algorithm": _cc_label(cfg["cc"]),
        "traffic": cfg["traffic"],
        **_traffic_columns(cfg["traffic"], cfg["message_bytes"]),
        "message_bytes": cfg["message_bytes"],
        "duration_s": float(cfg["duration_s"]),
    }
    row = {**ident, "assignment": canonical_json(dict(run.assignment)), "clients": len(report["clients"])}
    for k in _SCALARS:
        v = report.get(k)
        row[k] = math.nan if v is None else v
    for cause, count in sorted(report.get("loss_causes", {}).items()):
        row[f"loss_{cause}"] = count
    for k in _DISTS:
        s = report.get(k) or {}
        for q in _QUANTILES:
            v = s.get(q)
            row[f"{k}_{q}"] = math.nan if v is None else float(v)
    row["cpu_s"] = cpu_s
    clients = [{**ident, **c} for c in report["clients"]]
    return row, clients


def _write_atomic(df, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    df.to_parquet(tmp, index=False)
    os.replace(tmp, path)


def _write_run(out: Path, run: MeshRun, report: dict, cpu_s: float) -> None:
    import pandas as pd

    row, clients = _records(run, report, cpu_s)
    # Clients first: the runs/ part is the mark of a finished run.
    _write_atomic(pd.DataFrame(clients), out / "clients" / f"{run.run_id}.parquet")
    _write_atomic(pd.DataFrame([row]), out / "runs" / f"{run.run_id}.parquet")


@dataclass
class StudyOutcome:
    """What :func:`run_study` did."""

    out: Path
    total: int
    reused: int = 0
    ran: int = 0
    failed: list = field(default_factory=list)  #: (run_id, message)
    wall_s: float = 0.0
    workers: int = 1
    cpu_s: float = 0.0  #: CPU seconds of the runs of this invocation (sum over workers)


def _done(out: Path) -> set[str]:
    return {p.stem for p in (out / "runs").glob("*.parquet") if not p.name.startswith(".")}


def run_study(
    exp: MeshExperiment,
    out: str | os.PathLike | None = None,
    *,
    workers: int | None = None,
    progress: bool = True,
    log=None,
) -> StudyOutcome:
    """Run every missing run of ``exp`` into ``out`` (default ``results/NAME``) on a process
    pool of ``workers`` (default: every core); returns a :class:`StudyOutcome`. Ctrl-C stops
    the pool and raises :class:`KeyboardInterrupt`; the finished runs are kept."""
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    from .runner import worker_init

    log = log or sys.stderr
    runs = plan(exp)
    out = Path(out) if out is not None else Path("results") / exp.name
    for sub in ("runs", "clients"):
        (out / sub).mkdir(parents=True, exist_ok=True)
        for stale in (out / sub).glob(".*.tmp-*"):  # left by a run killed while writing
            stale.unlink(missing_ok=True)
    if exp.source:
        (out / "experiment.toml").write_text(exp.source)
    done = _done(out)
    todo = sorted((r for r in runs if r.run_id not in done), key=lambda r: -r.cost)
    workers = max(1, min(workers or os.cpu_count() or 1, len(todo) or 1))
    outcome = StudyOutcome(out=out, total=len(runs), reused=len(runs) - len(todo), workers=workers)
    print(
        f"{exp.name}: {len(runs)} runs, {outcome.reused} already done, {len(todo)} to run on {workers} "
        f"worker(s) -> {out}",
        file=log,
        flush=True,
    )
    t0 = time.perf_counter()
    bar = None
    if progress and todo:
        from tqdm import tqdm

        bar = tqdm(
            total=len(runs), initial=outcome.reused, file=log, unit="run", desc=exp.name, mininterval=0.5
        )
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=mp.get_context("spawn"),
        initializer=worker_init,
        initargs=(os.getpid(),),
    )
    ok = False
    try:
        pending = {}
        queue = list(reversed(todo))  # pop() from the end: longest first
        # Keep a bounded number of runs in flight so Ctrl-C does not wait for a long queue.
        while queue or pending:
            while queue and len(pending) < 2 * workers:
                r = queue.pop()
                pending[pool.submit(_run_one, json.dumps(r.config))] = r
            finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for f in finished:
                r = pending.pop(f)
                try:
                    text, cpu_s = f.result()
                except Exception as e:  # a run the simulator refuses, or a dead worker
                    outcome.failed.append((r.run_id, f"{type(e).__name__}: {e}"))
                    print(
                        f"{exp.name}: run {r.run_id} ({r.block} {dict(r.assignment)} rep {r.replication}) "
                        f"failed: {e}",
                        file=log,
                        flush=True,
                    )
                else:
                    _write_run(out, r, json.loads(text), cpu_s)
                    outcome.ran += 1
                    outcome.cpu_s += cpu_s
                if bar is not None:
                    bar.update(1)
        ok = True
    finally:
        pool.shutdown(wait=ok, cancel_futures=True)
        if bar is not None:
            bar.close()
    outcome.wall_s = time.perf_counter() - t0
    return outcome


def load_tables(out: str | os.PathLike, runs: list[MeshRun] | None = None):
    """``(runs, clients)`` DataFrames of every finished run under ``out``, in plan order when
    ``runs`` is given (else by run id)."""
    import pandas as pd

    out = Path(out)
    order = {r.run_id: i for i, r in enumerate(runs)} if runs is not None else None
    tables = []
    for sub in ("runs", "clients"):
        files = sorted((out / sub).glob("[!.]*.parquet"))
        if order is not None:
            files = [f for f in files if f.stem in order]
            files.sort(key=lambda f: order[f.stem])
        df = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True) if files else pd.DataFrame()
        tables.append(df)
    return tables[0], tables[1]


# -- statistics and figures -----------------------------------------------------------------


def _ci(values) -> tuple[float, float, int]:
    """Mean, 95 % confidence half-width (Student t) and count of the finite values."""
    import numpy as np

    from .figures import t95

    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    n = len(v)
    if n == 0:
        return math.nan, math.nan, 0
    if n == 1:
        return float(v[0]), math.nan, 1
    return float(v.mean()), float(t95(n - 1) * v.std(ddof=1) / math.sqrt(n)), n


def _in_block(df, name: str):
    return df[df["blocks"].str.split("|").apply(lambda bs: name in bs)]


def _fmt_x(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _ci_figure(df, x: str, ys: list[tuple[str, str]], panel: str, panel_fmt, xlabel: str, x_fmt=_fmt_x):
    """One row per (column, label) in ``ys``, one panel per value of ``panel``: the mean over
    replications of the column against ``x``, one line per algorithm, 95 % CI bars."""
    from matplotlib.figure import Figure

    from .figures import _colors

    panels = sorted(df[panel].dropna().unique())
    series = list(dict.fromkeys(df["algorithm"]))
    colors = _colors(series)
    xs = sorted(df[x].dropna().unique())
    pos = {v: i for i, v in enumerate(xs)}
    fig = Figure(figsize=(max(4.2, 3.6 * len(panels)) + 0.4, 2.9 * len(ys) + 0.6))
    axes = fig.subplots(len(ys), len(panels), squeeze=False)
    for ri, (col, ylabel) in enumerate(ys):
        for pi, pv in enumerate(panels):
            ax = axes[ri][pi]
            sub = df[df[panel] == pv]
            for si, s in enumerate(series):
                pts = []
                for xv, g in sub[sub["algorithm"] == s].groupby(x):
                    m, h, _ = _ci(g[col])
                    if not math.isnan(m):
                        pts.append(
                            (pos[xv] + (si - (len(series) - 1) / 2) * 0.08, m, 0.0 if math.isnan(h) else h)
                        )
                if pts:
                    px, py, ph = zip(*pts)
                    ax.errorbar(px, py, yerr=ph, color=colors[s], marker="o", ms=4, capsize=3, lw=1, label=s)
            ax.set_xticks(range(len(xs)))
            ax.set_xticklabels([x_fmt(v) for v in xs])
            ax.set_ylim(bottom=0)
            ax.grid(axis="y", alpha=0.3)
            if ri == 0:
                ax.set_title(panel_fmt(pv), fontsize=10)
            if ri == len(ys) - 1:
                ax.set_xlabel(xlabel)
            if pi == 0:
                ax.set_ylabel(ylabel)
    handles = [axes[0][0].plot([], [], color=colors[s], marker="o", label=s)[0] for s in series]
    fig.legend(
        handles=handles, loc="upper center", ncol=len(series), frameon=False, bbox_to_anchor=(0.5, 1.0)
    )
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


def _box_figure(long, panel: str, panel_fmt, x: str, xlabel: str, series: str, ylabel: str):
    """Box plots drawn from per-run quantile summaries: for each (panel, x, series) the box is
    the median over replications of each run's p10 / p25 / median / p75 / p90 (whiskers at
    p10 and p90, no fliers). ``long`` has columns panel, x, series and those quantiles."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    from .figures import _colors

    panels = sorted(long[panel].dropna().unique())
    names = list(dict.fromkeys(long[series]))
    colors = _colors(names)
    xs = sorted(long[x].dropna().unique())
    fig = Figure(figsize=(max(4.2, (0.35 * len(xs) * len(names) + 1.4)) * len(panels) + 0.4, 3.6))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    width = 0.8 / max(1, len(names))
    for pi, pv in enumerate(panels):
        ax = axes[pi]
        sub = long[long[panel] == pv]
        for xi, xv in enumerate(xs):
            for si, s in enumerate(names):
                g = sub[(sub[x] == xv) & (sub[series] == s)]
                q = g[["p10", "p25", "median", "p75", "p90"]].median()
                if g.empty or q.isna().any():
                    continue
                st = {
                    "whislo": q["p10"],
                    "q1": q["p25"],
                    "med": q["median"],
                    "q3": q["p75"],
                    "whishi": q["p90"],
                }
                art = ax.bxp(
                    [{**st, "fliers": []}],
                    positions=[xi - 0.4 + width * (si + 0.5)],
                    widths=width * 0.85,
                    showfliers=False,
                    patch_artist=True,
                    manage_ticks=False,
                    medianprops={"color": "black", "linewidth": 1.2},
                )
                for b in art["boxes"]:
                    b.set_facecolor(colors[s])
                    b.set_alpha(0.85)
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([_fmt_x(v) for v in xs])
        ax.set_xlim(-0.6, len(xs) - 0.4)
        ax.set_xlabel(xlabel)
        ax.set_title(panel_fmt(pv), fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        if pi == 0:
            ax.set_ylabel(ylabel)
    fig.legend(
        handles=[Patch(facecolor=colors[s], label=s) for s in names],
        loc="upper center",
        ncol=len(names),
        frameon=False,
        bbox_to_anchor=(0.5, 1.0),
    )
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    return fig


def _grid_title(n) -> str:
    return f"{int(n)}×{int(n)} grid"


def _quantile_long(df, prefix: str, series: str | None = None):
    import pandas as pd

    cols = {f"{prefix}_{q}": q for q in ("p10", "p25", "median", "p75", "p90")}
    out = df[["grid_n", "load_kbps", "algorithm", *cols]].rename(columns=cols)
    if series is not None:
        out = out.assign(algorithm=series)
    return pd.DataFrame(out)


def _figures(runs_df) -> tuple[list[tuple[str, str, Any]], list[tuple[str, str]]]:
    """``(figures, omitted)``: figures as (id, caption, Figure); omitted as (id, why)."""
    import pandas as pd

    figs, omitted = [], []
    ci = "Points: mean over replications; bars: 95 % confidence interval (Student t)."
    mon = _in_block(runs_df, "monitoring") if len(runs_df) else runs_df
    mon = mon[mon["pattern"] == "periodic"] if len(mon) else mon
    mon_ids = ["plr-load", "plr-grid", "retx", "rto-first", "early", "rtt-estimates"]
    if len(mon) and mon["grid_n"].notna().any():
        mon = mon[mon["grid_n"].notna()]
        figs.append(
            (
                "plr-load",
                "Continuous monitoring: mean and maximum per-client packet loss ratio at the sink against the "
                f"network-wide offered load, one panel per grid (Ancillotti & Bruno, PLR figures). {ci}",
                _ci_figure(
                    mon,
                    "load_kbps",
                    [("plr_mean", "PLR (mean over clients)"), ("plr_max", "PLR (max over clients)")],
                    "grid_n",
                    _grid_title,
                    "offered load (kbit/s)",
                ),
            )
        )
        figs.append(
            (
                "plr-grid",
                f"Continuous monitoring: mean per-client PLR against the grid size, one panel per offered load. {ci}",
                _ci_figure(
                    mon,
                    "grid_n",
                    [("plr_mean", "PLR (mean over clients)")],
                    "load_kbps",
                    lambda v: f"{v:g} kbit/s",
                    "grid (n×n)",
                    x_fmt=lambda v: f"{int(v)}×{int(v)}",
                ),
            )
        )
        figs.append(
            (
                "retx",
                "Continuous monitoring: CoAP retransmissions per message (mean over clients) and per 32-byte "
                f"frame (mean and maximum over clients) against the offered load. {ci}",
                _ci_figure(
                    mon,
                    "load_kbps",
                    [
                        ("retransmissions_per_message_mean", "retx per message"),
                        ("retransmissions_per_frame_mean", "retx per frame (mean)"),
                        ("retransmissions_per_frame_max", "retx per frame (max)"),
                    ],
                    "grid_n",
                    _grid_title,
                    "offered load (kbit/s)",
                ),
            )
        )
        figs.append(
            (
                "rto-first",
                "Continuous monitoring: distribution of the RTO of first transmissions (T_0 of every frame). "
                "Box: median over replications of each run's quartiles and median; whiskers p10 / p90.",
                _box_figure(
                    _quantile_long(mon, "rto_first_s"),
                    "grid_n",
                    _grid_title,
                    "load_kbps",
                    "offered load (kbit/s)",
                    "algorithm",
                    "RTO of first transmissions (s)",
                ),
            )
        )
        figs.append(
            (
                "early",
                "Continuous monitoring: early retransmissions, the share of first transmissions that reached "
                "the sink and whose ACK came back, yet were retransmitted (mean and maximum over clients). "
                f"{ci}",
                _ci_figure(
                    mon,
                    "load_kbps",
                    [
                        ("early_retransmissions_mean", "early retx (mean)"),
                        ("early_retransmissions_max", "early retx (max)"),
                    ],
                    "grid_n",
                    _grid_title,
                    "offered load (kbit/s)",
                ),
            )
        )
        cocoa = mon[mon["rtt_weak_s_median"].notna() | mon["rtt_strong_s_median"].notna()]
        if len(cocoa):
            long = pd.concat(
                [
                    _quantile_long(cocoa, "rtt_strong_s", "strong RTO estimator"),
                    _quantile_long(cocoa, "rtt_weak_s", "weak RTO estimator"),
                ],
                ignore_index=True,
            )
            figs.append(
                (
                    "rtt-estimates",
                    "Continuous monitoring, CoCoA+: the strong and weak estimators' RTO (SRTT + K·RTTVAR) after "
                    "each update. Box: median over replications of each run's quartiles; whiskers p10 / p90.",
                    _box_figure(
                        long,
                        "grid_n",
                        _grid_title,
                        "load_kbps",
                        "offered load (kbit/s)",
                        "algorithm",
                        "estimator RTO (s)",
                    ),
                )
            )
        else:
            omitted.append(
                ("rtt-estimates", "no run of an algorithm with weak/strong estimators (CoCoA family)")
            )
    else:
        omitted += [(i, "no 'monitoring' block of periodic traffic over n×n grids") for i in mon_ids]
    for block, x, xlabel, fid, what in (
        ("events-tb", "tb_s", "mean inter-event time T_b (min)", "plr-tb", "the mean inter-event time T_b"),
        ("events-size", "event_bytes", "event message size (bytes)", "plr-size", "the event message size"),
    ):
        ev = _in_block(runs_df, block) if len(runs_df) else runs_df
        ev = ev[(ev["pattern"] == "events") & ev["grid_n"].notna()] if len(ev) else ev
        if not len(ev):
            omitted.append((fid, f"no '{block}' block of event traffic over n×n grids"))
            continue
        if x == "tb_s":
            ev = ev.assign(tb_min=ev["tb_s"] / 60.0)
            x = "tb_min"
        figs.append(
            (
                fid,
                f"Global event detection: PLR of the event messages (mean and maximum over clients) against "
                f"{what}, one panel per grid. {ci}",
                _ci_figure(
                    ev,
                    x,
                    [("plr_event_mean", "event PLR (mean)"), ("plr_event_max", "event PLR (max)")],
                    "grid_n",
                    _grid_title,
                    xlabel,
                ),
            )
        )
    return figs, omitted


def summary_table(runs_df, blocks: list[str] | None = None):
    """Per block and grid point (algorithm, topology, traffic): replications and, for the
    main metrics, the mean with its 95 % confidence half-width. A point two blocks share is
    listed in both. ``blocks``: block names in order (default: as they appear)."""
    import pandas as pd

    metrics = [
        "plr_mean",
        "plr_max",
        "plr_event_mean",
        "retransmissions_per_message_mean",
        "early_retransmissions_mean",
        "rto_first_s_median",
    ]
    rows = []
    if not len(runs_df):
        return pd.DataFrame()
    if blocks is None:
        blocks = list(dict.fromkeys(b for bs in runs_df["blocks"] for b in bs.split("|")))
    for block in blocks:
        for (_, alg, topo, traffic), g in _in_block(runs_df, block).groupby(
            ["point_hash", "algorithm", "topology", "traffic"], sort=False
        ):
            rows.append(_summary_row(block, alg, topo, traffic, g, metrics))
    return pd.DataFrame(rows)


def _summary_row(block, alg, topo, traffic, g, metrics) -> dict:
    row = {"block": block, "algorithm": alg, "topology": topo, "traffic": traffic, "replications": len(g)}
    for m in metrics:
        mean, half, _ = _ci(g[m])
        row[m] = mean
        row[f"{m}_ci95"] = half
    for c in [c for c in g.columns if c.startswith("loss_")]:
        row[c] = float(g[c].mean())
    return row


# -- report ---------------------------------------------------------------------------------


def _png(fig) -> bytes:
    """PNG at 90 dpi, no date in the metadata (the same figure gives the same bytes). The
    figures are laid out already (``tight_layout``): no ``bbox_inches="tight"``, which would
    lay every text out again (matplotlib's text layout is most of a report's time)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return buf.getvalue()


def _fmt_cell(v) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "–"
        return f"{v:.4g}"
    return str(v)


def _tables(exp: MeshExperiment, out: Path, runs: list[MeshRun]):
    runs_df, clients_df = load_tables(out, runs)
    if len(runs_df):
        _write_atomic(runs_df, out / "runs.parquet")
        _write_atomic(clients_df, out / "clients.parquet")
    summary = summary_table(runs_df, [b.name for b in exp.blocks])
    summary.to_csv(out / "summary.csv", index=False)
    return runs_df, summary


def write_tables(exp: MeshExperiment, out: str | os.PathLike) -> Path:
    """``runs.parquet``, ``clients.parquet`` (every finished run, in plan order) and
    ``summary.csv`` under ``out``; returns ``out``."""
    out = Path(out)
    _tables(exp, out, plan(exp))
    return out


def write_report(
    exp: MeshExperiment, out: str | os.PathLike, *, outcome: StudyOutcome | None = None, log=None
) -> Path:
    """Tables, figures and ``report.html`` of the finished runs of ``exp`` under ``out``."""
    import jinja2

    log = log or sys.stderr
    out = Path(out)
    runs = plan(exp)
    runs_df, summary = _tables(exp, out, runs)
    figdir = out / "figures"
    figdir.mkdir(exist_ok=True)
    figures, omitted = _figures(runs_df) if len(runs_df) else ([], [("all", "no finished run")])
    fig_ctx = []
    for fid, caption, fig in figures:
        png = _png(fig)
        (figdir / f"{fid}.png").write_bytes(png)
        fig_ctx.append(
            {
                "id": fid,
                "caption": caption,
                "png_b64": base64.b64encode(png).decode(),
                "files": [("png", f"figures/{fid}.png")],
            }
        )
    cpu = float(runs_df["cpu_s"].sum()) if len(runs_df) else 0.0
    overview = [
        ("experiment", exp.name),
        ("runs finished", f"{len(runs_df)} of {len(runs)}"),
        ("replications", str(exp.replications)),
        ("simulated time per run", f"{float(exp.base.get('duration_s', math.nan)):g} s"),
        ("base seed", str(exp.seed)),
        ("CPU time of the runs", f"{cpu:.1f} s (sum over runs)"),
    ]
    if outcome is not None:
        overview.append(
            (
                "this invocation",
                f"{outcome.ran} runs in {outcome.wall_s:.1f} s wall on {outcome.workers} worker(s); "
                f"{outcome.reused} reused",
            )
        )
    warnings = []
    if len(runs_df) < len(runs):
        warnings.append(f"{len(runs) - len(runs_df)} planned runs are missing; rerun to complete them")
    if outcome is not None and outcome.failed:
        warnings.append(
            f"{len(outcome.failed)} runs failed: " + "; ".join(f"{i}: {m}" for i, m in outcome.failed[:5])
        )
    blocks = []
    for b in exp.blocks:
        sub = summary[summary["block"] == b.name] if len(summary) else summary
        cols = [c for c in (sub.columns if len(sub) else []) if c != "block"]
        blocks.append(
            {
                "name": b.name,
                "description": b.description,
                "columns": cols,
                "rows": [[_fmt_cell(v) for v in r] for r in sub[cols].itertuples(index=False)]
                if len(sub)
                else [],
            }
        )
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("coapcc", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    text = env.get_template("mesh_study.html.j2").render(
        title=exp.title or exp.name,
        description=exp.description,
        overview=overview,
        warnings=warnings,
        figures=fig_ctx,
        omitted=omitted,
        blocks=blocks,
        source=exp.source or "",
        plan=plan_summary(exp, runs),
        configs=[
            {
                "title": f"Fully resolved mesh configuration of the first run of block '{b.name}'",
                "json": json.dumps(next(r.config for r in runs if b.name in r.blocks), indent=2),
            }
            for b in exp.blocks
            if any(b.name in r.blocks for r in runs)
        ],
    )
    path = out / "report.html"
    tmp = path.with_name(".report.html.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


# -- entry points ---------------------------------------------------------------------------


def reproduce_mesh(
    name: str,
    *,
    quick: bool = False,
    out: str | os.PathLike | None = None,
    workers: int | None = None,
    progress: bool = True,
    log=None,
) -> tuple[Path, StudyOutcome]:
    """Run the mesh experiment ``name`` (or its ``--quick`` variant) and write its report;
    returns the report's path and the outcome."""
    log = log or sys.stderr
    exp = load_mesh_experiment(name)
    if quick:
        exp = exp.quick_variant()
    t0 = time.perf_counter()
    outcome = run_study(exp, out, workers=workers, progress=progress, log=log)
    t1, c1 = time.perf_counter(), time.process_time()
    path = write_report(exp, outcome.out, outcome=outcome, log=log)
    report_s, report_cpu = time.perf_counter() - t1, time.process_time() - c1
    print(
        f"reproduce {exp.name}: {outcome.ran} runs in {outcome.wall_s:.1f} s wall on {outcome.workers} "
        f"worker(s), {outcome.cpu_s:.1f} s CPU ({outcome.reused} reused, {len(outcome.failed)} failed); "
        f"report {report_s:.1f} s wall, {report_cpu:.1f} s CPU; total {time.perf_counter() - t0:.1f} s; "
        f"report: {path}",
        file=log,
        flush=True,
    )
    return path, outcome


def main(argv: list[str], *, report: bool = True) -> int:
    """``coapcc reproduce MESH_EXPERIMENT [--quick] [--out DIR] [--workers N] [--list]``;
    with ``report=False`` (``coapcc sweep MESH_EXPERIMENT``) the runs and tables only."""
    p = argparse.ArgumentParser(
        prog="coapcc reproduce" if report else "coapcc sweep",
        description='Run a mesh experiment (kind = "mesh", e.g. ancillotti) and write its '
        + ("report." if report else "tables (runs.parquet, clients.parquet, summary.csv)."),
    )
    p.add_argument("name", help="mesh experiment name (ancillotti) or file")
    p.add_argument("--quick", action="store_true", help="the file's [quick] variant (fewer, shorter runs)")
    p.add_argument("--out", "-o", default=None, metavar="DIR", help="results folder (default results/NAME)")
    p.add_argument(
        "--workers", "-j", type=int, default=None, metavar="N", help="worker processes (default: cores)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--list", action="store_true", help="print the plan and exit")
    a = p.parse_args(argv)
    if a.workers is not None and a.workers < 1:
        p.error("--workers must be at least 1")
    try:
        if a.list:
            exp = load_mesh_experiment(a.name)
            exp = exp.quick_variant() if a.quick else exp
            print(plan_summary(exp, plan(exp)))
            return 0
        if report:
            path, outcome = reproduce_mesh(
                a.name, quick=a.quick, out=a.out, workers=a.workers, progress=not a.no_progress
            )
        else:
            exp = load_mesh_experiment(a.name)
            exp = exp.quick_variant() if a.quick else exp
            outcome = run_study(exp, a.out, workers=a.workers, progress=not a.no_progress)
            path = write_tables(exp, outcome.out)
    except KeyboardInterrupt:
        print("reproduce: interrupted; finished runs are kept, rerun to continue", file=sys.stderr)
        return 130
    except (ConfigError, OSError, ValueError) as e:
        print(f"coapcc reproduce: error: {e}", file=sys.stderr)
        return 2
    print(path)
    return 1 if outcome.failed else 0
