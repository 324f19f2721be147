"""The traced runs of a simulator study's report (:mod:`coapcc.reports.sim`): which runs to
trace (:func:`pick_trace_runs`), and their traces, recorded by re-running each run with
tracing on (same seed, so the same run; checked against the dataset's flows) or reused from
the dataset's ``traces/`` folder, then read (:func:`coapcc.read_trace`)."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor

from ..config import SimConfig, to_native
from ..figures import base as FB
from .cases import panel_dims

__all__ = ["pick_trace_runs", "traces"]


def pick_trace_runs(runs, trace_run: str | None, where: str = "") -> list:
    """Runs to trace: ``trace_run`` (a config hash) or, for each algorithm, replication 0 of
    the case where something happens: among the single-algorithm cases (buffer, workload,
    errors, clients) where every algorithm retransmits at least once per flow, the one with the
    fewest clients (so the trace stays small; ties: the most retransmissions); if there is
    none, the case whose least-retransmitting algorithm retransmits most per flow."""
    if trace_run:
        sel = runs[runs["config_hash"].str.startswith(trace_run)]
        if sel.empty:
            raise ValueError(f"--trace-run {trace_run}: no such run in {where}")
        return [sel.iloc[0]]
    single = runs[(runs["groups"] == "") & (runs["replication"] == 0)]
    if single.empty:
        single = runs[runs["replication"] == 0]
    case = [c for c in ("buffer_bytes", "workload", "errors", "clients", *panel_dims(runs)) if c in single]
    case = list(dict.fromkeys(case))
    per_flow = single.assign(_r=single["retransmissions"] / single["clients"].clip(lower=1))
    score = per_flow.groupby(case, sort=False)["_r"].min().reset_index()
    busy = score[score["_r"] >= 1.0]
    if len(busy):  # every algorithm retransmits at least once per flow: the fewest clients
        score = busy.sort_values(["clients", "_r"], ascending=[True, False], kind="stable")
    else:
        score = score.sort_values(["_r", "clients"], ascending=[False, True], kind="stable")
    best = score.iloc[0]
    for c in case:
        single = single[single[c] == best[c]]
    return [single[single["algorithm"] == alg].iloc[0] for alg in FB.ordered(single["algorithm"].tolist())]


def _trace_one(path, row, flows, runner_trace, log):
    """Record (or reuse) the trace of run ``row`` in folder ``path`` and read it: returns
    ``(config, trace, reproduced)`` (``reproduced``: whether the traced run's flows are the
    dataset's, None when the trace was already there)."""
    from ..trace import read_trace, run_traced

    h = row["config_hash"]
    file = path / f"{h}.jsonl"
    cfg = SimConfig.from_flat(row.to_dict())
    reproduced = None
    if not file.exists():
        tmp = path / f".{h}.{os.getpid()}.{id(row)}.tmp"
        clients = f"{cfg.clients} client" + ("s" if cfg.clients != 1 else "")
        log.write(f"report: tracing run {h} ({cfg.label}, {clients})\n")  # one write: threads print too
        log.flush()
        rep = json.loads((runner_trace or run_traced)(json.dumps(to_native(cfg)), str(tmp)))
        os.replace(tmp, file)
        mine = sorted((f["client"], f["fct_s"], f["transmissions"]) for f in rep["flows"])
        theirs = flows.sort_values("client")
        theirs = sorted(
            zip(theirs["client"].tolist(), theirs["fct_s"].tolist(), theirs["transmissions"].tolist())
        )
        reproduced = mine == theirs
    return cfg, read_trace(file), reproduced


def traces(ds, runs, flows, rows: list, runner_trace, log) -> tuple[list, list, list, list[dict]]:
    """Record (or reuse) a trace of each run in ``rows`` (several at a time: the simulator and
    the trace reader release the GIL): the flow panels, the whole-run panels, the TCP panels
    and the notes table's rows."""
    tdir = ds.path / "traces"
    tdir.mkdir(exist_ok=True)
    own = [flows[flows["config_hash"] == row["config_hash"]] for row in rows]
    workers = max(1, min(len(rows), os.cpu_count() or 1))
    with ThreadPoolExecutor(workers) as ex:
        done = list(ex.map(lambda a: _trace_one(tdir, a[0], a[1], runner_trace, log), zip(rows, own)))
    panels, whole, tcp, notes = [], [], [], []
    for row, fl, (cfg, tr, reproduced) in zip(rows, own, done):
        # The flow with the most retransmissions (ties: lowest client) shows the timers at work.
        fl = fl.sort_values(["retransmissions", "client"], ascending=[False, True])
        client = int(fl.iloc[0]["client"]) if len(fl) else 0
        where = f"buffer {cfg.buffer_bytes} B, {cfg.workload}, errors {cfg.errors}, seed {cfg.seed}"
        if len(tr.exchanges):
            panels.append((cfg.label, f"client {client} of {cfg.clients}, {where}", tr.flow(client)))
        whole.append((cfg.label, f"{cfg.clients} clients, {where}", tr))
        if len(tr.tcp):
            ev = tr.tcp[tr.tcp["flow"] == client]
            if len(ev):
                tcp.append((cfg.label, f"flow {client}", ev))
        notes.append(
            {
                "algorithm": cfg.label,
                "config_hash": row["config_hash"],
                "client": client,
                "retransmissions of the flow": int(fl.iloc[0]["retransmissions"]) if len(fl) else 0,
                "trace": f"{row['config_hash']}.jsonl",
                "reproduces dataset run": "yes"
                if reproduced
                else ("(trace reused)" if reproduced is None else "NO"),
            }
        )
    return panels, whole, tcp, notes
