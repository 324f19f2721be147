"""Experiments as files: a named base configuration, grids, replications and seeds (TOML).

Format (see docs/sweeps.md for the full description)::

    name = "example"              # default: the file name without .toml
    title = "One line"            # optional
    seed = 2018                   # base seed (default 1)
    replications = 20             # per grid point (default 1); a block may override it

    [base]                        # SimConfig fields shared by every run (dotted keys allowed)
    preset = "helsinki2018"
    exchanges = 50

    [[block]]                     # one or more blocks; each is a cartesian product
    name = "error-free"
    [block.grid]                  # key -> list of values, any SimConfig field
    algorithm = ["default", "cocoa"]
    clients = [10, 200]

    [[block]]
    name = "errors"
    replications = 40
    [block.base]                  # overrides of [base] for this block only
    clients = 10
    [block.grid]
    errors = ["medium", "high"]

    [quick]                       # what `--quick` changes (optional)
    replications = 2
    [quick.grid]                  # keep only these values of a key a block sweeps
    clients = [10]

A file with a top-level ``[grid]`` and no ``[[block]]`` has one block named ``main``.

**Kinds.** ``kind`` (default ``"sim"``) names a registered study kind (:mod:`coapcc.kinds`):
what a run's configuration is and how it runs. ``kind = "mesh"`` makes every run a
multi-hop 802.15.4 mesh run (:class:`coapcc.meshsim.MeshConfig`, ``docs/mesh.md``): the keys
of ``[base]`` and of the grids are then mesh configuration fields (``topology``, ``cc``,
``traffic``, ``duration_s``, dotted ``"mac.queue_packets"``..., and ``preset``, default
``ancillotti-cooja``); ``"sensitivity"`` and ``"makarem-studies"`` are the other studies of the
catalogue. Everything else (blocks, replications, seeds, ``[quick]``, checks, error messages)
is the same for every kind, and :mod:`coapcc.sweeper` runs every kind into the same dataset.
A kind may own top-level sections of its own (``makarem-studies``: ``[models]``,
``[rtt_scenarios]``, ``[resbw]``), which it turns into blocks; ``[quick]`` may then override
keys of those sections (``[quick.resbw] duration_s = 3600``).

**Seeds.** ``seeds = "per-point"`` (the default of most kinds): the seed of a run is derived
from the base seed, the grid point and the replication index: the first 8 bytes (big-endian,
top bit cleared) of ``sha256('{"base_seed":S,"point":P,"replication":R}')`` where ``P`` is the
run's full configuration (every field except ``seed`` and ``trace``) as canonical JSON (sorted
keys, no spaces). So a run's seed does not depend on the block name, on the order of the grid
or on the other points, and the same configuration in two blocks or two experiments with the
same base seed is the same run. See :func:`derive_seed`. ``seeds = "shared"``: replication
``R`` of every point runs with seed ``S + R`` (common random numbers: every algorithm meets
the same random network, for paired comparisons; Makarem's studies and the sensitivity
study).
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import hashlib
import itertools
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import ConfigError, SimConfig, canonical_json

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "MAX_RUNS",
    "Experiment",
    "Block",
    "PlannedRun",
    "derive_seed",
    "load_experiment",
    "catalogue",
    "find_experiment",
]


#: Largest experiment (runs, counting every replication) that is planned: a plan is held in
#: memory (about 0.7 kB a run), so a grid that explodes (a typo adding a dimension) is refused
#: with a clear message rather than exhausting memory. ``$COAPCC_MAX_RUNS`` raises it.
MAX_RUNS = 200_000

#: The kind of a file that does not name one.
DEFAULT_KIND = "sim"

#: Seed rules (see the module's documentation).
SEED_RULES = ("per-point", "shared")

#: Keys a grid or a base cannot set: seeds are derived (top-level ``seed`` and
#: ``replications``), traces are recorded by ``coapcc report``.
_NOT_SWEEPABLE = {
    "seed": "run seeds are derived from the top-level 'seed' and the replication index; "
    "set 'seed' (base seed) or 'replications' at the top of the file",
    "trace": "a sweep records no traces (of a simulator experiment, coapcc report records one traced run); "
    "remove 'trace'",
}


def max_runs() -> int:
    """The run limit in force (:data:`MAX_RUNS`, or ``$COAPCC_MAX_RUNS``)."""
    v = os.environ.get("COAPCC_MAX_RUNS")
    if v:
        try:
            return max(1, int(v))
        except ValueError:
            raise ConfigError("COAPCC_MAX_RUNS", f"expected an integer, got {v!r}") from None
    return MAX_RUNS


def check_name(name: str) -> str:
    """An experiment name becomes a folder name (``results/NAME``): refuse names that would
    escape it or hide it (``../x``, ``/abs``, ``a/b``, ``.x``, empty)."""
    if (
        not name
        or name.startswith(".")
        or any(c in name for c in ("/", "\\", "\0"))
        or os.path.isabs(name)
        or name != name.strip()
    ):
        raise ConfigError(
            "name",
            f"{name!r} cannot name a results folder: use letters, digits, '-', '_' or '.', "
            "no '/' or '\\', not starting with '.'",
        )
    return name


def derive_seed(base_seed: int, config: SimConfig, replication: int) -> int:
    """Seed of replication ``replication`` of ``config`` (its own seed and trace ignored).

    >>> derive_seed(1, SimConfig(clients=10), 0) == derive_seed(1, SimConfig(clients=10, seed=99), 0)
    True
    >>> derive_seed(1, SimConfig(clients=10), 0) != derive_seed(1, SimConfig(clients=10), 1)
    True
    """
    return _seed_from_point(base_seed, _point_dict(config), replication)


def _point_dict(config: SimConfig) -> dict:
    point = config.to_dict()
    point.pop("seed", None)
    point.pop("trace", None)
    return point


def _seed_from_point(base_seed: int, point: dict | str, replication: int) -> int:
    """The seed of a replication: the hash of ``canonical_json({"base_seed", "point",
    "replication"})``; ``point`` may be given as its canonical JSON text already (the same
    text is then spliced in, so the material is byte-identical)."""
    text = point if isinstance(point, str) else canonical_json(point)
    material = f'{{"base_seed":{int(base_seed)},"point":{text},"replication":{int(replication)}}}'
    return int.from_bytes(hashlib.sha256(material.encode()).digest()[:8], "big") & (2**63 - 1)


@dataclass(frozen=True)
class PlannedRun:
    """One run of an experiment: where it comes from and what it runs."""

    experiment: str
    block: str
    point: int  #: index of the grid point within its block
    replication: int
    assignment: Mapping[str, Any]  #: the grid values of this point
    config: SimConfig  #: the full configuration, seed included (a MeshConfig in a mesh experiment)
    point_hash: str = ""  #: hash of the configuration without its seed (same for every replication)


@dataclass(frozen=True)
class Block:
    """A cartesian product over ``grid`` on top of the experiment's base config and ``base``."""

    name: str
    grid: Mapping[str, list]
    base: Mapping[str, Any] = field(default_factory=dict)
    replications: int | None = None
    description: str = ""

    def points(self) -> Iterator[dict]:
        """Every assignment of the grid, first key outermost, in file order."""
        keys = list(self.grid)
        for values in itertools.product(*(self.grid[k] for k in keys)):
            yield dict(zip(keys, values))

    def size(self) -> int:
        n = 1
        for v in self.grid.values():
            n *= len(v)
        return n


