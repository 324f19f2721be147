"""``coapcc report``: the papers' figures and a self-contained HTML report from a dataset,
or two datasets side by side (``coapcc report A B``).

Figures (matplotlib, Agg; PNG embedded in the HTML, and PNG, SVG and PDF files in
``figures/``; see docs/reports.md for the mapping to the papers' figures):

* ``fct``: flow completion time box plots (boxes at the quartiles, whiskers at p10 / p90, no
  fliers; ANRW 2018 and FASOR paper style), one panel per case, x = clients;
* ``fct-ci``: mean over replications of each run's median FCT, with 95 % confidence intervals;
* ``fct-cdf``: FCT distribution (empirical CDF) at each panel's largest number of clients;
* ``fct-mixed``: FCT box plots of mixed runs, one box per group label within the mix;
* ``retransmissions`` and ``unnecessary``: retransmissions and unnecessary retransmissions per
  flow (linear axes), left out with a note when there are none;
* ``histogram``: retransmissions per exchange (ANRW Table 2 style);
* ``trace``: RTO and RTT over time of one flow per algorithm, ``timeline``: goodput and
  retransmissions over time of that whole run, and ``queue``: the bottleneck queue of each
  link direction of that run over time (bytes). The report records the trace itself by
  re-running one run of the dataset with tracing on (same seed, so the same run), at the
  case where the algorithms retransmit most.

Every table lists cases in one order: panel dimensions (numbers ascending), then the series in
the experiment's order, then clients ascending. The HTML comes from the jinja2 template
``templates/report.html.j2``.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from . import figures as F
from .config import SimConfig, to_native
from .dataset import Results, load_results
from .runner import RunnerLike

__all__ = ["report", "main", "FIGURES", "summary_table", "jain_index"]

#: Figure ids and their captions (the paper mapping is in docs/reports.md).
FIGURES = {
    "fct": "Flow completion time (FCT) per flow, pooled over replications. Boxes: quartiles; "
    "line: median; whiskers: 10th and 90th percentiles; no outliers drawn.",
    "fct-ci": "Median FCT of a run, averaged over the replications of each case; bars: 95 % confidence "
    "interval of that mean (Student t over replications).",
    "fct-cdf": "Distribution of the FCT over flows (pooled over replications) at the largest number of "
    "clients of each panel; a curve that stays below 1 has unfinished flows.",
    "fct-mixed": "Mixed runs: FCT per flow, one box per group sharing the link (label in mix).",
    "retransmissions": "Retransmissions per flow (all copies after the first, over the flow's exchanges).",
    "unnecessary": "Unnecessary retransmissions per flow (copy k is unnecessary iff an earlier copy reached "
    "the server and its response reached the client).",
    "segments": "CoAP over TCP: data segments sent per flow (retransmissions included), pooled over "
    "replications. Boxes: quartiles; line: median; whiskers: 10th and 90th percentiles.",
    "rto": "CoAP over TCP: retransmission timeouts (RTO expiries) per flow, pooled over replications. "
    "Boxes: quartiles; line: median; whiskers: 10th and 90th percentiles.",
    "histogram": "Retransmissions per exchange: share of the completed exchanges that needed exactly k "
    "retransmissions, pooled over flows and replications, at the largest number of clients "
    "of each panel.",
    "trace": "One flow per algorithm over time: the timer armed with each transmission (circles: first "
    "transmission; crosses: timers that expired and caused a retransmission), the RTT of each "
    "exchange (from the first transmission to the response) and the RTO the next exchange "
    "starts from. The flow with the most retransmissions of the traced run.",
    "tcp-seq": "CoAP over TCP, one transfer per algorithm of the traced case: the sequence number of "
    "every data segment the server sent over time (crosses: retransmissions) and the congestion window "
    "(green, segments), as in the Helsinki CoAP-over-TCP study.",
    "timeline": "The traced runs as a whole over time: goodput (exchanges completed per second, all "
    "clients) and retransmissions sent per second.",
    "queue": "The traced runs' bottleneck queues over time: bytes in the buffer of each link direction "
    "(uplink: client to server, downlink: server to client), at every enqueue and departure, counted "
    "as the buffer's admission test counts them (the packet being serialised included, the default).",
}

_CASE_ORDER = ("errors", "workload", "buffer_bytes")
_NOT_DIMS = {"seed", "algorithm", "clients", "groups"}


# -- data preparation -------------------------------------------------------------------------


def _config_columns() -> list[str]:
    return list(SimConfig().flat().keys())


def _panel_dims(runs) -> list[str]:
    """Configuration columns (other than algorithm and clients) that vary: the panels. The
    buffer comes last, so that panels run along buffers within a row."""
    dims = []
    for c in ["errors", "workload", *[c for c in _config_columns() if c not in _CASE_ORDER], "buffer_bytes"]:
        if c in _NOT_DIMS or c not in runs:
            continue
        if runs[c].nunique(dropna=False) > 1:
            dims.append(c)
    return dims


def _order_cases(df, dims: list[str], series_order: list[str], series_col: str = "series", extra=()):
    """``df`` sorted into the one case order of the report: ``dims`` (numbers ascending,
    others in order of appearance), series in ``series_order``, clients ascending, then
    ``extra`` columns."""
    if not len(df):
        return df
    keys, tmp = [], {}
    for c in dims:
        vals = F._sorted_values(df[c])
        tmp[f"_o_{c}"] = df[c].map({v: i for i, v in enumerate(vals)})
        keys.append(f"_o_{c}")
    tmp["_o_series"] = df[series_col].map({s: i for i, s in enumerate(series_order)})
    keys += ["_o_series", "clients", *extra]
    return df.assign(**tmp).sort_values(keys, kind="stable").drop(columns=list(tmp)).reset_index(drop=True)


def jain_index(values) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2) of ``values`` (NaN ignored): 1 when all
    are equal, 1/n when one takes everything."""
    import numpy as np

    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0 or not (x * x).sum():
        return float("nan")
    return float(x.sum() ** 2 / (x.size * (x * x).sum()))


