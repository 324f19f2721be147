"""Results datasets: Parquet files written run by run, consolidated in parts.

Layout of ``DIR`` (``results/NAME/`` by default)::

    DIR/experiment.toml            the experiment file the sweep ran (copied at each sweep)
    DIR/experiment.json            its name, title, base seed, blocks, coapcc version
    DIR/runs/<hash>.parquet        one finished run: one row (config columns, metrics, histogram)
    DIR/flows/<hash>.parquet       its flows: one row per flow
    DIR/runs/part-<id>.parquet     many runs, consolidated (same columns)
    DIR/flows/part-<id>.parquet    their flows
    DIR/traces/<hash>.jsonl        optional per-exchange traces (written by ``coapcc report``)

``<hash>`` is :func:`coapcc.config.config_hash` of the run's configuration (seed included).

**Crash safety.** Every file is written under a temporary name in its folder and renamed
into place. A finished run is written at once as its own pair of files, flows first and the
run row last: a run counts as done exactly when its row is in ``runs/`` (``<hash>.parquet``
or a part). So an interrupted sweep (Ctrl-C, crash, lost worker) loses no finished run and
leaves nothing half-written that counts, and a rerun only does what is missing.

**Parts.** Thousands of small files are slow to read back, so every few hundred runs (and at
the end) the sweep consolidates the runs it wrote into one pair of part files (flows part
first, runs part last, same ``<id>``), then deletes the per-run files the part covers. A
crash between the two steps only leaves duplicates, which loading ignores (a run is read from
one place only); a flows part without its runs part is ignored and removed by the next sweep.

Every row of both tables carries the full configuration: one column per
:class:`~coapcc.SimConfig` field (:meth:`~coapcc.SimConfig.flat`: nested sections as
``link_...``, ``coap_...``, ``server_...``; ``algorithm`` is the label, ``algorithm_spec``
the specs as run), ``config_hash``, ``point_hash`` (the configuration without its seed: the
same for every replication of a point) and ``seed``; the runs table also has
``config_json``, the simulator's fully resolved configuration.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import SimConfig, canonical_json, to_native

__all__ = [
    "Results",
    "load_results",
    "done_hashes",
    "encode_run",
    "EncodedRun",
    "DatasetWriter",
    "compact",
    "CASE_COLUMNS",
]

#: Configuration columns that identify a case (what the report groups by).
CASE_COLUMNS = ("algorithm", "clients", "buffer_bytes", "workload", "errors", "exchanges", "preset")

#: Per-flow columns of the simulator's report.
FLOW_FIELDS = (
    "client",
    "group",
    "cc",
    "fct_s",
    "transmissions",
    "retransmissions",
    "unnecessary_retransmissions",
    "failed_exchanges",
    "completed_exchanges",
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
    for mixed runs)."""
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


@dataclass
class EncodedRun:
    """One finished run: its tables as Arrow IPC bytes (cheap to send from a worker; for the
    parts) and as Parquet bytes (its own files)."""

    config_hash: str
    flows_ipc: bytes
    run_ipc: bytes
    flows_parquet: bytes
    run_parquet: bytes

    @property
    def flows(self):
        return _from_ipc(self.flows_ipc)

    @property
    def run(self):
        return _from_ipc(self.run_ipc)


def _ipc(table) -> bytes:
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def _from_ipc(data: bytes):
    import pyarrow as pa

    return pa.ipc.open_stream(data).read_all()


def _parquet_bytes(table) -> bytes:
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf, **_PARQUET_OPTIONS)
    return buf.getvalue()


