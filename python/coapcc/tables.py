"""Record batches as Arrow tables: a part's runs table and its flows table.

:func:`records_to_tables` turns a batch of run records (:mod:`coapcc.records`) into the runs
table (one row per run: configuration columns, then metrics) and the flows table (one row per
detail row: the run's key, then the row's fields); :func:`join_flows` puts the runs'
configuration columns back on every flow row when a dataset is loaded.
"""

from __future__ import annotations

import base64
import json

from .records import PACKED, unpack

__all__ = ["records_to_tables", "join_flows", "concat", "RUN_COLUMNS_KEY"]

#: Per-flow counts of a TCP run (``transport = "tcp"``), always 64-bit integers.
TCP_RUN_FIELDS = (
    "segments_sent",
    "retransmitted_segments",
    "rto_expiries",
    "fast_retransmits",
    "bytes_delivered",
)


def _arrow_type(name: str):
    import pyarrow as pa

    if (
        name
        in (
            "fct_s",
            "fct_median",
            "fct_p10",
            "fct_p25",
            "fct_p75",
            "fct_p90",
            "useful_fraction",
            "sim_time_s",
            "wall_s",
        )
        or name.endswith("_fraction")
        or name.endswith("_s")
    ):
        return pa.float64()
    if name == "retransmissions_per_exchange":
        return pa.list_(pa.int64())
    if name in ("truncated",):
        return pa.bool_()
    if name in TCP_RUN_FIELDS:
        return pa.int64()
    if name in ("cc", "coapcc_version"):
        return pa.string()
    return None


def _column(name: str, values: list):
    import pyarrow as pa

    a = pa.array(values)
    if pa.types.is_null(a.type):
        want = _arrow_type(name)
        if want is not None:
            a = pa.nulls(len(values), want)
    return a


def _transpose(rows: list[dict], keys: list[str]) -> dict[str, list]:
    """Columns ``keys`` of ``rows`` (missing values None); in C when every row has exactly
    these keys in this order (records of one sweep do)."""
    kt = tuple(keys)
    if all(len(r) == len(kt) for r in rows) and all(tuple(r) == kt for r in rows):
        cols = list(zip(*[tuple(r.values()) for r in rows])) if rows else [() for _ in keys]
        return {k: list(c) for k, c in zip(keys, cols)}
    return {k: [r.get(k) for r in rows] for k in keys}


def _union_keys(dicts) -> list[str]:
    keys: dict[str, None] = {}
    seen: set = set()
    for d in dicts:
        shape = tuple(d)
        if shape in seen:  # records of one sweep share a few shapes
            continue
        seen.add(shape)
        for k in shape:
            keys.setdefault(k, None)
    return list(keys)


#: Key of a flows part's Parquet metadata that marks the layout "one row per flow, the
#: run's configuration in the runs part": a JSON list of the runs part's columns that
#: :func:`join_flows` adds to every flow row. Flows parts without it (datasets written before
#: it, and per-run files) hold those columns themselves.
RUN_COLUMNS_KEY = b"coapcc.run_columns"


#: Configuration columns that differ between the runs of one grid point (``point_hash``).
_PER_RUN = frozenset(
    (
        "experiment",
        "block",
        "block_index",
        "point",
        "replication",
        "config_hash",
        "point_hash",
        "seed",
        "trace",
        # Mesh runs: the blocks that have a run differ between replications of one point when
        # the blocks have different replication counts.
        "blocks",
    )
)


def _common_table(commons: list[dict]):
    """The configuration columns of a batch of records. Columns that are a function of the
    grid point are built once per point and repeated (replications share them)."""
    import pyarrow as pa

    ckeys = _union_keys(commons)
    first: dict = {}
    index = []
    for i, c in enumerate(commons):
        ph = c.get("point_hash")  # same point and same columns (records of one coapcc version)
        index.append(first.setdefault((ph, tuple(c)), i) if ph else i)
    reps = [commons[i] for i in dict.fromkeys(index)]
    if len(reps) == len(commons):
        return pa.table({k: _column(k, v) for k, v in _transpose(commons, ckeys).items()})
    pos = {i: j for j, i in enumerate(dict.fromkeys(index))}
    take = pa.array([pos[i] for i in index], pa.int32())
    per_run = [k for k in ckeys if k in _PER_RUN]
    per_point = [k for k in ckeys if k not in _PER_RUN]
    run_cols = _transpose(commons, per_run)
    point_cols = _transpose(reps, per_point)
    return pa.table(
        {k: _column(k, run_cols[k]) if k in run_cols else _column(k, point_cols[k]).take(take) for k in ckeys}
    )


