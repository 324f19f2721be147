"""Study kinds: what the runs of an experiment file are, and how they are run and reported.

An experiment file names its kind (``kind = "sim"``, the default; ``"mesh"``;
``"makarem-studies"``; ``"sensitivity"``). A kind is registered here once, with everything
that is particular to it:

* **what it runs**: ``resolve`` turns a grid point's fields into a validated run
  configuration (raising :class:`~coapcc.ConfigError` naming the key), ``template`` gives
  that configuration's input to the runner and its identity with the seed left open
  (:class:`PointTemplate`), ``execute`` runs one configuration on a worker and returns its
  record (:func:`coapcc.records.encode_columns`);
* **its columns**: ``columns`` gives a run's configuration columns (every row of its
  dataset carries them), ``cost`` a relative cost so that the longest runs start first;
* **its report**: ``report`` (``"module:function"``) turns one dataset, or two to compare,
  into a :class:`coapcc.reports.Report`: its figures (drawing functions of aggregated
  tables, :mod:`coapcc.figures`) and tables, which the one report builder
  (:mod:`coapcc.reporting`) draws, writes and renders through the one template;
* optionally, **its own file sections** (``sections`` and ``expand``): a kind whose file is
  not written as ``[[block]]`` grids (``makarem-studies``) turns its sections into blocks,
  and everything after that is the same as for every other kind.

The sweeper (:mod:`coapcc.sweeper`), the dataset (:mod:`coapcc.dataset`) and the report
builder know no kind by name: they call the registry. This is the split of ns-3's SEM
(signetlabdei/sem: ``sem/manager.py`` holds a campaign, a script and its parameter space;
``sem/runner.py`` runs any script; ``sem/database.py`` stores any result), with the script
replaced by a registered kind. A new kind is a module that calls :func:`register` (or an
entry of :data:`BUILTIN`); docs/architecture.md says how to write one.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "StudyKind",
    "PointTemplate",
    "register",
    "get_kind",
    "kind_names",
    "SEED_PLACEHOLDER",
    "SEED_TEXT",
]

#: Stands for the seed in a point's texts (:class:`PointTemplate`); JSON spells it
#: ``"\u0000seed\u0000"``, which no configuration value can produce.
SEED_PLACEHOLDER = "\0seed\0"
SEED_TEXT = '"\\u0000seed\\u0000"'


@dataclass(frozen=True)
class PointTemplate:
    """A grid point's runner input and identity as text, the seed a placeholder
    (:data:`SEED_TEXT`), so that every replication of the point costs one string replace."""

    #: What the runner reads (``execute``'s ``config_json``), with the seed open.
    input: str
    #: What identifies a run (its hash is the run's ``config_hash``), with the seed open.
    identity: str

    def input_json(self, seed: int) -> str:
        return self.input.replace(SEED_TEXT, str(int(seed)), 1)

    def config_hash(self, seed: int) -> str:
        text = self.identity.replace(SEED_TEXT, str(int(seed)), 1)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class StudyKind:
    """A registered kind of study (see the module's documentation)."""

    name: str
    title: str
    #: A grid point's fields -> a validated run configuration (``seed``, ``with_seed``,
    #: ``to_dict``); raises ConfigError naming the key.
    resolve: Callable[[Mapping[str, Any]], Any]
    #: A run configuration -> its :class:`PointTemplate`.
    template: Callable[[Any], PointTemplate]
    #: ``"module:function"`` of the worker's entry point:
    #: ``f(runner, config_json, config_hash, common_json) -> (record, rows)``.
    execute: str
    #: A run configuration -> its configuration columns (``seed`` is set per run).
    columns: Callable[[Any], dict]
    #: ``"module:function"`` of the report: ``f(ctx: coapcc.reports.Context) -> coapcc.reports.Report``.
    report: str
    #: A run configuration -> its relative cost (the longest runs start first).
    cost: Callable[[Any], float] = lambda cfg: 1.0
    #: Whether a run that several blocks have lists them all in a ``blocks`` column.
    lists_blocks: bool = False
    #: The column that names a series (``coapcc report A B`` tags it with the dataset's name).
    series: str = "algorithm"
    #: Top-level tables of the file that the kind owns (files without ``[[block]]``).
    sections: tuple[str, ...] = ()
    #: ``expand(sections) -> list of blocks`` (``{"name", "base", "grid", "replications",
    #: "description"}``) for a kind with ``sections``; raises ConfigError naming the key.
    expand: Callable[[Mapping[str, Any]], list] | None = None
    #: The seed rule when the file does not say (``"per-point"`` or ``"shared"``).
    seeds: str = "per-point"

    def call(self, what: str):
        """The function named by the ``"module:function"`` field ``what``."""
        mod, _, fn = getattr(self, what).partition(":")
        return getattr(importlib.import_module(mod), fn)


#: The kinds that ship with coapcc: name -> the module that registers it (imported on first use).
BUILTIN: dict[str, str] = {
    "sim": "coapcc.kinds.sim",
    "mesh": "coapcc.kinds.mesh",
    "makarem-studies": "coapcc.kinds.makarem",
    "sensitivity": "coapcc.kinds.sensitivity",
}

_REGISTRY: dict[str, StudyKind] = {}


def register(kind: StudyKind) -> StudyKind:
    """Register ``kind`` (replacing a kind of the same name) and return it."""
    _REGISTRY[kind.name] = kind
    return kind


def kind_names() -> list[str]:
    """Every kind an experiment file may name."""
    return sorted({*BUILTIN, *_REGISTRY})


def get_kind(name: str) -> StudyKind:
    """The registered kind ``name``; :class:`~coapcc.ConfigError` (key ``kind``) if none."""
    kind = _REGISTRY.get(name)
    if kind is None and name in BUILTIN:
        importlib.import_module(BUILTIN[name])
        kind = _REGISTRY.get(name)
    if kind is None:
        from ..config import ConfigError

        raise ConfigError("kind", f"{name!r} is not a kind of study", kind_names())
    return kind