@dataclass(frozen=True)
class Experiment:
    """A named experiment: base configuration, blocks of grids, replications, base seed."""

    name: str
    blocks: tuple[Block, ...]
    base: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 1
    replications: int = 1
    title: str = ""
    description: str = ""
    quick: Mapping[str, Any] = field(default_factory=dict)
    source: str | None = None  #: the TOML text it was read from
    path: str | None = None
    kind: str = DEFAULT_KIND  #: the study kind (:mod:`coapcc.kinds`): what a run is
    seeds: str = "per-point"  #: the seed rule, ``"per-point"`` or ``"shared"``
    sections: Mapping[str, Any] = field(default_factory=dict)  #: the kind's own tables, if any
    #: The study's own figures, as ``"module:function"`` names: each function gets a dataset
    #: (:class:`coapcc.reports.Dataset`) and returns :class:`coapcc.reports.Figure` s, which
    #: the report shows after the claims (``figures = [...]`` in the file).
    figures: tuple[str, ...] = ()

    # -- construction -------------------------------------------------------------------

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        name: str | None = None,
        source: str | None = None,
        path: str | None = None,
    ) -> Experiment:
        """Build from the parsed TOML table. Validates every run's configuration."""
        from .kinds import get_kind

        data = dict(data)
        known = {
            "name",
            "kind",
            "title",
            "description",
            "seed",
            "seeds",
            "replications",
            "base",
            "grid",
            "block",
            "quick",
            "figures",
        }
        kind_name = data.get("kind", DEFAULT_KIND)
        if not isinstance(kind_name, str):
            raise ConfigError("kind", f"expected a kind's name, got {kind_name!r}")
        kind = get_kind(kind_name)
        for k in data:
            if k not in known and k not in kind.sections:
                raise ConfigError(k, "unknown experiment key", sorted(known | set(kind.sections)))
        exp_name = check_name(str(data.get("name") or name or "experiment"))
        sections = {k: data[k] for k in kind.sections if k in data}
        blocks_data = data.get("block")
        if kind.expand is not None and blocks_data is None and "grid" not in data:
            blocks_data = kind.expand(sections)
        if blocks_data is None:
            blocks_data = [{"name": "main", "grid": data.get("grid", {})}]
        elif "grid" in data:
            raise ConfigError("grid", "give either a top-level [grid] or [[block]] tables, not both")
        if not isinstance(blocks_data, list) or not all(isinstance(b, dict) for b in blocks_data):
            raise ConfigError("block", "expected [[block]] tables")
        blocks = []
        for i, b in enumerate(blocks_data):
            bkey = f"block[{i}]"
            bknown = {"name", "grid", "base", "replications", "description"}
            for k in b:
                if k not in bknown:
                    raise ConfigError(f"{bkey}.{k}", "unknown block key", sorted(bknown))
            if not isinstance(b.get("grid", {}), dict) or not isinstance(b.get("base", {}), dict):
                raise ConfigError(bkey, "'grid' and 'base' must be tables")
            grid = dict(b.get("grid", {}))
            for k, v in grid.items():
                if not isinstance(v, list) or not v:
                    raise ConfigError(f"{bkey}.grid.{k}", f"expected a non-empty list of values, got {v!r}")
                if k in _NOT_SWEEPABLE:
                    raise ConfigError(f"{bkey}.grid.{k}", _NOT_SWEEPABLE[k])
                _check_distinct(f"{bkey}.grid.{k}", v)
            for k in b.get("base", {}):
                if k in _NOT_SWEEPABLE:
                    raise ConfigError(f"{bkey}.base.{k}", _NOT_SWEEPABLE[k])
            reps = b.get("replications")
            if reps is not None and (not isinstance(reps, int) or isinstance(reps, bool) or reps < 1):
                raise ConfigError(f"{bkey}.replications", f"must be an integer >= 1, got {reps!r}")
            blocks.append(
                Block(
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
        seeds = data.get("seeds", kind.seeds)
        if seeds not in SEED_RULES:
            raise ConfigError("seeds", f"expected one of {', '.join(SEED_RULES)}, got {seeds!r}")
        if not isinstance(data.get("base", {}), dict):
            raise ConfigError("base", "expected a table")
        figures = data.get("figures", [])
        if not isinstance(figures, list) or not all(
            isinstance(f, str) and f.count(":") == 1 and all(f.split(":")) for f in figures
        ):
            raise ConfigError("figures", f'expected a list of "module:function" names, got {figures!r}')
        quick = data.get("quick", {})
        if not isinstance(quick, dict):
            raise ConfigError("quick", "expected a table")
        quick = dict(quick)
        quick_keys = ["replications", "base", "grid", *sorted(sections)]
        for k in quick:
            if k not in quick_keys:
                raise ConfigError(f"quick.{k}", "unknown key", quick_keys)
            if k in sections and not isinstance(quick[k], dict):
                raise ConfigError(f"quick.{k}", "expected a table of the section's keys")
        if "replications" in quick:
            qr = quick["replications"]
            if not isinstance(qr, int) or isinstance(qr, bool) or qr < 1:
                raise ConfigError("quick.replications", f"must be an integer >= 1, got {qr!r}")
        for k, v in quick.get("grid", {}).items():
            if not isinstance(v, list) or not v:
                raise ConfigError(f"quick.grid.{k}", f"expected a non-empty list of values, got {v!r}")
        for k in quick.get("base", {}):
            if k in _NOT_SWEEPABLE:
                raise ConfigError(f"quick.base.{k}", _NOT_SWEEPABLE[k])
        exp = cls(
            name=exp_name,
            blocks=tuple(blocks),
            base=dict(data.get("base", {})),
            seed=seed,
            replications=reps,
            title=str(data.get("title", "")),
            description=str(data.get("description", "")),
            quick=quick,
            source=source,
            path=path,
            kind=kind_name,
            seeds=seeds,
            sections=sections,
            figures=tuple(figures),
        )
        exp.check_size()
        exp.points()  # validate every configuration now, with the key at fault
        if quick:
            swept = sorted({k for b in exp.blocks for k in b.grid})
            for k in quick.get("grid", {}):
                if k not in swept:
                    # A typo here would silently run a different --quick experiment.
                    close = difflib.get_close_matches(k, swept, n=1)
                    hint = f" (did you mean '{close[0]}'?)" if close else ""
                    raise ConfigError(f"quick.grid.{k}", f"no block sweeps this key{hint}", swept)
            q = exp.quick_variant()
            if not q.blocks:
                raise ConfigError(
                    "quick.grid", "the [quick] variant keeps no block: every block lost a grid value"
                )
            q.check_size()
            q.points()
        return exp

    # -- derived ------------------------------------------------------------------------

    def size(self) -> int:
        """Runs of the experiment, counting every point and replication (before runs that
        several blocks share are merged; see :meth:`summary`), computed without planning."""
        return sum(b.size() * (b.replications or self.replications) for b in self.blocks)

    def check_size(self) -> None:
        """Refuse an experiment larger than :func:`max_runs` (before anything is planned)."""
        n, limit = self.size(), max_runs()
        if n > limit:
            dims = "; ".join(
                f"{b.name}: {' x '.join(f'{k}[{len(v)}]' for k, v in b.grid.items()) or '1 point'}"
                f" x {b.replications or self.replications}"
                for b in self.blocks
            )
            raise ConfigError(
                "grid",
                f"experiment {self.name!r} has {n:,} runs, more than the limit of {limit:,} ({dims}); "
                "split it into several experiments, or raise the limit with COAPCC_MAX_RUNS",
            )

    def quick_variant(self) -> Experiment:
        """The ``--quick`` version (see :func:`quick_variant`)."""
        return quick_variant(self)

    def points(self) -> list[tuple[Block, int, dict, SimConfig]]:
        """Every grid point: ``(block, index, assignment, configuration)`` (validated; the
        seed is the default until :meth:`runs` derives it)."""
        from .kinds import get_kind

        out = []
        resolve = get_kind(self.kind).resolve
        checked: dict[str, Any] = {}  # a point several blocks share is checked once
        for b in self.blocks:
            for pi, assignment in enumerate(b.points()):
                fields = {**self.base, **b.base, **assignment}
                try:
                    key = canonical_json(fields)
                    cfg = checked.get(key)
                    if cfg is None:
                        cfg = checked[key] = resolve(fields)
                except ConfigError as e:
                    where = f"block '{b.name}' point {assignment}"
                    raise ConfigError(e.key, f"{str(e).split(': ', 1)[1]} [in {where}]") from None
                except TypeError as e:  # a value of a type no field takes (a table for a number...)
                    where = f"block '{b.name}' point {assignment}"
                    raise ConfigError("grid", f"{e} [in {where}]") from None
                out.append((b, pi, dict(assignment), cfg))
        return out

    def runs(self) -> list[PlannedRun]:
        """Every run, block by block, point by point, replication by replication."""
        out = []
        for b, pi, assignment, cfg in self.points():
            reps = b.replications or self.replications
            point = canonical_json(_point_dict(cfg))
            phash = hashlib.sha256(point.encode()).hexdigest()[:16]
            for r in range(reps):
                seed = self.seed + r if self.seeds == "shared" else _seed_from_point(self.seed, point, r)
                seeded = cfg.with_seed(seed)
                out.append(PlannedRun(self.name, b.name, pi, r, assignment, seeded, phash))
        return out

    def summary(self, runs: list[PlannedRun] | None = None) -> str:
        """The plan in a few lines: distinct runs in total, and per block its product.

        ``runs`` are the distinct planned runs (what :func:`coapcc.sweeper.plan` keeps, one per
        configuration); by default every configuration that is equal (seed included) counts
        once, so the total is what a sweep runs. A block that repeats runs of an earlier block
        says how many."""
        if runs is None:
            seen, runs = set(), []
            for r in self.runs():
                key = canonical_json(r.config.to_dict())
                if key not in seen:
                    seen.add(key)
                    runs.append(r)
        per_block: dict[str, int] = {}
        for r in runs:
            per_block[r.block] = per_block.get(r.block, 0) + 1
        lines = [f"{self.name}: {len(runs)} runs"]
        for b in self.blocks:
            reps = b.replications or self.replications
            dims = " x ".join(f"{k}[{len(v)}]" for k, v in b.grid.items()) or "1 point"
            n = b.size() * reps
            line = f"  {b.name}: {dims} x {reps} replications = {n} runs"
            shared = n - per_block.get(b.name, 0)
            if shared:
                line += f" ({shared} already in an earlier block, run once)"
            lines.append(line)
        return "\n".join(lines)


def _check_distinct(key: str, values: list) -> None:
    seen: dict[str, Any] = {}
    for v in values:
        k = canonical_json(v)
        if k in seen:
            raise ConfigError(key, f"value {v!r} is listed twice (each grid value gives distinct runs)")
        seen[k] = v


def load_experiment(path: str | os.PathLike) -> Experiment:
    """Read an experiment file (TOML)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(str(p), "not a text file (an experiment file is TOML)") from None
    except IsADirectoryError:
        raise ConfigError(str(p), "is a folder, not an experiment file") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(str(p), f"invalid TOML: {e}") from None
    return Experiment.from_dict(data, name=p.stem, source=text, path=str(p))


#: The catalogue shipped with the package (``coapcc/experiments/*.toml``, package data).
PACKAGE_CATALOGUE = Path(__file__).resolve().parent / "experiments"


def catalogue_dirs() -> list[Path]:
    """Where catalogue entries are looked up, first match wins: ``$COAPCC_EXPERIMENTS``
    (``:``-separated folders), ``./experiments`` (your own entries), then the catalogue shipped
    inside the package (:data:`PACKAGE_CATALOGUE`), so an installed ``coapcc`` finds
    ``anrw18`` anywhere."""
    dirs = [Path(d) for d in os.environ.get("COAPCC_EXPERIMENTS", "").split(os.pathsep) if d]
    dirs.append(Path.cwd() / "experiments")
    dirs.append(PACKAGE_CATALOGUE)
    seen, out = set(), []
    for d in dirs:
        r = d.resolve()
        if r not in seen and r.is_dir():
            seen.add(r)
            out.append(r)
    return out


def catalogue() -> dict[str, Path]:
    """Catalogue entries: name -> file."""
    out: dict[str, Path] = {}
    for d in catalogue_dirs():
        for f in sorted(d.glob("*.toml")):
            out.setdefault(f.stem, f)
    return out


def find_experiment(name_or_path: str) -> Experiment:
    """Load a file path, or a catalogue entry by name (``anrw18``)."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists():
        if not p.exists():
            raise FileNotFoundError(f"no such experiment file: {name_or_path}")
        return load_experiment(p)
    entries = catalogue()
    if name_or_path not in entries:
        close = difflib.get_close_matches(name_or_path, list(entries), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ConfigError(
            "experiment", f"no experiment file or catalogue entry {name_or_path!r}{hint}", sorted(entries)
        )
    return load_experiment(entries[name_or_path])


def quick_variant(exp):
    """The ``--quick`` version of an experiment (a simulator or a mesh one): ``[quick]``
    replications, base overrides and grid trims. ``[quick.grid]`` keeps, in every block that
    sweeps a key, only the listed values; a block left with an empty grid dimension is dropped."""
    q = exp.quick
    keep = dict(q.get("grid", {}))
    source_blocks = exp.blocks
    sections = exp.sections
    if exp.sections and any(k in exp.sections for k in q):
        from .kinds import get_kind

        sections = _merged(exp.sections, {k: v for k, v in q.items() if k in exp.sections})
        source_blocks = tuple(
            Block(
                name=str(b["name"]),
                grid=dict(b.get("grid", {})),
                base=dict(b.get("base", {})),
                replications=b.get("replications"),
                description=str(b.get("description", "")),
            )
            for b in get_kind(exp.kind).expand(sections)
        )
    blocks = []
    for b in source_blocks:
        grid = {k: [v for v in vals if k not in keep or v in keep[k]] for k, vals in b.grid.items()}
        if all(grid.values()):
            reps = None if "replications" in q else b.replications
            blocks.append(
                Block(name=b.name, grid=grid, base=b.base, replications=reps, description=b.description)
            )
    return dataclasses.replace(
        exp,
        name=f"{exp.name}-quick",
        blocks=tuple(blocks),
        base={**exp.base, **q.get("base", {})},
        replications=int(q.get("replications", exp.replications)),
        quick={},
        sections=sections,
    )


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict:
    """``base`` with ``over`` merged in, tables key by key (dotted keys name nested tables)."""
    out = copy.deepcopy(dict(base))
    for k, v in over.items():
        head, _, tail = k.partition(".")
        if tail:
            v, k = {tail: v}, head
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _merged(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out
