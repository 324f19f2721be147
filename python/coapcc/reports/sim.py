"""The report of simulator studies (``kind = "sim"``; also the sensitivity study's runs are
simulator runs, but it has its own report): the papers' flow figures and summary tables, the
traced runs' timers and queues, and the configuration of every run.

Figures (the mapping to the papers' figures is in docs/reports.md):

* ``fct``: flow completion time box plots (boxes at the quartiles, whiskers at p10 / p90, no
  fliers; ANRW 2018 and FASOR paper style), one panel per case, x = clients;
* ``fct-ci``: mean over replications of each run's median FCT, with 95 % confidence intervals;
* ``fct-cdf``: FCT distribution (empirical CDF) at each panel's largest number of clients;
* ``fct-mixed``: FCT box plots of mixed runs, one box per group label within the mix;
* ``retransmissions`` and ``unnecessary``: retransmissions and unnecessary retransmissions per
  flow (linear axes), left out with a note when there are none;
* ``segments`` and ``rto``: CoAP over TCP, data segments and RTO expiries per flow;
* ``histogram``: retransmissions per exchange (ANRW Table 2 style);
* ``trace``: RTO and RTT over time of one flow per algorithm, ``timeline``: goodput and
  retransmissions over time of that whole run, ``queue``: the bottleneck queue of each link
  direction of that run over time (bytes), and ``tcp-seq``: a TCP transfer's sequence
  numbers and congestion window. The report records the traces itself by re-running one run
  of the dataset per algorithm with tracing on (same seed, so the same run), at the case
  where the algorithms retransmit most.

Every table lists cases in one order: panel dimensions (numbers ascending), then the series in
the experiment's order, then clients ascending. The flows are read with only the columns the
figures use (their case columns come from the runs table), and every figure is drawn from an
aggregated table.
"""

from __future__ import annotations

import json

from ..config import SimConfig
from ..figures import base as FB
from ..figures import flows as FF
from ..figures import traces as FT
from . import Code, Details, Figure, KeyValues, Report, Section, Text, table
from .cases import jain_index, load, order_cases, per_run, summary_table
from .traces import pick_trace_runs, record_traces, traces

__all__ = ["build", "summary_table", "jain_index", "FIGURES"]

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

SUMMARY_NOTE = (
    "FCT in seconds over flows, pooled over replications (linear-interpolation percentiles). "
    "fct_run_median_mean ± ci95: each run's median FCT averaged over the case's replications, with "
    "the half-width of its 95 % confidence interval. jain: Jain's fairness index of the flows' "
    "throughput (exchanges / FCT), mean over runs. retx / unnecessary: per flow. useful_fraction: "
    "useful share of the downlink bytes; downlink_busy: link utilisation. Also in summary.csv."
)


# -- the configuration ------------------------------------------------------------------------


def _dataset_section(ds, runs, n_flows: int, dims: list[str], series_order: list[str]) -> Section:
    import pandas as pd

    meta = ds.experiment
    reps = runs.groupby("point_hash")["replication"].nunique()
    produced_by = (
        ", ".join(sorted(runs["coapcc_version"].astype(str).unique())) if "coapcc_version" in runs else "?"
    )
    overview = [
        ("experiment", meta.get("name") or runs["experiment"].iloc[0]),
        ("dataset", str(ds.path)),
        ("runs", len(runs)),
        ("flows", n_flows),
        ("grid points", runs["point_hash"].nunique()),
        ("replications per point", f"{reps.min()}–{reps.max()}" if reps.min() != reps.max() else reps.min()),
        ("base seed", meta.get("seed", "?")),
        ("simulator wall time (sum over runs)", f"{runs['wall_s'].sum():.1f} s"),
        ("runs produced by coapcc", produced_by),
    ]
    toml_path = ds.path / "experiment.toml"
    point_rows = runs.sort_values(["block_index", "point", "replication"]).drop_duplicates(["block", "point"])
    points = [
        Code(
            f"{r['block']} #{r['point']}: {r['algorithm']}, {r['clients']} clients, buffer "
            f"{r['buffer_bytes']} B, {r['workload']}, errors {r['errors']} (point {r['point_hash']})",
            json.dumps(json.loads(r["config_json"]), indent=1),
        )
        for _, r in point_rows.iterrows()
    ]
    cols = ["block", "point", "replication", "algorithm", "clients", *dims, "seed", "config_hash", "wall_s"]
    seeds = runs[[c for c in dict.fromkeys(cols) if c in runs]].assign(series=runs["algorithm"])
    seeds = order_cases(seeds, [d for d in dims if d in seeds], series_order, extra=("replication",))
    seeds = seeds.drop(columns="series")
    sec = Section(f"configuration-{ds.name}", ds.name)
    sec.add(KeyValues(overview))
    if toml_path.exists():
        sec.add(Code("experiment.toml", toml_path.read_text(), open=True))
    sec.add(
        Code(
            "Fully resolved simulator configuration of the first run",
            json.dumps(json.loads(runs["config_json"].iloc[0]), indent=2),
        ),
        Details(
            f"All {len(points)} grid points: exact simulator configuration (replication 0; the other "
            "replications differ only in the seed)",
            points,
        ),
        Section(
            f"seeds-{ds.name}",
            "Seeds",
            [
                Text(
                    "Seed of every run (derived from the base seed, the point's configuration and the "
                    "replication index); config_hash names the run's files in the dataset. Cases in the "
                    "order of the summary.",
                    muted=True,
                ),
                table(pd.DataFrame(seeds), "{:.3f}", collapsed=f"{len(seeds)} runs"),
            ],
        ),
    )
    return sec