def _series(flows, runs):
    """The series of every flow: the run's label, or "group label in mix" for mixed runs."""
    labels_of: dict[str, list[str]] = {}
    for g in flows["groups"].unique():
        if g:
            labels_of[g] = SimConfig(groups=tuple(json.loads(g)), clients=1000).group_labels()
    mixed = flows["groups"] != ""
    group_label = [
        labels_of[g][int(i)] if g else ""
        for g, i in zip(flows["groups"], flows.get("group", [0] * len(flows)))
    ]
    return flows["algorithm"].where(
        ~mixed, [f"{gl} in {a}" for gl, a in zip(group_label, flows["algorithm"])]
    )


def _per_run(flows, runs, series_col: str = "series"):
    """One row per run and series: the case keys, the run's median FCT and Jain's index of
    its flows' throughput (completed exchanges / FCT)."""
    thr = flows["completed_exchanges"].astype(float) / flows["fct_s"].astype(float)
    f = flows.assign(_thr=thr)
    agg = f.groupby(["config_hash", series_col], sort=False).agg(
        fct_run_median=("fct_s", "median"), jain=("_thr", jain_index)
    )
    return agg.reset_index()


def summary_table(flows, runs, dims: list[str], series_order: list[str] | None = None):
    """Per case (panel dims x series x clients): runs, flows, FCT median/p10/p25/p75/p90 (s),
    the mean over replications of each run's median FCT with its 95 % confidence half-width,
    Jain's fairness index (mean over runs), median retransmissions and unnecessary
    retransmissions per flow, failed exchanges, mean useful fraction and downlink busy
    fraction."""
    import pandas as pd

    keys = ["series", "clients", *dims]
    if not len(flows):
        return pd.DataFrame()
    f = flows.assign(_unfinished=flows["fct_s"].isna(), fct_s=flows["fct_s"].astype(float))
    g = f.groupby(keys, sort=False, dropna=False)
    qs = g["fct_s"].quantile([0.10, 0.25, 0.50, 0.75, 0.90])  # linear interpolation, NaN ignored
    qs = qs.unstack()
    df = pd.DataFrame(
        {
            "runs": g["config_hash"].nunique(),
            "flows": g.size(),
            "unfinished": g["_unfinished"].sum().astype(int),
            "fct_median": qs[0.50],
            "fct_p10": qs[0.10],
            "fct_p25": qs[0.25],
            "fct_p75": qs[0.75],
            "fct_p90": qs[0.90],
        }
    )
    # per run (and series, for mixed runs): its median FCT and Jain's index, then over the
    # replications of each case
    per_run = _per_run(f, runs)
    case_of = f.drop_duplicates(["config_hash", "series"])[["config_hash", *keys]]
    per_run = per_run.merge(case_of, on=["config_hash", "series"])
    run_cols = [c for c in ("useful_fraction", "downlink_busy_fraction") if c in runs]
    per_run = per_run.merge(runs[["config_hash", *run_cols]].drop_duplicates("config_hash"), on="config_hash")
    pr = per_run.groupby(keys, sort=False, dropna=False)
    m = pr["fct_run_median"]
    n = m.count()
    df["fct_run_median_mean"] = m.mean()
    half = [F.ci95_half(sd, k) for sd, k in zip(m.std(), n)]
    df["ci95"] = pd.Series(half, index=n.index)
    df["jain"] = pr["jain"].mean()
    df["retx_median"] = g["retransmissions"].median().astype(float)
    df["unnecessary_median"] = g["unnecessary_retransmissions"].median().astype(float)
    df["unnecessary_mean"] = g["unnecessary_retransmissions"].mean().astype(float)
    df["failed_exchanges"] = g["failed_exchanges"].sum().astype(int)
    if "useful_fraction" in run_cols:
        df["useful_fraction"] = pr["useful_fraction"].mean()
    if "downlink_busy_fraction" in run_cols:
        df["downlink_busy"] = pr["downlink_busy_fraction"].mean()
    df = df.reset_index()
    df = df[[*dims, "series", "clients", *[c for c in df.columns if c not in keys]]]
    return _order_cases(df, dims, series_order or F._ordered(flows["series"]))


