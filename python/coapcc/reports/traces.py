"""The traced runs of a simulator study's report (:mod:`coapcc.reports.sim`): which runs to
trace (:func:`pick_trace_runs`), and their traces, recorded by re-running each run with
tracing on (same seed, so the same run; checked against the dataset's flows) or reused from
the dataset's ``traces/`` folder (:func:`record_traces`: jobs of the report, run in processes
of their own while it goes on), then read (:func:`coapcc.read_trace`, :func:`traces`)."""

from __future__ import annotations

import json
import os

from ..config import SimConfig, to_native
from ..figures import base as FB
from .cases import panel_dims

__all__ = ["pick_trace_runs", "record_traces", "traces"]


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


def _record(path, row, runner_trace, log):
    """Record the trace of run ``row`` into folder ``path`` unless it is there already, and
    read it (run as a job of the report, in a process of its own): returns the traced run's
    flows as sorted ``(client, fct_s, transmissions)`` (to check that it reproduces the
    dataset's run; None when the trace was already there) and the trace."""
    from ..trace import read_trace

    h = row["config_hash"]
    file = path / f"{h}.jsonl"
    mine = None if file.exists() else _run(path, row, runner_trace, log)
    return mine, read_trace(file)


def _run(path, row, runner_trace, log) -> list:
    from ..trace import run_traced

    h = row["config_hash"]
    file = path / f"{h}.jsonl"
    cfg = SimConfig.from_flat(row.to_dict())
    tmp = path / f".{h}.{os.getpid()}.{id(row)}.tmp"
    clients = f"{cfg.clients} client" + ("s" if cfg.clients != 1 else "")
    log.write(f"report: tracing run {h} ({cfg.label}, {clients})\n")  # one write: processes print too
    log.flush()
    rep = json.loads((runner_trace or run_traced)(json.dumps(to_native(cfg)), str(tmp)))
    os.replace(tmp, file)
    return sorted((f["client"], f["fct_s"], f["transmissions"]) for f in rep["flows"])


def record_traces(ctx, ds, rows: list) -> list:
    """Start recording (or reusing) a trace of each run in ``rows``, each as a job of the
    report (``ctx.run``: in processes of their own, while the report goes on); returns the
    jobs, for :func:`traces`."""
    tdir = ds.path / "traces"
    tdir.mkdir(exist_ok=True)
    return [ctx.run(lambda row=row: _record(tdir, row, ctx.runner, ctx.log)) for row in rows]


def traces(ds, runs, flows, rows: list, jobs: list) -> tuple[list, list, list, list[dict]]:
    """The traces of the runs in ``rows`` (recorded and read by the ``jobs`` of
    :func:`record_traces`): the flow panels, the whole-run panels, the TCP panels and the notes table's rows."""
    own = [flows[flows["config_hash"] == row["config_hash"]] for row in rows]
    done = []
    for row, fl, job in zip(rows, own, jobs):
        mine, tr = job.result()
        reproduced = None
        if mine is not None:
            theirs = fl.sort_values("client")
            theirs = sorted(
                zip(theirs["client"].tolist(), theirs["fct_s"].tolist(), theirs["transmissions"].tolist())
            )
            reproduced = [tuple(x) for x in mine] == theirs
        cfg = SimConfig.from_flat(row.to_dict())
        done.append((cfg, tr, reproduced))
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