def encode_run(ident: dict[str, Any], cfg: SimConfig, report: dict) -> EncodedRun:
    """The flows table and the one-row runs table of one run, and their Parquet encoding.

    Runs on the workers (it is the expensive part of writing), so the process collecting
    results only writes bytes."""
    import numpy as np
    import pyarrow as pa

    from . import __version__
    from .result import link_fields
    from .stats import describe

    common = {**ident, **config_columns(cfg)}
    common_t = _table({k: [v] for k, v in common.items()})
    flows = report.get("flows", [])
    n = len(flows)
    keys = [k for k in FLOW_FIELDS if not flows or k in flows[0]]
    keys += [k for k in (flows[0] if flows else {}) if k not in keys]
    flow_t = _table({k: [f.get(k) for f in flows] for k in keys})
    ft = common_t.take(pa.array(np.zeros(n, dtype=np.int64)))
    for name, col in zip(flow_t.column_names, flow_t.columns):
        ft = ft.append_column(name, col)

    hist = [int(x) for x in report.get("retransmissions_per_exchange", [])]
    fcts = [f["fct_s"] for f in flows if f.get("fct_s") is not None]
    fct = describe(fcts)
    run: dict[str, Any] = {
        "config_json": canonical_json(report.get("config") or to_native(cfg)),
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
        run[k] = int(sum(int(f.get(k) or 0) for f in flows))
    run["retransmissions_per_exchange"] = hist
    for k in ("useful_fraction", "sim_time_s", "wall_s", "events", "truncated"):
        run[k] = report.get(k)
    run.update(link_fields(report))
    run["coapcc_version"] = __version__
    rt = common_t
    run_t = _table({k: [v] for k, v in run.items()})
    for name, col in zip(run_t.column_names, run_t.columns):
        rt = rt.append_column(name, col)
    return EncodedRun(ident["config_hash"], _ipc(ft), _ipc(rt), _parquet_bytes(ft), _parquet_bytes(rt))


def _atomic_write_bytes(data: bytes, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _atomic_write_table(table, path: Path) -> None:
    import pyarrow.parquet as pq

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp, **_PARQUET_OPTIONS)
    os.replace(tmp, path)


def _concat(tables):
    import pyarrow as pa

    return pa.concat_tables(tables, promote_options="permissive")


class DatasetWriter:
    """Writes finished runs into a dataset: each at once as its own files, and every
    ``part_runs`` runs (and on :meth:`close`) consolidated into a part."""

    def __init__(self, out: str | os.PathLike, part_runs: int = 500):
        self.out = Path(out)
        (self.out / "runs").mkdir(parents=True, exist_ok=True)
        (self.out / "flows").mkdir(parents=True, exist_ok=True)
        self.part_runs = part_runs
        self._pending: list[tuple[str, bytes, bytes]] = []

    def add(self, enc: EncodedRun) -> None:
        h = enc.config_hash
        _atomic_write_bytes(enc.flows_parquet, self.out / "flows" / f"{h}.parquet")
        _atomic_write_bytes(enc.run_parquet, self.out / "runs" / f"{h}.parquet")
        self._pending.append((h, enc.run_ipc, enc.flows_ipc))
        if len(self._pending) >= self.part_runs:
            self.flush()

    def flush(self) -> None:
        """Consolidate the runs written since the last flush into one part."""
        if not self._pending:
            return
        write_part(
            self.out,
            [_from_ipc(r) for _, r, _ in self._pending],
            [_from_ipc(f) for _, _, f in self._pending],
            [h for h, _, _ in self._pending],
        )
        self._pending = []

    def close(self) -> None:
        self.flush()


def write_part(out: Path, run_tables: list, flow_tables: list, hashes: list[str]) -> None:
    """Write one part (flows, then runs) and delete the per-run files it covers."""
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


def done_hashes(out: str | os.PathLike) -> set[str]:
    """Hashes of the runs already in a dataset."""
    import pyarrow.parquet as pq

    parts, singles = _run_files(Path(out))
    done = {p.stem for p in singles}
    for p in parts:
        done.update(pq.read_table(p, columns=["config_hash"]).column("config_hash").to_pylist())
    return done


def clean_temporaries(out: str | os.PathLike) -> int:
    """Remove what an interrupted writer can leave: temporary files, and flows parts whose runs
    part was never written. Returns how many files were removed."""
    out = Path(out)
    n = 0
    for sub in ("runs", "flows"):
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


def compact(out: str | os.PathLike) -> int:
    """Consolidate the per-run files of a dataset (e.g. left by an interrupted sweep) into one
    part; returns the number of runs consolidated."""
    import pyarrow.parquet as pq

    out = Path(out)
    clean_temporaries(out)
    parts, singles = _run_files(out)
    if not singles:
        return 0
    in_parts = set()
    for p in parts:
        in_parts.update(pq.read_table(p, columns=["config_hash"]).column("config_hash").to_pylist())
    runs, flows, hashes = [], [], []
    for p in singles:
        h = p.stem
        if h not in in_parts:
            fp = out / "flows" / p.name
            if not fp.exists():  # cannot happen with our writer; do not count the run
                p.unlink()
                continue
            runs.append(pq.read_table(p))
            flows.append(pq.read_table(fp))
        hashes.append(h)
    if runs:
        write_part(out, runs, flows, hashes)
    else:
        for h in hashes:
            for sub in ("runs", "flows"):
                (out / sub / f"{h}.parquet").unlink(missing_ok=True)
    return len(runs)


@dataclass
class Results:
    """A results dataset, loaded: ``runs`` (one row per run) and ``flows`` (one row per flow),
    pandas DataFrames sorted by block, point, replication (and client).

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
        for rec, hist in zip(self.runs[keep].to_dict("records"), self.runs["retransmissions_per_exchange"]):
            for k, n in enumerate(list(hist) if hist is not None else []):
                rows.append({**rec, "retransmissions": k, "count": int(n)})
        return pd.DataFrame(rows, columns=[*keep, "retransmissions", "count"])

    def __repr__(self) -> str:
        return f"<Results {self.path}: {len(self.runs)} runs, {len(self.flows)} flows>"


def _read_dataset(out: Path):
    """(runs table, flows table) with every run exactly once."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    parts, singles = _run_files(out)
    run_tables, flow_tables, seen = [], [], set()
    for p in parts:
        rt = pq.read_table(p)
        hashes = rt.column("config_hash").to_pylist()
        fresh = [h not in seen for h in hashes]
        ft = pq.read_table(out / "flows" / p.name)
        if not all(fresh):
            keep = [h for h, f in zip(hashes, fresh) if f]
            rt = rt.filter(pc.is_in(rt.column("config_hash"), value_set=pa.array(keep, pa.string())))
            ft = ft.filter(pc.is_in(ft.column("config_hash"), value_set=pa.array(keep, pa.string())))
        seen.update(hashes)
        run_tables.append(rt)
        flow_tables.append(ft)
    for p in singles:
        if p.stem in seen or not (out / "flows" / p.name).exists():
            continue
        seen.add(p.stem)
        run_tables.append(pq.read_table(p))
        flow_tables.append(pq.read_table(out / "flows" / p.name))
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
    runs_t, flows_t = _read_dataset(path)
    runs = runs_t.to_pandas() if runs_t is not None else pd.DataFrame()
    flows = flows_t.to_pandas() if flows_t is not None else pd.DataFrame()
    order = [c for c in ("block_index", "block", "point", "replication", "config_hash") if c in runs]
    if order:
        runs = runs.sort_values(order, kind="stable").reset_index(drop=True)
    forder = [c for c in (*order, "client") if c in flows]
    if forder:
        flows = flows.sort_values(forder, kind="stable").reset_index(drop=True)
    meta = {}
    if (path / "experiment.json").exists():
        meta = json.loads((path / "experiment.json").read_text())
    return Results(path=path, runs=runs, flows=flows, experiment=meta)