def _table(df, floatfmt: str = "{:.4g}") -> dict:
    """A table for the template: column names and rows of display strings."""
    rows = []
    for rec in df.itertuples(index=False):
        cells = []
        for v in rec:
            if isinstance(v, float):
                cells.append("" if v != v else floatfmt.format(v))
            else:
                cells.append(str(v))
        rows.append(cells)
    return {"columns": [str(c) for c in df.columns], "rows": rows}


def _versions() -> list[tuple[str, str]]:
    from importlib import metadata

    from . import __version__

    out = {"coapcc": __version__, "python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("numpy", "pandas", "pyarrow", "matplotlib", "jinja2", "dask", "distributed", "tqdm"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return list(out.items())


# -- traces -----------------------------------------------------------------------------------


def _pick_trace_runs(res: Results, trace_run: str | None) -> list:
    """Runs to trace: ``trace_run`` (a config hash) or, for each algorithm, replication 0 of
    the case where something happens: among the single-algorithm cases (buffer, workload,
    errors, clients) where every algorithm retransmits at least once per flow, the one with the
    fewest clients (so the trace stays small; ties: the most retransmissions); if there is
    none, the case whose least-retransmitting algorithm retransmits most per flow."""
    runs = res.runs
    if trace_run:
        sel = runs[runs["config_hash"].str.startswith(trace_run)]
        if sel.empty:
            raise ValueError(f"--trace-run {trace_run}: no such run in {res.path}")
        return [sel.iloc[0]]
    single = runs[(runs["groups"] == "") & (runs["replication"] == 0)]
    if single.empty:
        single = runs[runs["replication"] == 0]
    case = [c for c in ("buffer_bytes", "workload", "errors", "clients", *_panel_dims(runs)) if c in single]
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
    return [single[single["algorithm"] == alg].iloc[0] for alg in F._ordered(single["algorithm"].tolist())]


def _traces(res: Results, rows: list, runner_trace, log) -> tuple[list, list, list[dict]]:
    """Record (or reuse) a trace of each run in ``rows``: flow panels, whole-run panels, notes."""
    from .trace import read_trace, run_traced

    tdir = res.path / "traces"
    tdir.mkdir(exist_ok=True)
    panels, runs_panels, notes = [], [], []
    flows = res.flows
    for row in rows:
        h = row["config_hash"]
        path = tdir / f"{h}.jsonl"
        cfg = SimConfig.from_flat(row.to_dict())
        reproduced = None
        if not path.exists():
            tmp = tdir / f".{h}.{os.getpid()}.tmp"
            clients = f"{cfg.clients} client" + ("s" if cfg.clients != 1 else "")
            print(f"report: tracing run {h} ({cfg.label}, {clients})", file=log, flush=True)
            rep = json.loads((runner_trace or run_traced)(json.dumps(to_native(cfg)), str(tmp)))
            os.replace(tmp, path)
            mine = sorted((f["client"], f["fct_s"], f["transmissions"]) for f in rep["flows"])
            theirs = flows[flows["config_hash"] == h].sort_values("client")
            theirs = sorted(
                zip(theirs["client"].tolist(), theirs["fct_s"].tolist(), theirs["transmissions"].tolist())
            )
            reproduced = mine == theirs
        fl = flows[flows["config_hash"] == h]
        # The flow with the most retransmissions (ties: lowest client) shows the timers at work.
        fl = fl.sort_values(["retransmissions", "client"], ascending=[False, True])
        client = int(fl.iloc[0]["client"]) if len(fl) else 0
        whole = read_trace(path)
        tr = whole.flow(client)
        where = f"buffer {cfg.buffer_bytes} B, {cfg.workload}, errors {cfg.errors}, seed {cfg.seed}"
        panels.append((cfg.label, f"client {client} of {cfg.clients}, {where}", tr))
        runs_panels.append((cfg.label, f"{cfg.clients} clients, {where}", whole))
        notes.append(
            {
                "algorithm": cfg.label,
                "config_hash": h,
                "client": client,
                "retransmissions of the flow": int(fl.iloc[0]["retransmissions"]) if len(fl) else 0,
                "trace": str(path.name),
                "reproduces dataset run": "yes"
                if reproduced
                else ("(trace reused)" if reproduced is None else "NO"),
            }
        )
    return panels, runs_panels, notes


def _tcp_seq_panels(res: Results, notes: list[dict]) -> list[tuple[str, str, list[dict]]]:
    """The TCP trace records (sender events) of the traced flow of each traced TCP run."""
    panels = []
    for n in notes:
        path = res.path / "traces" / n["trace"]
        recs = []
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if "event" in r and r.get("flow") == n["client"]:
                    recs.append(r)
        if recs:
            panels.append((n["algorithm"], f"flow {n['client']}", recs))
    return panels


# -- the report ---------------------------------------------------------------------------------


def _dataset_section(res: Results, name: str, dims: list[str], series_order: list[str]) -> dict:
    import pandas as pd

    runs = res.runs
    meta = res.experiment
    reps = runs.groupby("point_hash")["replication"].nunique()
    produced_by = (
        ", ".join(sorted(runs["coapcc_version"].astype(str).unique())) if "coapcc_version" in runs else "?"
    )
    overview = [
        ("experiment", meta.get("name") or runs["experiment"].iloc[0]),
        ("dataset", str(res.path)),
        ("runs", len(runs)),
        ("flows", len(res.flows)),
        ("grid points", runs["point_hash"].nunique()),
        ("replications per point", f"{reps.min()}–{reps.max()}" if reps.min() != reps.max() else reps.min()),
        ("base seed", meta.get("seed", "?")),
        ("simulator wall time (sum over runs)", f"{runs['wall_s'].sum():.1f} s"),
        ("runs produced by coapcc", produced_by),
    ]
    toml_path = res.path / "experiment.toml"
    point_rows = runs.sort_values(["block_index", "point", "replication"]).drop_duplicates(["block", "point"])
    points = [
        {
            "title": f"{r['block']} #{r['point']}: {r['algorithm']}, {r['clients']} clients, buffer "
            f"{r['buffer_bytes']} B, {r['workload']}, errors {r['errors']}",
            "hash": r["point_hash"],
            "config": json.dumps(json.loads(r["config_json"]), indent=1),
        }
        for _, r in point_rows.iterrows()
    ]
    cols = ["block", "point", "replication", "algorithm", "clients", *dims, "seed", "config_hash", "wall_s"]
    seeds = runs[[c for c in dict.fromkeys(cols) if c in runs]].assign(series=runs["algorithm"])
    seeds = _order_cases(seeds, [d for d in dims if d in seeds], series_order, extra=("replication",))
    seeds = seeds.drop(columns="series")
    return {
        "name": name,
        "overview": overview,
        "experiment_toml": toml_path.read_text() if toml_path.exists() else "",
        "first_config": json.dumps(json.loads(runs["config_json"].iloc[0]), indent=2),
        "points": points,
        "seeds": _table(pd.DataFrame(seeds), "{:.3f}"),
    }


def _algorithms_as_run(results: list[Results], names: list[str] | None):
    """Every distinct (label, fully resolved spec) of the datasets' runs, side by side, one
    column per parameter: a mismatch between algorithms (MAX_RETRANSMIT 4 against 20) shows."""
    from .config import groups_table

    seen: dict[tuple[str, str], None] = {}
    for i, r in enumerate(results):
        first = r.runs.drop_duplicates("point_hash") if "point_hash" in r.runs else r.runs
        for row in first.itertuples(index=False):
            cfg = SimConfig.from_flat(row._asdict())
            specs = [g["cc"] for g in json.loads(row.config_json)["groups"]]
            for lbl, spec in zip(cfg.group_labels(), specs):
                seen[(lbl + (f" [{names[i]}]" if names else ""), spec)] = None
    table = groups_table([(lbl, 0, spec) for lbl, spec in seen], differences=False)
    return table.drop(columns="clients").drop_duplicates()


def _names(results: list[Results]) -> list[str]:
    names = [r.experiment.get("name") or r.path.name for r in results]
    if len(set(names)) < len(names):
        names = [r.path.name for r in results]
    if len(set(names)) < len(names):
        names = [f"{chr(65 + i)}: {n}" for i, n in enumerate(names)]
    return names


def _kind(path: str | os.PathLike) -> str:
    """The kind of experiment a dataset holds (``experiment.json``), ``"sim"`` if unsaid."""
    try:
        return json.loads((Path(path) / "experiment.json").read_text()).get("kind", "sim")
    except (OSError, ValueError, AttributeError):
        return "sim"


def report(
    path: str | os.PathLike,
    out: str | os.PathLike | None = None,
    *,
    compare: str | os.PathLike | None = None,
    trace: bool = True,
    trace_run: str | None = None,
    runner: RunnerLike = None,
    title: str | None = None,
    formats: tuple[str, ...] = ("png", "svg", "pdf"),
    log=None,
) -> Path:
    """Write the HTML report of the dataset at ``path`` and return its path (default
    ``path/report.html``; with ``compare``, ``path/compare-<other>.html``). The figures are
    also saved in ``figures/`` next to it, in every format of ``formats``, and the summary as
    ``summary.csv``.

    ``compare``: a second dataset, reported side by side (each series tagged with its
    dataset, plus a table of the cases both have). ``trace``: record a trace (one run per
    algorithm, re-run with tracing on) for the RTO/RTT and timeline figures; ``trace_run``: the
    config hash (or a prefix) of the run to trace instead. ``runner``: a callable
    ``(config_json, trace_path) -> report_json`` replacing the simulator for the traced run.

    >>> coapcc.report("results/anrw18")                       # doctest: +SKIP
    PosixPath('results/anrw18/report.html')
    """
    log = log or sys.stderr
    import matplotlib
    import pandas as pd

    matplotlib.use("Agg")
    if compare is None and _kind(path) == "mesh":  # a mesh study: its own figures (coapcc.mesh_study)
        from .mesh_study import write_report

        if out is not None:
            raise ValueError("the report of a mesh study is written into its dataset folder: leave out --out")
        return write_report(path, log=log)
    t0 = time.perf_counter()
    results = [load_results(path)] + ([load_results(compare)] if compare is not None else [])
    for r in results:
        if r.runs.empty:
            raise ValueError(f"{r.path}: the dataset has no runs yet (run coapcc sweep first)")
    names = _names(results)
    res = results[0]
    if out is None:
        out = res.path / ("report.html" if compare is None else f"compare-{results[1].path.name}.html")
    out = Path(out)
    figdir = out.parent / ("figures" if compare is None else f"figures-{out.stem}")
    figdir.mkdir(parents=True, exist_ok=True)

    tagged_runs, tagged_flows = [], []
    for r, name in zip(results, names):
        f = r.flows.copy()
        f["series"] = _series(f, r.runs)
        rr = r.runs.copy()
        rr["series"] = rr["algorithm"]
        if compare is not None:
            f["series"] = f["series"] + f" [{name}]"
            rr["series"] = rr["series"] + f" [{name}]"
            f["dataset"], rr["dataset"] = name, name
        tagged_runs.append(rr)
        tagged_flows.append(f)
    runs = pd.concat(tagged_runs, ignore_index=True)
    flows = pd.concat(tagged_flows, ignore_index=True)
    # Panels: what varies within a dataset (what only differs between two datasets is the
    # comparison itself, shown as the series' [dataset] tag).
    dims = list(dict.fromkeys(d for r in results for d in _panel_dims(r.runs)))
    if compare is not None:
        # interleave: alg [A], alg [B], next alg [A]...
        order = []
        for base in F._ordered(pd.concat([r.flows["algorithm"] for r in results])):
            order += [s for s in F._ordered(flows["series"]) if s.rsplit(" [", 1)[0] == base]
        order += [s for s in F._ordered(flows["series"]) if s not in order]
    else:
        order = F._ordered(flows["series"])

    mixed = flows["groups"] != ""
    single_flows, mixed_flows = flows[~mixed], flows[mixed]
    figures: list[dict] = []
    omitted: list[dict] = []

    def add(fig_id: str, fig, notes=None, extra: str = "") -> None:
        data = F.save(fig, figdir / fig_id, formats)
        png = data.get("png") or F.save(fig, None, ("png",))["png"]
        files = [(fmt.upper(), f"{figdir.name}/{fig_id}.{fmt}") for fmt in formats if fmt != "png"]
        figures.append(
            {
                "id": fig_id,
                "caption": FIGURES[fig_id] + extra,
                "png_b64": base64.b64encode(png).decode(),
                "files": files,
                "notes": notes,
            }
        )

    def ordered(df):
        return df.assign(_o=df["series"].map({s: i for i, s in enumerate(order)})).sort_values(
            "_o", kind="stable"
        )

    if len(single_flows):
        sf = ordered(single_flows)
        add("fct", F.box_figure(sf, "fct_s", "FCT (s)", dims))
        per_run = _per_run(sf, runs).merge(
            runs[["config_hash", "clients", *dims]].drop_duplicates("config_hash"), on="config_hash"
        )
        if per_run.groupby(["series", "clients", *dims]).size().max() > 1:
            add("fct-ci", F.ci_figure(ordered(per_run), "fct_run_median", "median FCT of a run (s)", dims))
        else:
            omitted.append({"id": "fct-ci", "text": "one replication per case: no confidence intervals."})
        add("fct-cdf", F.cdf_figure(sf, dims))
    if len(mixed_flows):
        add("fct-mixed", F.box_figure(ordered(mixed_flows), "fct_s", "FCT (s)", dims))
    if len(single_flows):
        for fig_id, col, ylabel in (
            ("retransmissions", "retransmissions", "retransmissions per flow"),
            ("unnecessary", "unnecessary_retransmissions", "unnecessary retransmissions per flow"),
        ):
            if (single_flows[col].fillna(0) > 0).any():
                add(fig_id, F.box_figure(ordered(single_flows), col, ylabel, dims, scale="linear"))
            else:
                omitted.append(
                    {"id": fig_id, "text": f"none: no flow of any single-algorithm run had {ylabel[:-9]}."}
                )
    # CoAP over TCP (transport = "tcp"): data segments sent and RTO expiries per transfer.
    for fig_id, col, ylabel in (
        ("segments", "segments_sent", "TCP segments sent per flow"),
        ("rto", "rto_expiries", "TCP RTO expiries per flow"),
    ):
        if len(single_flows) and col in single_flows and single_flows[col].notna().any():
            tcp_flows = single_flows[single_flows[col].notna()]
            add(fig_id, F.box_figure(ordered(tcp_flows), col, ylabel, dims, scale="linear"))
    hist_parts = []
    for r, name in zip(results, names):
        h = r.histogram
        h = h[h["config_hash"].isin(r.runs.loc[r.runs["groups"] == "", "config_hash"])]
        if compare is not None:
            h = h.assign(algorithm=h["algorithm"] + f" [{name}]")
        hist_parts.append(h)
    hist = pd.concat(hist_parts, ignore_index=True)
    if len(hist) and (hist.loc[hist["retransmissions"] > 0, "count"] > 0).any():
        # (a dimension the histogram's table does not carry, e.g. start_jitter_ms, is left out)
        add("histogram", F.histogram_figure(hist, [d for d in dims if d in hist.columns]))
    elif len(hist):
        omitted.append(
            {"id": "histogram", "text": "none: every completed exchange succeeded without a retransmission."}
        )
    trace_notes: list[dict] = []
    if trace:
        try:
            panels, whole, trace_notes = _traces(res, _pick_trace_runs(res, trace_run), runner, log)
            if panels:
                add("trace", F.trace_figure(panels), notes=_table(pd.DataFrame(trace_notes)))
                add("timeline", F.timeline_figure(whole))
                qfig = F.queue_figure(whole)
                if qfig is not None:
                    add("queue", qfig)
                else:
                    omitted.append(
                        {
                            "id": "queue",
                            "text": "none: the traces have no queue records (recorded by an older "
                            "coapcc or by a runner without them; delete DATASET/traces to re-record).",
                        }
                    )
            tcp_panels = _tcp_seq_panels(res, trace_notes)
            if tcp_panels:
                add("tcp-seq", F.tcp_seq_figure(tcp_panels))
        except Exception as e:  # noqa: BLE001 - the rest of the report is still useful
            print(f"report: warning: no trace figure: {type(e).__name__}: {e}", file=log)
            omitted.append({"id": "trace", "text": f"no trace figure: {type(e).__name__}: {e}"})
    else:
        omitted.append({"id": "queue", "text": "none: no traced run (--no-trace)."})

    summary = summary_table(flows, runs, dims, order)
    summary.to_csv(
        out.parent / ("summary.csv" if compare is None else f"{out.stem}-summary.csv"), index=False
    )

    # Retransmissions-per-exchange table (counts), one row per case, in the summary's order.
    kmax = int(hist.loc[hist["count"] > 0, "retransmissions"].max()) if (hist["count"] > 0).any() else 0
    hdims = [d for d in dims if d in hist.columns]  # the histogram's table has the usual case columns
    hkeys = ["algorithm", "clients", *hdims]
    htab = (
        hist[hist["retransmissions"] <= kmax]
        .pivot_table(index=hkeys, columns="retransmissions", values="count", aggfunc="sum", sort=False)
        .reset_index()
    )
    htab.columns = [str(c) for c in htab.columns]
    htab = htab[[*hdims, "algorithm", "clients", *[c for c in htab.columns if c not in hkeys]]]
    htab = _order_cases(htab.rename(columns={"algorithm": "series"}), hdims, order).rename(
        columns={"series": "algorithm"}
    )

    comparison = None
    if compare is not None:
        keys = [*dims, "clients"]
        s = summary.assign(
            algorithm=summary["series"].str.rsplit(" [", n=1).str[0],
            dataset=summary["series"].str.rsplit(" [", n=1).str[1].str.rstrip("]"),
        )
        a = s[s["dataset"] == names[0]].set_index(["algorithm", *keys])
        b = s[s["dataset"] == names[1]].set_index(["algorithm", *keys])
        both = a.index.intersection(b.index)
        cmp = pd.DataFrame(index=both)
        for col in ("fct_median", "fct_p90", "retx_median", "failed_exchanges", "jain"):
            cmp[f"{col} [{names[0]}]"] = a.loc[both, col]
            cmp[f"{col} [{names[1]}]"] = b.loc[both, col]
        cmp["fct_median ratio"] = cmp[f"fct_median [{names[1]}]"] / cmp[f"fct_median [{names[0]}]"]
        cmp = cmp.reset_index()
        cmp = cmp[
            [
                *dims,
                "algorithm",
                "clients",
                *[c for c in cmp.columns if c not in (*dims, "algorithm", "clients")],
            ]
        ]
        cmp = _order_cases(
            cmp.rename(columns={"algorithm": "series"}), dims, F._ordered(a.reset_index()["algorithm"])
        )
        comparison = {
            "note": f"Cases present in both datasets ({len(cmp)}); ratio = {names[1]} / {names[0]}.",
            "table": _table(cmp.rename(columns={"series": "algorithm"})),
        }

    algorithms_table = _algorithms_as_run(results, names if compare is not None else None)

    meta = res.experiment
    name = meta.get("name") or runs["experiment"].iloc[0]
    if title is None:
        title = meta.get("title") or f"coapcc report: {name}"
        if compare is not None:
            title = f"coapcc report: {names[0]} vs {names[1]}"
    warnings = []
    if "truncated" in runs and runs["truncated"].fillna(False).astype(bool).any():
        warnings.append(
            f"{int(runs['truncated'].fillna(False).astype(bool).sum())} runs hit max_sim_time_s and were truncated."
        )
    overview = [
        ("datasets" if compare is not None else "dataset", ", ".join(str(r.path) for r in results)),
        ("runs", len(runs)),
        ("flows", len(flows)),
        ("report generated", time.strftime("%Y-%m-%d %H:%M:%S %Z")),
    ]
    datasets = [_dataset_section(r, n, dims, F._ordered(r.runs["algorithm"])) for r, n in zip(results, names)]
    html = _render(
        title=title,
        description=meta.get("description", "") if compare is None else "",
        overview=overview,
        warnings=warnings,
        figures=figures,
        omitted=omitted,
        comparison=comparison,
        summary=_table(summary),
        summary_note="FCT in seconds over flows, pooled over replications (linear-interpolation "
        "percentiles). fct_run_median_mean ± ci95: each run's median FCT averaged over the case's "
        "replications, with the half-width of its 95 % confidence interval. jain: Jain's fairness "
        "index of the flows' throughput (exchanges / FCT), mean over runs. retx / unnecessary: per "
        "flow. useful_fraction: useful share of the downlink bytes; downlink_busy: link utilisation. "
        "Also in summary.csv.",
        histogram=_table(htab, "{:.0f}"),
        algorithms=_table(algorithms_table),
        datasets=datasets,
        versions=_versions(),
        build_s=time.perf_counter() - t0,
    )
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(html)
    os.replace(tmp, out)
    return out


def _render(**context: Any) -> str:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("coapcc", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("report.html.j2").render(**context)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="coapcc report",
        description="Figures, summary tables and a self-contained HTML report of a results dataset "
        "(from coapcc sweep); with a second dataset, both side by side.",
    )
    p.add_argument("dataset", help="results dataset directory (e.g. results/anrw18)")
    p.add_argument("other", nargs="?", default=None, help="a second dataset to compare with the first")
    p.add_argument(
        "--out",
        "-o",
        default=None,
        metavar="FILE",
        help="HTML file (default: DATASET/report.html, or DATASET/compare-OTHER.html)",
    )
    p.add_argument("--no-trace", action="store_true", help="skip the traced run and its figures")
    p.add_argument(
        "--trace-run", default=None, metavar="HASH", help="config hash (prefix) of the run to trace"
    )
    p.add_argument("--title", default=None, help="report title")
    p.add_argument(
        "--formats",
        default="png,svg,pdf",
        help="figure files to write, comma-separated (png, svg, pdf; default all three)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    a = p.parse_args(argv)
    formats = tuple(f.strip().lower() for f in a.formats.split(",") if f.strip())
    bad = [f for f in formats if f not in ("png", "svg", "pdf")]
    if bad:
        p.error(f"--formats: unknown format {bad[0]!r} (valid: png, svg, pdf)")
    log = open(os.devnull, "w") if a.quiet else sys.stderr  # noqa: SIM115 - lives as long as the command
    try:
        path = report(
            a.dataset,
            a.out,
            compare=a.other,
            trace=not a.no_trace,
            trace_run=a.trace_run,
            title=a.title,
            formats=formats,
            log=log,
        )
    except (FileNotFoundError, ValueError) as e:
        print(f"coapcc report: error: {e}", file=sys.stderr)
        return 2
    if not a.quiet:
        print(path)
    return 0
