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

``<hash>`` is :func:`coapcc.config.config_hash` of the run's configuration (seed included).

**Crash safety.** A finished run's record (:func:`encode_columns`) is appended at once to the
sweep's journal, so an interrupted sweep (Ctrl-C, SIGTERM, SIGKILL, a lost worker, a full
disk) loses no finished run, and a record cut off by a crash does not count. A run is done
exactly when its record is in a journal or its row in a runs part. When the held runs reach a
part's size, and at the end, they are written as one part (flows part first, runs part last,
same ``<id>``), each under a temporary name, fsynced, renamed into place, its folder fsynced;
then the journal is deleted. A crash between the two steps only leaves duplicates, which
loading ignores (a run is read from one place only); a flows part without its runs part is
removed by the next sweep, and a part that cannot be read is moved to ``quarantine/`` by the
next sweep (:func:`quarantine_damaged`), which runs its runs again.

Every row of both tables, as loaded (:func:`load_results`), carries the full configuration: one column per
:class:`~coapcc.SimConfig` field (:meth:`~coapcc.SimConfig.flat`: nested sections as
``link_...``, ``coap_...``, ``server_...``; ``algorithm`` is the label, ``algorithm_spec``
the specs as run), ``config_hash``, ``point_hash`` (the configuration without its seed: the
same for every replication of a point) and ``seed``; the runs table also has
``config_json``, the simulator's fully resolved configuration. On disk a flows part stores
the configuration once per run: its rows hold ``config_hash`` and the per-flow fields, and
:func:`join_flows` adds the runs part's configuration columns when loading (flows parts of
earlier versions, which hold them on every row, are read as they are).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import SimConfig, canonical_json, to_native
from .result import FLOW_COLUMNS

