"""Run records: one finished run as bytes, cheap to make on a worker and to send.

A record holds a run's configuration columns, its row of metrics and its detail rows (a
simulator run's flows, a mesh run's clients, a study's table rows) as columns
(:func:`encode_columns`); :func:`decode_record` reads it back. A sweep appends records to a
journal as they come (:mod:`coapcc.storage`) and turns a batch of them into Parquet parts
(:mod:`coapcc.tables`). Nothing here knows what a run modelled.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["encode_columns", "decode_record", "flow_count", "unpack"]

_RECORD_JSON = json.JSONEncoder(separators=(",", ":"), allow_nan=True)


def encode_columns(
    config_hash: str, common_json: str, cols: dict, parsed: bool = False, run: dict | None = None
):
    """One finished run as a *record* (bytes, :func:`decode_record` reads it back): its
    configuration columns (``common``, given as JSON text), its row of metrics (``run``, its
    ``config_json`` included: what the kind's ``execute`` made of the run) and its detail rows
    as columns (``cols["flows"]``, with ``cols["flow_types"]`` naming the packed ones; the
    simulator's :func:`coapcc.runner.native_columns`). Records are cheap to make on a
    worker and to send (packed flow columns and the resolved configuration are stored as
    they are, after a small JSON head); the sweeping process appends them to a journal as
    they come and turns a batch of them into one part, so Arrow
    and Parquet costs are paid once per part, not per run
    (:func:`coapcc.tables.records_to_tables`).

    Layout: ``CCR2``, the length of the rest (u32, little-endian), the length of the head
    (u32), the head (JSON: ``h``, ``run`` without ``config_json``, ``co`` and ``cj`` the
    lengths of ``common`` and of the configuration text, ``flows`` each column a list or ``{"t": type, "n":
    length}`` of a packed column, or ``{"v": values, "n": length}`` of a column of strings:
    its distinct values, then their indices as u4), then ``common`` (JSON), the configuration
    text (UTF-8) and the columns' bytes, in the head's order.

    With ``parsed``, returns ``(record, parts)``: ``parts`` is what :func:`decode_record`
    gives, without its ``common``.
    """
    flow_cols = cols.get("flows") or {}
    types = cols.get("flow_types") or {}
    run = dict(run or {})
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
    cj = (run.pop("config_json", None) or "").encode()
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


#: Packed column types (little-endian) as :mod:`array` type codes and numpy dtypes.
PACKED = {"u4": ("I", "<u4"), "u8": ("Q", "<u8"), "f8": ("d", "<f8")}


def unpack(data: bytes, t: str):
    """The values of a packed column (a sequence of Python numbers)."""
    import array
    import sys

    code = PACKED[t][0]
    a = array.array(code)
    if a.itemsize != int(t[1:]):  # pragma: no cover - no such platform in use
        raise ValueError(f"packed column type {t}: no array type code of that size here")
    a.frombytes(data)
    if sys.byteorder != "little":  # pragma: no cover
        a.byteswap()
    return a
