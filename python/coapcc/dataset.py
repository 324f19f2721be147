"""Results datasets: runs journaled as they finish, written as Parquet parts in batches.

Layout of ``DIR`` (``results/NAME/`` by default)::

    DIR/experiment.toml            the experiment file the sweep ran
    DIR/experiment.json            its name, title, definition (seed, replications, base, blocks)
    DIR/runs/part-<id>.parquet     many runs: one row each (config columns, metrics, histogram)
    DIR/flows/part-<id>.parquet    their flows: one row per flow (config_hash, flow fields)
    DIR/runs/journal-<id>.bin      runs finished since the last part: one record each
                                   (``journal-<id>.jsonl``, JSON lines, from earlier versions)
    DIR/runs/<hash>.parquet        one run (datasets of older versions; consolidated by a sweep)
    DIR/quarantine/                damaged parts moved aside by a sweep
    DIR/.lock                      held (flock) by the sweep writing the dataset
    DIR/traces/<hash>.jsonl        optional per-exchange traces (written by ``coapcc report``)

``experiment.json`` holds ``dataset_format`` (:data:`DATASET_FORMAT`), the version of this
layout. A dataset of a newer format than this coapcc knows is refused with
:class:`DatasetFormatError` (by :func:`load_results` and before a sweep touches it), rather
than read wrongly or rewritten; datasets without the key (written before it existed) are read
as they are.

``<hash>`` identifies what a run ran, seed included (its kind's ``template``:
:mod:`coapcc.kinds`).

**Crash safety.** A finished run's record (:func:`coapcc.records.encode_columns`) is appended at once to the
sweep's journal, so an interrupted sweep (Ctrl-C, SIGTERM, SIGKILL, a lost worker, a full
disk) loses no finished run, and a record cut off by a crash does not count. A run is done
exactly when its record is in a journal or its row in a runs part. When the held runs reach a
part's size, and at the end, they are written as one part (flows part first, runs part last,
same ``<id>``), each under a temporary name, fsynced, renamed into place, its folder fsynced;
then the journal is deleted. A crash between the two steps only leaves duplicates, which
loading ignores (a run is read from one place only); a flows part without its runs part is
removed by the next sweep, and a part that cannot be read is moved to ``quarantine/`` by the
next sweep (:func:`coapcc.storage.quarantine_damaged`), which runs its runs again.

Every row of both tables, as loaded (:func:`load_results`), carries the full configuration:
its kind's configuration columns (a simulator run's: one column per :class:`~coapcc.SimConfig`
field, nested sections as ``link_...``, ``coap_...``, ``server_...``; ``algorithm`` is the
label, ``algorithm_spec`` the specs as run), ``config_hash``, ``point_hash`` (the configuration without its seed: the
same for every replication of a point) and ``seed``; the runs table also has
``config_json``, the simulator's fully resolved configuration. On disk a flows part stores
the configuration once per run: its rows hold ``config_hash`` and the per-flow fields, and
:func:`join_flows` adds the runs part's configuration columns when loading (flows parts of
earlier versions, which hold them on every row, are read as they are).

This module reads datasets (:func:`load_results`, with only the columns asked for when a
caller names them); :mod:`coapcc.storage` writes them, :mod:`coapcc.records` and
:mod:`coapcc.tables` hold a run's record and a part's tables.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .records import decode_record, encode_columns, flow_count
from .storage import (
    DATASET_FORMAT,
    DatasetBusy,
    DatasetFormatError,
    DatasetLock,
    DatasetWriter,
    _journals,
    _run_files,
    check_format,
    compact,
    done_hashes,
    quarantine_damaged,
    read_journal,
)
from .tables import concat as _concat
from .tables import join_flows, records_to_tables

__all__ = [
    "Results",
    "load_results",
    "done_hashes",
    "encode_columns",
    "decode_record",
    "flow_count",
    "join_flows",
    "records_to_tables",
    "DatasetWriter",
    "DatasetLock",
    "DatasetBusy",
    "DatasetFormatError",
    "DATASET_FORMAT",
    "check_format",
    "compact",
    "quarantine_damaged",
    "CASE_COLUMNS",
]

#: Configuration columns that identify a case of a simulator study (the histogram keeps them).
CASE_COLUMNS = (
    "algorithm",
    "clients",
    "buffer_bytes",
    "workload",
    "errors",
    "exchanges",
    "preset",
    "transport",
)


@dataclass
class Results:
    """A results dataset, loaded: ``runs`` (one row per run) and ``flows`` (one row per flow;
    in a mesh study's dataset one row per client, also as ``clients``), pandas DataFrames
    sorted by block, point, replication (and client or node).

    ``histogram`` is the long form of the runs' ``retransmissions_per_exchange`` column: one row
    per run and number of retransmissions k (``retransmissions``), with ``count`` the number of
    completed exchanges that needed exactly k retransmissions.
    """

    path: Path
    runs: Any
    flows: Any
    experiment: dict

    @property
    def histogram(self):
        import pandas as pd

        keep = [
            c
            for c in (
                "config_hash",
                "experiment",
                "block",
                "point",
                "replication",
                "seed",
                "groups",
                *CASE_COLUMNS,
            )
            if c in self.runs
        ]
        cols = [*keep, "retransmissions", "count"]
        if "retransmissions_per_exchange" not in self.runs:  # a mesh study's dataset
            return pd.DataFrame(columns=cols)
        import numpy as np

        hists = [list(h) if h is not None else [] for h in self.runs["retransmissions_per_exchange"]]
        n = np.fromiter((len(h) for h in hists), dtype=np.int64, count=len(hists))
        at = np.repeat(np.arange(len(hists)), n)
        out = self.runs[keep].iloc[at].reset_index(drop=True)
        out["retransmissions"] = np.arange(len(at)) - np.repeat(np.cumsum(n) - n, n)
        out["count"] = np.fromiter((int(c) for h in hists for c in h), dtype=np.int64, count=len(at))
        return out[cols]

    @property
    def clients(self):
        """The per-client table of a mesh study (``flows``: its rows are the clients)."""
        return self.flows

    @property
    def kind(self) -> str:
        """The experiment's kind (:mod:`coapcc.kinds`; ``"sim"`` when the dataset does not say)."""
        return self.experiment.get("kind", "sim")

    def __repr__(self) -> str:
        return f"<Results {self.path}: {len(self.runs)} runs, {len(self.flows)} flows>"


def _columns_of(path: Path, want: set[str] | None) -> list[str] | None:
    """The columns of the Parquet file ``path`` that ``want`` names (None: every column)."""
    if want is None:
        return None
    import pyarrow.parquet as pq

    return [c for c in pq.read_schema(path).names if c in want]


def _flows_part(out: Path, name: str, runs_t, flow_cols: set[str] | None):
    """A flows part with its runs' configuration columns joined (:func:`join_flows`), only the
    columns in ``flow_cols`` (and ``config_hash``) read when it is given."""
    import pyarrow.parquet as pq

    path = out / "flows" / name
    cols = _columns_of(path, None if flow_cols is None else {"config_hash", *flow_cols})
    ft = pq.read_table(path, columns=cols)
    if flow_cols is not None:  # join only the configuration columns asked for
        runs_t = runs_t.select([c for c in runs_t.column_names if c in flow_cols or c == "config_hash"])
    joined = join_flows(runs_t, ft)
    if flow_cols is not None:
        joined = joined.select([c for c in joined.column_names if c in flow_cols or c == "config_hash"])
    return joined


def _read_dataset(out: Path, run_cols: set[str] | None = None, flow_cols: set[str] | None = None):
    """(runs table, flows table) with every run exactly once. Damaged parts are skipped with a
    warning (the next ``coapcc sweep`` quarantines them and runs their runs again); runs still
    in a journal (an interrupted sweep) are included. ``run_cols`` / ``flow_cols``: read only
    these columns (``config_hash`` always; the flows' configuration columns come from the
    runs, so they are read from the runs parts as needed)."""
    import warnings

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    # The runs' columns that the flows need (their configuration columns).
    need_runs = None if run_cols is None else {"config_hash", *run_cols}
    if need_runs is not None and flow_cols is not None:
        need_runs |= flow_cols
    parts, singles = _run_files(out)
    run_tables, flow_tables, seen = [], [], set()
    for p in parts:
        try:
            rt = pq.read_table(p, columns=_columns_of(p, need_runs))
            ft = _flows_part(out, p.name, rt, flow_cols) if flow_cols != set() else None
        except (OSError, ValueError) as e:
            warnings.warn(
                f"{p}: damaged part skipped ({e}); run 'coapcc sweep' on this dataset to quarantine "
                "it and run its runs again",
                RuntimeWarning,
                stacklevel=3,
            )
            continue
        hashes = rt.column("config_hash").to_pylist()
        fresh = [h not in seen for h in hashes]
        if not all(fresh):
            keep = pa.array([h for h, f in zip(hashes, fresh) if f], pa.string())
            rt = rt.filter(pc.is_in(rt.column("config_hash"), value_set=keep))
            if ft is not None:
                ft = ft.filter(pc.is_in(ft.column("config_hash"), value_set=keep))
        seen.update(hashes)
        run_tables.append(rt)
        if ft is not None:
            flow_tables.append(ft)
    for p in singles:
        if p.stem in seen or not (out / "flows" / p.name).exists():
            continue
        seen.add(p.stem)
        rt = pq.read_table(p, columns=_columns_of(p, need_runs))
        run_tables.append(rt)
        if flow_cols != set():
            flow_tables.append(_flows_part(out, p.name, rt, flow_cols))
    pending = []
    for j in _journals(out):
        for r in read_journal(j):
            if r["h"] not in seen:
                seen.add(r["h"])
                pending.append(r)
    if pending:
        rt, chunks = records_to_tables(pending)
        run_tables.append(
            rt if need_runs is None else rt.select([c for c in rt.column_names if c in need_runs])
        )
        if flow_cols != set():
            for c in chunks:
                ft = join_flows(rt, c)
                if flow_cols is not None:
                    ft = ft.select([n for n in ft.column_names if n in flow_cols or n == "config_hash"])
                flow_tables.append(ft)
    if not run_tables:
        return None, None
    runs = _concat(run_tables)
    if run_cols is not None:
        runs = runs.select([c for c in runs.column_names if c in run_cols or c == "config_hash"])
    return runs, (_concat(flow_tables) if flow_tables else None)


def load_results(
    path: str | os.PathLike,
    *,
    columns: Iterable[str] | None = None,
    flow_columns: Iterable[str] | None = None,
    sort: bool = True,
) -> Results:
    """Load a results dataset: concatenate its files, sorted by block, point, replication (and
    client), so the tables do not depend on the order the runs finished in.

    ``columns`` / ``flow_columns``: read only these columns of the runs / flows tables (and
    ``config_hash``, and the ordering columns); a flows column that is a configuration column
    comes from the runs parts. ``flow_columns=()`` reads no flows at all. Reading a few
    columns of a large dataset costs a fraction of reading it whole. ``sort=False``: the rows
    in the order they are stored, and no ordering columns added (for aggregations, which do
    not depend on the order).

    >>> res = coapcc.load_results("results/anrw18")        # doctest: +SKIP
    >>> res.flows.groupby(["algorithm", "buffer_bytes"])["fct_s"].median()  # doctest: +SKIP
    """
    import pandas as pd

    path = Path(path)
    if not (path / "runs").is_dir():
        raise FileNotFoundError(f"{path}: not a results dataset (no runs/ folder)")
    check_format(path)
    order_cols = {"block_index", "block", "point", "replication", "client", "node"} if sort else set()
    run_cols = None if columns is None else {*columns, *order_cols}
    flow_cols = None if flow_columns is None else set(flow_columns)
    if flow_cols:
        flow_cols |= order_cols
    runs_t, flows_t = _read_dataset(path, run_cols, flow_cols)
    # the flows (most of a dataset): each Arrow column freed once converted (half the peak)
    runs = runs_t.to_pandas() if runs_t is not None else pd.DataFrame()
    flows = (
        flows_t.to_pandas(split_blocks=True, self_destruct=True) if flows_t is not None else pd.DataFrame()
    )
    del runs_t, flows_t
    import pyarrow as pa

    pa.default_memory_pool().release_unused()  # the Arrow buffers just freed, back to the system
    order = [c for c in ("block_index", "block", "point", "replication", "config_hash") if c in runs and sort]
    if order:
        runs = runs.sort_values(order, kind="stable").reset_index(drop=True)
    forder = [c for c in (*order, "client", "node") if c in flows and sort]
    if forder:
        flows = flows.sort_values(forder, kind="stable").reset_index(drop=True)
    meta = {}
    if (path / "experiment.json").exists():
        meta = json.loads((path / "experiment.json").read_text())
    return Results(path=path, runs=runs, flows=flows, experiment=meta)