def _algorithms_as_run(ctx, runs_list):
    """Every distinct (label, fully resolved spec) of the datasets' runs, side by side, one
    column per parameter: a mismatch between algorithms (MAX_RETRANSMIT 4 against 20) shows."""
    from ..config import groups_table

    seen: dict[tuple[str, str], None] = {}
    for i, runs in enumerate(runs_list):
        first = runs.drop_duplicates("point_hash") if "point_hash" in runs else runs
        # The labels come from the algorithm and groups columns alone: one configuration is
        # rebuilt per distinct (algorithm, groups, specs), not per grid point.
        labels: dict[tuple, list[str]] = {}
        for row in first.itertuples(index=False):
            specs = tuple(g["cc"] for g in json.loads(row.config_json)["groups"])
            key = (row.algorithm, row.groups, specs)
            if key not in labels:
                labels[key] = SimConfig.from_flat(row._asdict()).group_labels()
            for lbl, spec in zip(labels[key], specs):
                seen[(ctx.tag(lbl, i), spec)] = None
    t = groups_table([(lbl, 0, spec) for lbl, spec in seen], differences=False)
    return t.drop(columns="clients").drop_duplicates()


# -- the report -------------------------------------------------------------------------------


def _comparison(summary, dims: list[str], names: list[str]):
    """Cases present in both datasets: their main figures side by side, and the ratio of the
    median FCTs."""
    import pandas as pd

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
    rest = [c for c in cmp.columns if c not in (*dims, "algorithm", "clients")]
    cmp = cmp[[*dims, "algorithm", "clients", *rest]]
    cmp = order_cases(
        cmp.rename(columns={"algorithm": "series"}), dims, FB.ordered(a.reset_index()["algorithm"])
    )
    return Section(
        "comparison",
        "Comparison",
        [
            Text(
                f"Cases present in both datasets ({len(cmp)}); ratio = {names[1]} / {names[0]}.", muted=True
            ),
            table(cmp.rename(columns={"series": "algorithm"})),
        ],
    )


def _histogram(runs, dims: list[str], tag):
    """Completed exchanges by number of retransmissions, summed over the single-algorithm
    runs of each case: one row per case (``dims``, clients, algorithm) and k
    (``retransmissions``), with ``count``."""
    import numpy as np
    import pandas as pd

    keys = [*dims, "clients", "algorithm"]
    cols = [*keys, "retransmissions", "count"]
    if "retransmissions_per_exchange" not in runs:
        return pd.DataFrame(columns=cols)
    single = runs[runs["groups"] == ""]
    acc: dict[tuple, np.ndarray] = {}
    for key, h in zip(
        single[keys].itertuples(index=False, name=None), single["retransmissions_per_exchange"]
    ):
        if h is None or not len(h):
            continue
        h = np.asarray(h, dtype=np.int64)
        key = (*key[:-1], tag(key[-1]))
        a = acc.get(key)
        if a is None:
            acc[key] = h.copy()
        else:
            if len(a) < len(h):
                a = np.concatenate([a, np.zeros(len(h) - len(a), dtype=np.int64)])
            a[: len(h)] += h
            acc[key] = a
    rows = [(*k, i, int(n)) for k, a in acc.items() for i, n in enumerate(a)]
    return pd.DataFrame(rows, columns=cols)