__all__ = [
    "Results",
    "load_results",
    "done_hashes",
    "encode_run",
    "encode_columns",
    "decode_record",
    "run_summary",
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

#: Configuration columns that identify a case (what the report groups by).
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

#: Per-flow columns of the simulator's report.
FLOW_FIELDS = (*FLOW_COLUMNS, "completed_exchanges")

#: Per-flow counts of a TCP run (``transport = "tcp"``) that a run's row sums (empty for UDP).
TCP_RUN_FIELDS = (
    "segments_sent",
    "retransmitted_segments",
    "rto_expiries",
    "fast_retransmits",
    "bytes_delivered",
)

_PARQUET_OPTIONS = {"compression": "snappy", "write_statistics": False}


def point_hash(cfg: SimConfig) -> str:
    """Hash of a configuration without its seed (and trace): one per grid point."""
    d = cfg.to_dict()
    d.pop("seed", None)
    d.pop("trace", None)
    return hashlib.sha256(canonical_json(d).encode()).hexdigest()[:16]


def config_columns(cfg: SimConfig) -> dict[str, Any]:
    """Flat configuration columns of a run (see :meth:`SimConfig.flat`), with ``algorithm``
    the label and ``algorithm_spec`` the specs as run (``"10x default:preset=..."`` per group
    for mixed runs). A mesh run's (:class:`coapcc.meshsim.MeshConfig`) are its
    :meth:`~coapcc.meshsim.MeshConfig.columns`."""
    if getattr(cfg, "kind", "sim") == "mesh":
        return cfg.columns()
    cols = cfg.flat()
    cols["algorithm"] = cfg.label
    cols["algorithm_spec"] = " + ".join(f"{n}x {s}" if cfg.groups else s for s, n in cfg.algorithm_specs())
    return cols


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


def _table(cols: dict[str, list]):
    """A pyarrow Table from column lists; all-null columns get their documented type."""
    import pyarrow as pa

    t = pa.table(cols)
    for i, f in enumerate(t.schema):
        if pa.types.is_null(f.type):
            want = _arrow_type(f.name)
            if want is not None:
                t = t.set_column(i, f.name, pa.nulls(t.num_rows, want))
    return t


# -- one run, as a record ------------------------------------------------------------------


def encode_run(ident: dict[str, Any], cfg: SimConfig, report: dict) -> bytes:
    """One finished run as a *record* (see :func:`encode_columns`) from the simulator's JSON
    report (parsed)."""
    from .runner import columns_from_report

    common = {**ident, **_config_columns_cached(cfg, ident.get("point_hash"))}
    cols = columns_from_report(report)
    if cols["config_json"] is None:
        cols["config_json"] = canonical_json(to_native(cfg))
    return encode_columns(ident["config_hash"], json.dumps(common, separators=(",", ":")), cols)


_DIRECTIONS = ("downlink", "uplink")
_RECORD_JSON = json.JSONEncoder(separators=(",", ":"), allow_nan=True)


def encode_columns(
    config_hash: str, common_json: str, cols: dict, parsed: bool = False, run: dict | None = None
):
    """One finished run as a *record* (bytes, :func:`decode_record` reads it back): its
    configuration columns (``common``, given as JSON text), its run-level metrics (``run``,
    the run's summary: :func:`run_summary`) and its flows as columns, from the columnar
    report ``cols`` (:func:`coapcc.runner.native_columns`). Records are cheap to make on a
    worker and to send (packed flow columns and the resolved configuration are stored as
    they are, after a small JSON head); the sweeping process appends them to a journal as
    they come and turns a batch of them into one part (:func:`records_to_tables`), so Arrow
    and Parquet costs are paid once per part, not per run.

    Layout: ``CCR2``, the length of the rest (u32, little-endian), the length of the head
    (u32), the head (JSON: ``h``, ``run`` without ``config_json``, ``co`` and ``cj`` the
    lengths of ``common`` and of the configuration text, ``flows`` each column a list or ``{"t": type, "n":
    length}`` of a packed column, or ``{"v": values, "n": length}`` of a column of strings:
    its distinct values, then their indices as u4), then ``common`` (JSON), the configuration
    text (UTF-8) and the columns' bytes, in the head's order.

    With ``parsed``, returns ``(record, parts)``: ``parts`` is what :func:`decode_record`
    gives, without its ``common``. ``run``: the run's row of metrics when it is not the
    simulator's (:func:`run_summary`), e.g. a mesh run's (its ``config_json`` included; its
    clients are then the record's rows).
    """
    flow_cols = cols.get("flows") or {k: [] for k in FLOW_FIELDS}
    keys = [k for k in FLOW_FIELDS if k in flow_cols] + [k for k in flow_cols if k not in FLOW_FIELDS]
    if keys != list(flow_cols):
        flow_cols = {k: flow_cols[k] for k in keys}
    types = cols.get("flow_types") or {}
    run = run_summary(cols, flow_cols, types) if run is None else dict(run)
    head_flows: dict[str, Any] = {}
    segments = []
    for k, v in flow_cols.items():
        t = types.get(k)
        if t is not None:
            head_flows[k] = {"t": t, "n": len(v)}
            segments.append(v)
        elif v and all(type(x) is str for x in dict.fromkeys(v)):
            # Labels: each distinct value once, then their indices.
            values = list(dict.fromkeys(v))
            pos = {x: i for i, x in enumerate(values)}
            idx = _array("I", [pos[x] for x in v]).tobytes()
            head_flows[k] = {"v": values, "n": len(idx)}
            segments.append(idx)
        else:
            head_flows[k] = v
    cj = (run.pop("config_json") or "").encode()
    co = common_json.encode()
    head = (
        f'{{"h":{json.dumps(config_hash)},"run":{_RECORD_JSON.encode(run)},"co":{len(co)},"cj":{len(cj)},'
        f'"flows":{_RECORD_JSON.encode(head_flows)}}}'
    ).encode()
    body = b"".join([co, cj, *segments])
    size = (4 + len(head) + len(body)).to_bytes(4, "little")
    record = b"".join([_MAGIC, size, len(head).to_bytes(4, "little"), head, body])
    if not parsed:
        return record
    rec = decode_record(record)
    del rec["common"]
    return record, rec


def _array(code: str, data) -> Any:
    """An :mod:`array` of type ``code`` (``I``: u4) from a list, or from little-endian bytes."""
    import array
    import sys

    if not isinstance(data, (bytes, bytearray, memoryview)):
        return array.array(code, data)
    a = array.array(code)
    a.frombytes(data)
    if sys.byteorder != "little":  # pragma: no cover
        a.byteswap()
    return a


#: First bytes of a record (:func:`encode_columns`).
_MAGIC = b"CCR2"


def decode_record(record, common: dict | None = None) -> dict:
    """A record (:func:`encode_columns`) as Python objects: ``h``, ``common``, ``run`` (its
    ``config_json`` first) and ``flows`` (packed columns as ``(type, bytes)``). ``common``,
    if given, is the record's configuration columns as the caller already has them (they
    are then not read). Raises ValueError for bytes that are not one whole record."""
    mv = memoryview(record)
    if bytes(mv[:4]) != _MAGIC or len(mv) < 12:
        raise ValueError("not a coapcc run record")
    if int.from_bytes(mv[4:8], "little") != len(mv) - 8:
        raise ValueError("run record cut off")
    hl = int.from_bytes(mv[8:12], "little")
    head = json.loads(bytes(mv[12 : 12 + hl]))
    pos = 12 + hl
    n = head.pop("co")
    head["common"] = json.loads(bytes(mv[pos : pos + n])) if common is None else common
    pos += n
    n = head.pop("cj")
    head["run"] = {"config_json": bytes(mv[pos : pos + n]).decode() if n else None, **head["run"]}
    pos += n
    flows = head["flows"]
    for k, v in flows.items():
        if type(v) is dict:
            seg = bytes(mv[pos : pos + v["n"]])
            if "v" in v:
                values = v["v"]
                flows[k] = [values[i] for i in _array("I", seg)]
            else:
                flows[k] = (v["t"], seg)
            pos += v["n"]
    if pos != len(mv):
        raise ValueError("run record of an unexpected length")
    return head


def flow_count(cols: dict) -> int:
    """Number of flows of a columnar report (:func:`coapcc.runner.native_columns`)."""
    flows = cols.get("flows") or {}
    types = cols.get("flow_types") or {}
    for k, v in flows.items():
        return len(v) // int(types[k][1:]) if k in types else len(v)
    return 0


def run_summary(cols: dict, flow_cols: dict | None = None, types: dict | None = None) -> dict:
    """A run's row of metrics from its columnar report ``cols``
    (:func:`coapcc.runner.native_columns`): resolved configuration, flow counts, FCT
    percentiles of the finished flows, per-flow counters summed, the report's scalars and link
    counters, and the coapcc version. ``flow_cols`` and ``types`` are ``cols``'s flows and
    packed types when the caller already has them."""
    from . import __version__
    from .result import link_fields

    if flow_cols is None:
        flow_cols = cols.get("flows") or {}
    if types is None:
        types = cols.get("flow_types") or {}
    if types:  # packed columns (simulate_columns(packed=True)): their values
        flow_cols = dict(flow_cols)
        for k, t in types.items():
            if k in flow_cols:
                flow_cols[k] = _unpack(flow_cols[k], t)
    n = len(next(iter(flow_cols.values()))) if flow_cols else 0
    fcts = [x for x in flow_cols.get("fct_s", ()) if x is not None and x == x]
    fct = _fct_percentiles(fcts)
    run: dict[str, Any] = {
        "config_json": cols.get("config_json"),
        "flows": n,
        "finished_flows": len(fcts),
    }
    for k in ("median", "p10", "p25", "p75", "p90"):
        run[f"fct_{k}"] = fct[k]
    for k in (
        "transmissions",
        "retransmissions",
        "unnecessary_retransmissions",
        "failed_exchanges",
        "completed_exchanges",
    ):
        col = flow_cols.get(k, ())
        run[k] = int(sum(col)) if k in types or None not in col else int(sum(int(x or 0) for x in col))
    for k in TCP_RUN_FIELDS if "segments_sent" in flow_cols else ():  # a UDP run's row is unchanged
        run[k] = int(sum(int(x or 0) for x in flow_cols[k]))
    run["retransmissions_per_exchange"] = [int(x) for x in cols.get("retransmissions_per_exchange") or ()]
    for k in ("useful_fraction", "sim_time_s", "wall_s", "events", "truncated"):
        run[k] = cols.get(k)
    links = cols.get("links") or {}
    if all(
        type(links.get(d)) is dict and not any(type(v) is dict for v in links[d].values())
        for d in _DIRECTIONS
    ):
        for d in _DIRECTIONS:  # flat counters (the simulator's): link_fields without its recursion
            run.update({f"{d}_{k}": v for k, v in links[d].items()})
    else:
        run.update(link_fields(cols))
    run["coapcc_version"] = __version__
    return run


#: Packed column types (little-endian) as :mod:`array` type codes and numpy dtypes.
_PACKED = {"u4": ("I", "<u4"), "u8": ("Q", "<u8"), "f8": ("d", "<f8")}


def _unpack(data: bytes, t: str):
    """The values of a packed column (a sequence of Python numbers)."""
    import array
    import sys

    code = _PACKED[t][0]
    a = array.array(code)
    if a.itemsize != int(t[1:]):  # pragma: no cover - no such platform in use
        raise ValueError(f"packed column type {t}: no array type code of that size here")
    a.frombytes(data)
    if sys.byteorder != "little":  # pragma: no cover
        a.byteswap()
    return a


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
        a = np.concatenate([np.frombuffer(b, _PACKED[t][1]) for t, b in parts])
        if kinds == {"f8"}:
            return pa.array(a.astype(np.float64, copy=False), type=pa.float64(), from_pandas=True)
        if "f8" not in kinds:
            return pa.array(a.astype(np.int64), type=pa.int64())
    vals: list = []
    for p, n in zip(parts, counts):
        if p is None:
            vals.extend([None] * n)
        elif isinstance(p, tuple):
            vals.extend(x if x == x else None for x in _unpack(p[1], p[0]))
        else:
            vals.extend(p)
    return _column(name, vals)


def _fct_percentiles(values: list) -> dict:
    """``median, p10, p25, p75, p90`` of ``values`` exactly as :func:`coapcc.stats.describe`
    computes them (numpy's ``linear`` method: virtual index ``(n - 1) q``, numpy's two-sided
    lerp), in plain Python: numpy's per-call overhead was a third of a sweep's encoding time.
    ``tests/python/test_sweep_robust.py`` checks bitwise equality with ``describe``."""
    a = sorted(v for v in values if v == v)  # NaN dropped, as describe does
    n = len(a)
    out = {}
    for p in (10, 25, 50, 75, 90):
        key = "median" if p == 50 else f"p{p}"
        if n == 0:
            out[key] = float("nan")
            continue
        vi = (n - 1) * (p / 100)
        lo = math.floor(vi)
        if vi >= n - 1:
            out[key] = float(a[-1])
            continue
        x, y = float(a[lo]), float(a[lo + 1])
        g = vi - lo
        d = y - x
        out[key] = y - d * (1 - g) if g >= 0.5 else x + d * g
    return out


_POINT_COLUMNS: dict[str, dict] = {}


_POINT_COLUMNS: dict[str, dict] = {}


def _config_columns_cached(cfg: SimConfig, point_hash: str | None) -> dict:
    """:func:`config_columns`, computed once per grid point (replications differ only in
    their seed) in this process."""
    if not point_hash:
        return config_columns(cfg)
    cols = _POINT_COLUMNS.get(point_hash)
    if cols is None:
        if len(_POINT_COLUMNS) > 4096:
            _POINT_COLUMNS.clear()
        cols = _POINT_COLUMNS[point_hash] = config_columns(cfg)
    out = dict(cols)
    out["seed"] = cfg.seed
    return out


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


# -- files --------------------------------------------------------------------------------


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:  # pragma: no cover - not on every platform
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _tmp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


@contextlib.contextmanager
def _atomic_file(path: Path):
    """A binary file to write that appears at ``path`` only once complete and durable: a
    temporary file in the same folder, fsync, rename, fsync of the folder. On an error (a full
    disk, an exception in the ``with`` block) nothing is left behind."""
    tmp = _tmp_name(path)
    try:
        with open(tmp, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _atomic_write_bytes(data: bytes, path: Path) -> None:
    """Write ``data`` to ``path`` durably (see :func:`_atomic_file`)."""
    with _atomic_file(path) as f:
        f.write(data)


def _atomic_write_tables(tables, path: Path) -> None:
    """Write ``tables`` (an iterable of tables of one schema) as one Parquet file, one row
    group each, durably; the tables are consumed one at a time."""
    import pyarrow.parquet as pq

    with _atomic_file(path) as f:
        w = None
        try:
            for t in tables:
                if w is None:
                    w = pq.ParquetWriter(f, t.schema, **_PARQUET_OPTIONS)
                w.write_table(t)
        finally:  # also on an error: a writer left open would write into the closed file later
            if w is not None:
                w.close()


def _atomic_write_table(table, path: Path) -> None:
    _atomic_write_tables([table], path)


def _concat(tables):
    import pyarrow as pa

    return pa.concat_tables(tables, promote_options="permissive")


# -- journals -----------------------------------------------------------------------------

#: Journals: ``journal-<id>.bin`` (records of :func:`encode_columns`, one after another) and
#: ``journal-<id>.jsonl`` (JSON lines, written by earlier versions; still read).
JOURNAL_GLOB = "journal-*"
_JOURNAL_SUFFIXES = (".bin", ".jsonl")


def read_journal(path: Path) -> list[dict]:
    """The complete records of a journal, as :func:`decode_record` gives them (a record cut
    off by a crash is ignored)."""
    out = []
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return out
    if path.suffix == ".jsonl":
        for line in data.split(b"\n"):
            if not line:
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and "h" in rec and "common" in rec:
                out.append(rec)
        return out
    mv, pos = memoryview(data), 0
    while pos + 8 <= len(mv):
        end = pos + 8 + int.from_bytes(mv[pos + 4 : pos + 8], "little")
        if bytes(mv[pos : pos + 4]) != _MAGIC or end > len(mv):
            break  # cut off by a crash (nothing is written after a damaged record)
        try:
            out.append(decode_record(mv[pos:end]))
        except ValueError:
            break
        pos = end
    return out


def _journals(out: Path) -> list[Path]:
    d = out / "runs"
    if not d.is_dir():
        return []
    return sorted(p for p in d.glob(JOURNAL_GLOB) if p.suffix in _JOURNAL_SUFFIXES)


class DatasetWriter:
    """Writes finished runs into a dataset.

    Each run's record (:func:`encode_run`) is appended at once to a journal
    (``runs/journal-<id>.bin``, one record per run, written to the OS per run), so a
    killed sweep loses no finished run. When the runs held reach ``part_runs`` runs,
    ``part_flows`` flows or ``part_bytes`` bytes (and on :meth:`close`), they become one part:
    a flows part, then a runs part, each fsynced and renamed into place; then the journal is
    deleted. Memory is bounded by the part limits whatever the size of the sweep."""

    def __init__(
        self,
        out: str | os.PathLike,
        part_runs: int = 5000,
        part_flows: int = 100_000,
        part_bytes: int = 32 << 20,
    ):
        self.out = Path(out)
        (self.out / "runs").mkdir(parents=True, exist_ok=True)
        (self.out / "flows").mkdir(parents=True, exist_ok=True)
        self.part_runs, self.part_flows, self.part_bytes = part_runs, part_flows, part_bytes
        self._pending: list[dict] = []  # decoded records
        self._flows = 0
        self._bytes = 0
        self._journal = None
        self._journal_path: Path | None = None

    def add(
        self, record: bytes, flows: int = 0, parsed: dict | None = None, common: dict | None = None
    ) -> None:
        """Add one run's record (:func:`encode_columns`; ``flows``: its number of flows, for
        the part limit). ``parsed`` is the same record as :func:`decode_record` gives it,
        which spares reading it back; or ``common``, its configuration columns, which spares
        reading those."""
        if self._journal is None:
            self._journal_path = self.out / "runs" / f"journal-{time.time_ns():x}-{os.getpid()}.bin"
            self._journal = open(self._journal_path, "ab", buffering=0)  # noqa: SIM115 - closed in flush/close
        self._journal.write(record)  # unbuffered: one system call, in the OS at once
        if parsed is None or "common" not in parsed:
            parsed = decode_record(record, common)
        self._pending.append(parsed)
        self._flows += flows or parsed["run"].get("flows", 0)
        self._bytes += len(record)
        if (
            len(self._pending) >= self.part_runs
            or self._flows >= self.part_flows
            or self._bytes >= self.part_bytes
        ):
            self.flush()

    def flush(self) -> None:
        """Write the runs held since the last part as one part, then drop their journal."""
        if not self._pending:
            return
        import gc

        # Parsing a part's records allocates millions of small objects that all stay alive
        # until the part is written: the cyclic collector would rescan them over and over.
        enabled = gc.isenabled()
        gc.disable()
        try:
            write_part(self.out, self._pending)
        finally:
            if enabled:
                gc.enable()
        self._pending, self._flows, self._bytes = [], 0, 0
        self._close_journal(delete=True)

    def _close_journal(self, delete: bool) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None
            if delete and self._journal_path is not None:
                self._journal_path.unlink(missing_ok=True)
                _fsync_dir(self._journal_path.parent)

    def close(self) -> None:
        """Write the last part. If that fails (a full disk), the journal stays: the next sweep
        turns it into a part."""
        try:
            self.flush()
        finally:
            self._close_journal(delete=False)


def write_part(out: Path, records: list[dict]) -> str:
    """Write one part (flows, then runs) from records; returns its name."""
    runs_t, flow_chunks = records_to_tables(records)
    for sub in ("runs", "flows"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    pid = f"part-{time.time_ns():x}-{os.getpid()}"
    _atomic_write_tables(flow_chunks, out / "flows" / f"{pid}.parquet")
    _atomic_write_table(runs_t, out / "runs" / f"{pid}.parquet")
    return pid


def _write_part_tables(out: Path, run_tables: list, flow_tables: list, hashes: list[str]) -> None:
    """Write one part from per-run tables (legacy per-run files) and delete those files."""
    pid = f"part-{time.time_ns():x}-{os.getpid()}"
    _atomic_write_table(_concat(flow_tables), out / "flows" / f"{pid}.parquet")
    _atomic_write_table(_concat(run_tables), out / "runs" / f"{pid}.parquet")
    for h in hashes:
        for sub in ("runs", "flows"):  # run row first: a flows file alone never counts
            (out / sub / f"{h}.parquet").unlink(missing_ok=True)


def _run_files(out: Path) -> tuple[list[Path], list[Path]]:
    d = out / "runs"
    if not d.is_dir():
        return [], []
    files = [p for p in d.glob("*.parquet") if not p.name.startswith(".")]
    parts = sorted(p for p in files if p.name.startswith("part-"))
    singles = sorted(p for p in files if not p.name.startswith("part-"))
    return parts, singles


def _part_hashes(p: Path) -> list[str]:
    import pyarrow.parquet as pq

    return pq.read_table(p, columns=["config_hash"]).column("config_hash").to_pylist()


def done_hashes(out: str | os.PathLike) -> set[str]:
    """Hashes of the runs already in a dataset (parts, per-run files and journals; damaged
    parts count as missing)."""
    out = Path(out)
    parts, singles = _run_files(out)
    done = {p.stem for p in singles}
    for p in parts:
        try:
            done.update(_part_hashes(p))
        except (OSError, ValueError):  # damaged: quarantined by the next sweep
            continue
    for j in _journals(out):
        done.update(r["h"] for r in read_journal(j))
    return done


def clean_temporaries(out: str | os.PathLike) -> int:
    """Remove what an interrupted writer can leave: temporary files, and flows parts whose runs
    part was never written. Returns how many files were removed. Only call it while holding
    the dataset's lock (:class:`DatasetLock`): another writer's temporaries are live."""
    out = Path(out)
    n = 0
    for sub in ("runs", "flows", "."):
        d = out / sub
        if d.is_dir():
            for p in d.glob(".*.tmp"):
                p.unlink(missing_ok=True)
                n += 1
    if (out / "flows").is_dir():
        for p in (out / "flows").glob("part-*.parquet"):
            if not (out / "runs" / p.name).exists():
                p.unlink(missing_ok=True)
                n += 1
    return n


def quarantine_damaged(out: str | os.PathLike, log=None) -> list[str]:
    """Move parts that cannot be read (a 0-byte or cut-off file, a runs part without its flows
    part) to ``DIR/quarantine/``, saying so on ``log``; their runs count as missing, so the
    next sweep runs them again. Returns the names moved. Call it while holding the lock."""
    import pyarrow.parquet as pq

    out = Path(out)
    parts, _ = _run_files(out)
    moved = []
    for p in parts:
        fp = out / "flows" / p.name
        reason = None
        try:
            _part_hashes(p)
        except (OSError, ValueError) as e:
            reason = f"runs part unreadable: {e}"
        if reason is None:
            if not fp.exists():
                reason = "its flows part is missing"
            else:
                try:
                    pq.read_metadata(fp)
                    _part_hashes(fp)
                except (OSError, ValueError) as e:
                    reason = f"flows part unreadable: {e}"
        if reason is None:
            continue
        q = out / "quarantine"
        q.mkdir(exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S")
        for sub, f in (("runs", p), ("flows", fp)):
            if f.exists():
                os.replace(f, q / f"{stamp}-{sub}-{f.name}")
        _fsync_dir(out / "runs")
        moved.append(p.name)
        if log is not None:
            print(
                f"sweep: damaged part {p.name} ({reason}) moved to {q}/; its runs will be run again",
                file=log,
                flush=True,
            )
    return moved


def recover_journals(out: str | os.PathLike) -> int:
    """Turn the journals an interrupted sweep left into a part (runs already in a part are
    skipped); returns the number of runs recovered. Call it while holding the lock."""
    out = Path(out)
    journals = _journals(out)
    if not journals:
        return 0
    in_parts: set[str] = set()
    for p in _run_files(out)[0]:
        try:
            in_parts.update(_part_hashes(p))
        except (OSError, ValueError):
            continue
    records, seen = [], set()
    for j in journals:
        for r in read_journal(j):
            if r["h"] not in in_parts and r["h"] not in seen:
                seen.add(r["h"])
                records.append(r)
    if records:
        write_part(out, records)
    for j in journals:
        j.unlink(missing_ok=True)
    _fsync_dir(out / "runs")
    return len(records)


def compact(out: str | os.PathLike) -> int:
    """Consolidate what an interrupted sweep left (journals, per-run files of older versions)
    into parts; returns the number of runs consolidated. Call it while holding the lock."""
    import pyarrow.parquet as pq

    out = Path(out)
    clean_temporaries(out)
    n = recover_journals(out)
    parts, singles = _run_files(out)
    if not singles:
        return n
    in_parts = set()
    for p in parts:
        try:
            in_parts.update(_part_hashes(p))
        except (OSError, ValueError):
            continue
    runs, flows, hashes = [], [], []
    for p in singles:
        h = p.stem
        if h not in in_parts:
            fp = out / "flows" / p.name
            if not fp.exists():  # cannot happen with our writer; do not count the run
                p.unlink()
                continue
            rt = pq.read_table(p)
            runs.append(rt)
            flows.append(join_flows(rt, pq.read_table(fp)))
        hashes.append(h)
    if runs:
        _write_part_tables(out, runs, flows, hashes)
    else:
        for h in hashes:
            for sub in ("runs", "flows"):
                (out / sub / f"{h}.parquet").unlink(missing_ok=True)
    return n + len(runs)


#: Version of the dataset layout this coapcc writes and reads (``dataset_format`` in
#: ``experiment.json``). 2: flows parts store the configuration once per run (joined on load by
#: :func:`join_flows`) and journals hold packed binary records. 1: the earlier layout
#: (configuration on every flow row, JSON journals), still read. Datasets written before the
#: marker existed have no ``dataset_format`` and may be in either layout: each part's metadata
#: says which, and both are read.
DATASET_FORMAT = 2


class DatasetFormatError(RuntimeError):
    """The dataset was written in a layout newer than this coapcc reads."""


def check_format(out: str | os.PathLike) -> int:
    """The ``dataset_format`` of the dataset in ``out`` (0 when unmarked or when there is no
    ``experiment.json``); raise :class:`DatasetFormatError` if this coapcc cannot read it.

    Called before reading a dataset and before a sweep adds to one, so an older coapcc
    neither misreads nor rewrites (compacts, quarantines) a newer dataset.
    """
    meta_path = Path(out) / "experiment.json"
    if not meta_path.exists() and (Path(out) / "clients").is_dir():
        raise DatasetFormatError(
            f"{Path(out)} holds a mesh study in the layout of earlier coapcc versions (one runs/RUN_ID.parquet "
            "and clients/RUN_ID.parquet per run); this coapcc keeps mesh studies in the journaled dataset "
            "of `coapcc sweep` and neither reads nor extends the old layout. Move the folder "
            "aside (or delete it) and run the study again, or sweep into another folder with --out: "
            "runs are deterministic, so the same experiment gives the same numbers"
        )
    try:
        meta = json.loads(meta_path.read_text())
    except FileNotFoundError:
        return 0
    except (OSError, ValueError) as e:
        raise DatasetFormatError(f"{meta_path}: cannot be read ({e}); is this a coapcc dataset?") from e
    if isinstance(meta, dict) and "dataset_format" not in meta:
        return 0
    fmt = meta.get("dataset_format") if isinstance(meta, dict) else None
    if not isinstance(fmt, int) or isinstance(fmt, bool) or fmt < 1:
        raise DatasetFormatError(
            f"{meta_path}: dataset_format {fmt!r} is not a format version (a positive integer)"
        )
    if fmt > DATASET_FORMAT:
        version = meta.get("coapcc_version", "a newer version")
        raise DatasetFormatError(
            f"{Path(out)} was written by coapcc {version} in dataset format {fmt}; this coapcc reads formats up to "
            f"{DATASET_FORMAT}: upgrade coapcc to read or extend it"
        )
    return fmt


class DatasetBusy(RuntimeError):
    """Another process is writing the dataset."""


class DatasetLock:
    """An exclusive lock on a dataset folder (``DIR/.lock``, ``flock``): one sweep at a time.
    A second sweep into the same folder is refused with :class:`DatasetBusy`; the lock goes
    with the process, so a killed sweep never leaves it behind."""

    def __init__(self, out: str | os.PathLike):
        self.path = Path(out) / ".lock"
        self._fd: int | None = None

    def acquire(self) -> DatasetLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock
            self._fd = fd
            return self
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            try:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            finally:
                os.close(fd)
            raise DatasetBusy(
                f"{self.path.parent} is in use by another sweep (pid {holder}); wait for it to finish, "
                "or sweep into another folder with --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the flock
            self._fd = None

    def __enter__(self) -> DatasetLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


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
        rows = []
        if "retransmissions_per_exchange" not in self.runs:  # a mesh study's dataset
            return pd.DataFrame(rows, columns=[*keep, "retransmissions", "count"])
        for rec, hist in zip(self.runs[keep].to_dict("records"), self.runs["retransmissions_per_exchange"]):
            for k, n in enumerate(list(hist) if hist is not None else []):
                rows.append({**rec, "retransmissions": k, "count": int(n)})
        return pd.DataFrame(rows, columns=[*keep, "retransmissions", "count"])

    @property
    def clients(self):
        """The per-client table of a mesh study (``flows``: its rows are the clients)."""
        return self.flows

    @property
    def kind(self) -> str:
        """The experiment's kind: ``"sim"`` or ``"mesh"``."""
        return self.experiment.get("kind", "sim")

    def __repr__(self) -> str:
        return f"<Results {self.path}: {len(self.runs)} runs, {len(self.flows)} flows>"


def _read_dataset(out: Path):
    """(runs table, flows table) with every run exactly once. Damaged parts are skipped with a
    warning (the next ``coapcc sweep`` quarantines them and runs their runs again); runs still
    in a journal (an interrupted sweep) are included."""
    import warnings

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    parts, singles = _run_files(out)
    run_tables, flow_tables, seen = [], [], set()
    for p in parts:
        try:
            rt = pq.read_table(p)
            ft = pq.read_table(out / "flows" / p.name)
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
            keep = [h for h, f in zip(hashes, fresh) if f]
            rt = rt.filter(pc.is_in(rt.column("config_hash"), value_set=pa.array(keep, pa.string())))
            ft = ft.filter(pc.is_in(ft.column("config_hash"), value_set=pa.array(keep, pa.string())))
        seen.update(hashes)
        run_tables.append(rt)
        flow_tables.append(join_flows(rt, ft))
    for p in singles:
        if p.stem in seen or not (out / "flows" / p.name).exists():
            continue
        seen.add(p.stem)
        rt = pq.read_table(p)
        run_tables.append(rt)
        flow_tables.append(join_flows(rt, pq.read_table(out / "flows" / p.name)))
    pending = []
    for j in _journals(out):
        for r in read_journal(j):
            if r["h"] not in seen:
                seen.add(r["h"])
                pending.append(r)
    if pending:
        rt, chunks = records_to_tables(pending)
        run_tables.append(rt)
        flow_tables.extend(join_flows(rt, c) for c in chunks)
    if not run_tables:
        return None, None
    return _concat(run_tables), _concat(flow_tables)


def load_results(path: str | os.PathLike) -> Results:
    """Load a results dataset: concatenate its files, sorted by block, point, replication (and
    client), so the tables do not depend on the order the runs finished in.

    >>> res = coapcc.load_results("results/anrw18")        # doctest: +SKIP
    >>> res.flows.groupby(["algorithm", "buffer_bytes"])["fct_s"].median()  # doctest: +SKIP
    """
    import pandas as pd

    path = Path(path)
    if not (path / "runs").is_dir():
        raise FileNotFoundError(f"{path}: not a results dataset (no runs/ folder)")
    check_format(path)
    runs_t, flows_t = _read_dataset(path)
    runs = runs_t.to_pandas() if runs_t is not None else pd.DataFrame()
    flows = flows_t.to_pandas() if flows_t is not None else pd.DataFrame()
    order = [c for c in ("block_index", "block", "point", "replication", "config_hash") if c in runs]
    if order:
        runs = runs.sort_values(order, kind="stable").reset_index(drop=True)
    forder = [c for c in (*order, "client", "node") if c in flows]
    if forder:
        flows = flows.sort_values(forder, kind="stable").reset_index(drop=True)
    meta = {}
    if (path / "experiment.json").exists():
        meta = json.loads((path / "experiment.json").read_text())
    return Results(path=path, runs=runs, flows=flows, experiment=meta)