def _flow_array(name: str, parts: list, counts: list):
    """One flows column of a batch of records (each part a list, or a packed column
    ``(type, bytes)``, or ``{"t": type, "b": base64}`` from a journal of an earlier version):
    int64 for integers and float64 (null where the record has null or NaN) for floats, as the
    same values given as lists make."""
    import numpy as np
    import pyarrow as pa

    parts = [(p["t"], base64.b64decode(p["b"])) if isinstance(p, dict) else p for p in parts]
    if parts and all(isinstance(p, tuple) for p in parts):
        kinds = {t for t, _ in parts}
        a = np.concatenate([np.frombuffer(b, PACKED[t][1]) for t, b in parts])
        if kinds == {"f8"}:
            return pa.array(a.astype(np.float64, copy=False), type=pa.float64(), from_pandas=True)
        if "f8" not in kinds:
            return pa.array(a.astype(np.int64), type=pa.int64())
    vals: list = []
    for p, n in zip(parts, counts):
        if p is None:
            vals.extend([None] * n)
        elif isinstance(p, tuple):
            vals.extend(x if x == x else None for x in unpack(p[1], p[0]))
        else:
            vals.extend(p)
    return _column(name, vals)


def _flows_in(record: dict) -> int:
    """Number of flows of a record."""
    for col in record["flows"].values():
        if isinstance(col, dict):  # base64 of the packed values: 4 characters per 3 bytes
            b = col["b"]
            return (len(b) * 3 // 4 - (len(b) - len(b.rstrip("=")))) // int(col["t"][1:])
        if isinstance(col, tuple):
            return len(col[1]) // int(col[0][1:])
        return len(col)
    return 0


def records_to_tables(records: list[dict], chunk_rows: int = 32768):
    """``(runs_table, flows_chunks)`` of a batch of records: the runs table (one row per run:
    configuration columns, then metrics) and the flows table as an iterator of tables of at
    most ``chunk_rows`` rows with one schema: ``config_hash`` (the run's key), then the
    per-flow fields; its metadata (:data:`RUN_COLUMNS_KEY`) names the runs table's
    configuration columns that :func:`join_flows` puts back on every flow row."""
    import numpy as np
    import pyarrow as pa

    common_t = _common_table([r["common"] for r in records])
    runs = [r["run"] for r in records]
    rkeys = [k for k in _union_keys(runs) if k not in common_t.column_names]
    runs_t = common_t
    for k, v in _transpose(runs, rkeys).items():
        runs_t = runs_t.append_column(k, _column(k, v))

    counts = [_flows_in(r) for r in records]
    fkeys = [k for k in _union_keys(r["flows"] for r in records) if k != "config_hash"]
    keys: list = []
    for r, n in zip(records, counts):
        keys.extend([r["h"]] * n)
    flow_arrays = [pa.array(keys, pa.string())]
    for k in fkeys:
        flow_arrays.append(_flow_array(k, [r["flows"].get(k) for r in records], counts))
    schema = pa.schema(
        [pa.field(n, a.type) for n, a in zip(["config_hash", *fkeys], flow_arrays)],
        metadata={RUN_COLUMNS_KEY: json.dumps(common_t.column_names).encode()},
    )
    bounds = np.concatenate([[0], np.cumsum(np.asarray(counts, dtype=np.int64))])

    def chunks():
        lo_run = 0
        lo = 0
        while True:
            # Whole runs per chunk (at least one), up to chunk_rows rows.
            hi_run = int(np.searchsorted(bounds, lo + chunk_rows, side="right")) - 1
            hi_run = min(max(hi_run, lo_run + 1), len(records))
            hi = int(bounds[hi_run])
            yield pa.Table.from_arrays([a.slice(lo, hi - lo) for a in flow_arrays], schema=schema)
            lo_run, lo = hi_run, hi
            if lo_run >= len(records):
                return

    return runs_t, chunks()


def join_flows(runs_t, flows_t):
    """The flows table as users see it: every flow row with its run's configuration columns
    first (those of the runs table named in the flows table's :data:`RUN_COLUMNS_KEY`
    metadata, in order), then the per-flow fields (named ``flow_<field>`` if a configuration
    column has the name). A flows table without that metadata (older datasets) already has
    this form and is returned as it is. Flow rows of runs missing from ``runs_t`` are dropped."""
    import pyarrow as pa
    import pyarrow.compute as pc

    meta = flows_t.schema.metadata or {}
    if RUN_COLUMNS_KEY not in meta:
        return flows_t
    common = [c for c in json.loads(meta[RUN_COLUMNS_KEY]) if c in runs_t.column_names]
    idx = pc.index_in(flows_t.column("config_hash"), value_set=runs_t.column("config_hash"))
    if idx.null_count:
        keep = pc.is_valid(idx)
        flows_t, idx = flows_t.filter(keep), idx.filter(keep)
    head = runs_t.select(common).take(idx)
    fkeys = [c for c in flows_t.column_names if c != "config_hash"]
    names = [*common, *(f"flow_{k}" if k in common else k for k in fkeys)]
    return pa.Table.from_arrays([*head.columns, *(flows_t.column(k) for k in fkeys)], names=names)


def concat(tables):
    import pyarrow as pa

    return pa.concat_tables(tables, promote_options="permissive")
