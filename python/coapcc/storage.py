"""Dataset files: journals, Parquet parts, and what keeps them whole.

A sweep appends each finished run's record to a journal at once (:class:`DatasetWriter`), turns
batches of records into parts (a flows part, then a runs part, each written to a temporary
name, fsynced and renamed), and deletes the journal. Before sweeping into a folder it takes
its lock (:class:`DatasetLock`), checks its format (:func:`check_format`), moves damaged parts
aside (:func:`quarantine_damaged`) and turns what an interrupted sweep left into parts
(:func:`compact`). The layout is described in :mod:`coapcc.dataset`.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from .records import _MAGIC, decode_record
from .tables import concat as _concat
from .tables import join_flows, records_to_tables

__all__ = [
    "DatasetWriter",
    "DatasetLock",
    "DatasetBusy",
    "DatasetFormatError",
    "DATASET_FORMAT",
    "check_format",
    "compact",
    "quarantine_damaged",
    "done_hashes",
    "read_journal",
    "atomic_write_bytes",
]

_PARQUET_OPTIONS = {"compression": "snappy", "write_statistics": False}

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


def atomic_write_bytes(data: bytes, path: Path) -> None:
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

    Each run's record (:func:`coapcc.records.encode_columns`) is appended at once to a journal
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
    out = Path(out)
    parts, _ = _run_files(out)
    moved = []
    if parts:  # (a new dataset: no need to load pyarrow before the sweep starts its workers)
        import pyarrow.parquet as pq
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
    out = Path(out)
    clean_temporaries(out)
    n = recover_journals(out)
    parts, singles = _run_files(out)
    if not singles:
        return n
    import pyarrow.parquet as pq

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