def build(ctx) -> Report:
    """The report of a simulator study (see the module's documentation)."""
    import pandas as pd

    first = ctx.datasets[0].load(flow_columns=()).runs
    trace_rows, trace_jobs = [], []
    if ctx.trace and not first.empty:  # recorded while the flows are read and the tables computed
        trace_rows = pick_trace_runs(first, ctx.trace_run, str(ctx.datasets[0].path))
        trace_jobs = record_traces(ctx, ctx.datasets[0], trace_rows)
    loaded = [
        load(ds, lambda v, i=i: ctx.tag(v, i), ctx.compare, runs=first if i == 0 else None)
        for i, ds in enumerate(ctx.datasets)
    ]
    # The configuration section (every grid point's configuration as JSON, every run's seed)
    # needs only the runs: made in a process of its own while the tables are computed.
    config_jobs = [
        ctx.run(lambda ds=ds, r=r, f=f, d=d: _dataset_section(ds, r, len(f), d, FB.ordered(r["algorithm"])))
        for ds, (r, f, d) in zip(ctx.datasets, loaded)
    ]
    ctx.progress("tables")
    runs = pd.concat([r for r, _, _ in loaded], ignore_index=True)
    flows = pd.concat([f for _, f, _ in loaded], ignore_index=True) if ctx.compare else loaded[0][1]
    # Panels: what varies within a dataset (what only differs between two datasets is the
    # comparison itself, shown as the series' [dataset] tag).
    dims = list(dict.fromkeys(d for _, _, ds_dims in loaded for d in ds_dims))
    series_all = FB.ordered(flows["series"])
    if ctx.compare:  # interleave: alg [A], alg [B], next alg [A]...
        order = []
        for base in FB.ordered(pd.concat([r["algorithm"] for r, _, _ in loaded])):
            order += [s for s in series_all if s.rsplit(" [", 1)[0] == base]
        order += [s for s in series_all if s not in order]
    else:
        order = series_all

    mixed = (flows["groups"] != "").to_numpy()
    single = ~mixed
    figs: list[Figure] = []
    omitted: list[tuple[str, str]] = []

    def add(fig_id: str, draw, notes=None) -> None:
        figs.append(Figure(fig_id, FIGURES[fig_id], draw, notes))
        ctx.draw(figs[-1])  # drawn while the report goes on

    def box(fig_id, col, ylabel, mask, scale="auto"):
        st = FF.box_stats(flows, col, dims, mask=mask)
        add(fig_id, lambda: FF.box_figure(st, ylabel, dims, order, scale=scale))
        return st

    # The FCT's quantiles per case, for the figures and the summary (computed once).
    fct_q = []
    if single.any():
        fct_q.append(box("fct", "fct_s", "FCT (s)", single))
        single_flows = flows[single]
        runs_of = per_run(single_flows).merge(
            runs[["config_hash", "clients", *dims]].drop_duplicates("config_hash"), on="config_hash"
        )
        if runs_of.groupby(["series", "clients", *dims], observed=True).size().max() > 1:
            ci = FF.ci_stats(runs_of, "fct_run_median", dims)
            add("fct-ci", lambda: FF.ci_figure(ci, "median FCT of a run (s)", dims, order))
        else:
            omitted.append(("fct-ci", "one replication per case: no confidence intervals."))
        curves, log = FF.cdf_curves(single_flows, dims)
        add("fct-cdf", lambda: FF.cdf_figure(curves, log, dims, order))
        del single_flows, runs_of
    if mixed.any():
        fct_q.append(box("fct-mixed", "fct_s", "FCT (s)", mixed))
    if single.any():
        for fig_id, col, ylabel in (
            ("retransmissions", "retransmissions", "retransmissions per flow"),
            ("unnecessary", "unnecessary_retransmissions", "unnecessary retransmissions per flow"),
        ):
            if (flows[col].to_numpy(dtype=float, na_value=0.0)[single] > 0).any():
                box(fig_id, col, ylabel, single, scale="linear")
            else:
                omitted.append((fig_id, f"none: no flow of any single-algorithm run had {ylabel[:-9]}."))
    # CoAP over TCP (transport = "tcp"): data segments sent and RTO expiries per transfer.
    for fig_id, col, ylabel in (
        ("segments", "segments_sent", "TCP segments sent per flow"),
        ("rto", "rto_expiries", "TCP RTO expiries per flow"),
    ):
        if single.any() and col in flows and flows[col][single].notna().any():
            box(fig_id, col, ylabel, single, scale="linear")
    summary = summary_table(flows, runs, dims, order, quantiles=pd.concat(fct_q) if fct_q else None)
    hist = pd.concat(
        [_histogram(r, dims, lambda v, i=i: ctx.tag(v, i)) for i, (r, _, _) in enumerate(loaded)],
        ignore_index=True,
    )
    if len(hist) and (hist.loc[hist["retransmissions"] > 0, "count"] > 0).any():
        add("histogram", lambda: FF.histogram_figure(hist, dims))
    elif len(hist):
        omitted.append(("histogram", "none: every completed exchange succeeded without a retransmission."))
    if ctx.trace:
        ctx.progress("traces")
        first_runs, first_flows, _ = loaded[0]
        try:
            panels, whole, tcp, notes = traces(
                ctx.datasets[0], first_runs, first_flows, trace_rows, trace_jobs
            )
            with_ex = [w for w in whole if len(w[2].exchanges)]
            if panels:
                add("trace", lambda: FT.trace_figure(panels), notes=table(pd.DataFrame(notes)))
                add("timeline", lambda: FT.timeline_figure(with_ex))
            else:
                why = "none: the traced runs are CoAP over TCP, whose traces have no per-exchange records (see tcp-seq)."
                omitted += [("trace", why), ("timeline", why)]
            if any(len(w[2].queue) for w in whole):
                add("queue", lambda: FT.queue_figure(whole))
            else:
                omitted.append(
                    (
                        "queue",
                        "none: the traces have no queue records (recorded by an older coapcc or by a "
                        "runner without them; delete DATASET/traces to re-record).",
                    )
                )
            if tcp:
                add(
                    "tcp-seq",
                    lambda: FT.tcp_seq_figure(tcp),
                    notes=None if panels else table(pd.DataFrame(notes)),
                )
        except Exception as e:  # noqa: BLE001 - the rest of the report is still useful
            print(f"report: warning: no trace figure: {type(e).__name__}: {e}", file=ctx.log)
            omitted.append(("trace", f"no trace figure: {type(e).__name__}: {e}"))
    else:
        omitted.append(("queue", "none: no traced run (--no-trace)."))

    # Retransmissions-per-exchange table (counts), one row per case, in the summary's order.
    kmax = int(hist.loc[hist["count"] > 0, "retransmissions"].max()) if (hist["count"] > 0).any() else 0
    hkeys = ["algorithm", "clients", *dims]
    htab = (
        hist[hist["retransmissions"] <= kmax]
        .pivot_table(index=hkeys, columns="retransmissions", values="count", aggfunc="sum", sort=False)
        .reset_index()
    )
    htab.columns = [str(c) for c in htab.columns]
    htab = htab[[*dims, "algorithm", "clients", *[c for c in htab.columns if c not in hkeys]]]
    htab = order_cases(htab.rename(columns={"algorithm": "series"}), dims, order).rename(
        columns={"series": "algorithm"}
    )

    meta = ctx.datasets[0].experiment
    name = meta.get("name") or runs["experiment"].iloc[0]
    title = meta.get("title") or f"coapcc report: {name}"
    if ctx.compare:
        title = f"coapcc report: {ctx.names[0]} vs {ctx.names[1]}"
    warnings = []
    if "truncated" in runs and runs["truncated"].fillna(False).astype(bool).any():
        warnings.append(
            f"{int(runs['truncated'].fillna(False).astype(bool).sum())} runs hit max_sim_time_s and were truncated."
        )
    doc = Report(
        title=title,
        description=meta.get("description", "") if not ctx.compare else "",
        overview=[
            ("datasets" if ctx.compare else "dataset", ", ".join(str(d.path) for d in ctx.datasets)),
            ("runs", len(runs)),
            ("flows", len(flows)),
        ],
        warnings=warnings,
        omitted=omitted,
        files={"summary.csv": summary},
    )
    doc.sections.append(Section("figures", "Figures", figs))
    if ctx.compare:
        doc.sections.append(_comparison(summary, dims, ctx.names))
    doc.sections += [
        Section(
            "algorithms",
            "Algorithms as run",
            [
                Text(
                    "Every algorithm configuration of the runs, fully resolved by the simulator, one column "
                    "per parameter (empty where an algorithm has no such parameter), so that a difference "
                    "between algorithms in a shared parameter (MAX_RETRANSMIT, ACK_TIMEOUT, ...) is visible.",
                    muted=True,
                ),
                table(_algorithms_as_run(ctx, [r for r, _, _ in loaded])),
            ],
        ),
        Section("summary", "Summary per case", [Text(SUMMARY_NOTE, muted=True), table(summary)]),
        Section(
            "retransmissions-per-exchange",
            "Retransmissions per exchange",
            [
                Text(
                    "Completed exchanges by number of retransmissions (columns), pooled over flows and "
                    "replications; cases in the order of the summary.",
                    muted=True,
                ),
                table(htab, "{:.0f}", collapsed=f"{len(htab)} cases"),
            ],
        ),
        Section("configuration", "Configuration", [job.result() for job in config_jobs]),
    ]
    return doc
