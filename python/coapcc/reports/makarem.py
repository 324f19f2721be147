"""The report of Makarem's studies (``kind = "makarem-studies"``): the chapters 3-4 model
figures and tables, the chapter 5 RTT-scenario comparison and studies, and the chapter 6
residual-bandwidth curves, drawn from the dataset's runs (:mod:`coapcc.kinds.makarem`) and,
for the analytical curves, from the file's ``[models]`` section. The figures are
:mod:`coapcc.figures.makarem`'s; each table is also written as a CSV file beside the report."""

from __future__ import annotations

import numpy as np

from ..figures import makarem as FM
from ..models import loss
from . import Figure, Report, Section, Text, table


class _Report:
    """Collects the report's sections, figures, tables (with their CSV files) and notes."""

    def __init__(self, log):
        self.log = log
        self.sections: list[Section] = []
        self.notes: list[str] = []
        self.files: dict = {}

    def _current(self) -> Section:
        if not self.sections:
            self.sections.append(Section("study", "Study"))
        return self.sections[-1]

    def h(self, text: str):
        self.sections.append(Section(f"s{len(self.sections)}", text))

    def p(self, text: str):
        self._current().add(Text(text))

    def fig(self, draw, name: str, caption: str):
        self._current().add(Figure(name, caption, draw))

    def table(self, df, name: str, caption: str, show=None):
        self.files[f"{name}.csv"] = df
        shown = df if show is None else show
        self._current().add(Text(f"{caption} ({name}.csv)"), table(shown))

    def note(self, text: str):
        self.notes.append(text)
        print(f"  note: {text}", file=self.log)


def _block(runs, prefix: str):
    return runs[runs["block"].astype(str).str.startswith(prefix)] if len(runs) else runs


def _models(m: dict, runs, rep: _Report):
    import pandas as pd

    rtt, q = m["rtt"], m.get("gilbert_q", 0.5)
    rep.h("Chapters 3 and 4: Markov models of CoAP reliability")
    rep.p(
        f"One CoAP CON sender, RTT {rtt} s, Z = {m.get('Z', 100)} B, Y = {m.get('Y', 48)} B; Bernoulli loss and "
        f"simple Gilbert loss with q = {q} (Table 3.3); RTO and r as in Table 3.4."
    )
    rep.fig(
        lambda: FM.model_loss_ratio(m),
        "model-loss-ratio",
        "P_L against the per-attempt loss (transition) probability p",
    )
    rep.fig(
        lambda: FM.model_goodput_delay(m),
        "model-goodput-delay",
        "Goodput (3.30)/(3.92) and delay (3.14)/(3.87) against p",
    )
    pp = np.array(m["loss"])[:, None]
    rr = np.array(m["r"])[None, :]
    rf = loss.required_factor(pp, rr)
    df = pd.DataFrame(rf, columns=[f"r={r}" for r in m["r"]])
    df.insert(0, "p", m["loss"])
    rep.table(
        df, "model-required-factor", "Required factor T_2/T_1 (3.112) keeping the goodput when r -> r + 1"
    )
    sim_runs = runs[(runs["block"] == "model-sim")] if len(runs) else runs
    if len(sim_runs):
        rows = []
        for _, r in sim_runs.sort_values(["model", "p"]).iterrows():
            for key in ("P_L", "E_N", "D_s", "GP"):
                rows.append(
                    {
                        "loss": r["model"],
                        "p": r["p"],
                        "metric": key,
                        "sim": r[f"{key}_sim"],
                        "ci95": r[f"{key}_ci95"],
                        "model": r[f"{key}_model"],
                    }
                )
        sim = pd.DataFrame(rows)
        sim["within_ci"] = (sim["sim"] - sim["model"]).abs() <= sim["ci95"]
        n = int(sim_runs["messages"].iloc[0])
        rep.fig(
            lambda: FM.model_vs_simulation(m, sim),
            "model-vs-simulation",
            f"Model curves over simulated points ({n} messages each; RTO {m['fixed_rto']} s, r = {m['fixed_r']}, "
            f"RTT {rtt} s; Default CoAP with dithering)",
        )
        rep.table(
            sim,
            "model-vs-simulation",
            f"Model against simulation: {int(sim['within_ci'].sum())} of {len(sim)} values within the 95 % CI",
        )
    ge = runs[runs["block"] == "model-ge"] if len(runs) else runs
    if len(ge):
        t43 = ge[["p", "q", "k", "h"]].copy()
        t43["P_L"], t43["P_L_approx"] = ge["P_L_model"].to_numpy(), ge["P_L_approx"].to_numpy()
        t43["D_s"], t43["GP"] = ge["D_s_model"].to_numpy(), ge["GP_model"].to_numpy()
        t43["P_L_sim"], t43["P_L_sim_ci95"] = ge["P_L_sim"].to_numpy(), ge["P_L_ci95"].to_numpy()
        rep.table(
            t43.reset_index(drop=True),
            "model-table-4-3",
            f"Table 4.3 rows (RTO {m.get('ge_rto')} s, r = {m.get('ge_r')}, RTT {m.get('ge_rtt')} s assumed): exact "
            "and approximate P_L, delay, goodput, simulated P_L",
        )


_RTT_COLS = ["scenario", "cc", "cc_resolved", "spurious", "rmse_ms", "transmissions", "messages", "gave_up", "mean_rto_ms", "mean_rtt_ms"]  # fmt: skip


def _rtt(c: dict, runs, traces, rep: _Report):
    rep.h("Chapter 5: RTO algorithms on the RTT scenarios of Table 5.1")
    if not c.get("trace"):
        rep.note(
            "chapter 5: scenarios 5 and 6 (real traces, unpublished) skipped; set rtt_scenarios.trace to a file"
        )
    main = runs[runs["block"] == "rtt-scenarios"] if len(runs) else runs
    if len(main):
        df = main.sort_values(["scenario", "block_index", "point"])
        df = df[[k for k in _RTT_COLS if k in df.columns]]
        ccs = list(dict.fromkeys(main.sort_values("point")["cc"]))
        rep.table(
            df.drop(columns=["cc_resolved"], errors="ignore"),
            "rtt-scenarios",
            f"Spurious retransmissions and RMSE(RTO, RTT) per scenario ({c.get('len')} messages each)",
        )
        rep.fig(
            lambda df=df, ccs=ccs: FM.rtt_scenarios(df, ccs),
            "rtt-scenarios",
            "Spurious retransmissions and RMSE per scenario",
        )
    if len(traces):
        sc = int(traces["scenario"].iloc[0])
        per = {
            cc.split(":")[0]: g.sort_values("i").reset_index(drop=True)
            for cc, g in traces.groupby("cc", sort=False)
        }
        rep.fig(
            lambda: FM.rto_vs_rtt(per, f"Scenario {sc}: RTO against RTT"),
            f"rtt-rto-vs-rtt-s{sc}",
            f"RTO and RTT over time, scenario {sc}",
        )
    blocks = [b for b in dict.fromkeys(runs["block"]) if str(b).startswith("rtt-study-")] if len(runs) else []
    for b in blocks:
        df = runs[runs["block"] == b].sort_values(["point"])
        name = b[len("rtt-study-") :]
        summ = df.groupby("setting", sort=False)[["spurious", "rmse_ms"]].mean().reset_index()
        rep.table(
            df[
                [
                    k
                    for k in (
                        "scenario",
                        "cc",
                        "setting",
                        "spurious",
                        "rmse_ms",
                        "transmissions",
                        "messages",
                        "gave_up",
                    )
                    if k in df
                ]
            ],
            f"rtt-study-{name}",
            f"Study {name}: {df['study_base'].iloc[0]} (mean over scenarios below)",
            show=summ,
        )
        rep.fig(
            lambda summ=summ: FM.rtt_study(summ),
            f"rtt-study-{name}",
            f"Study {name}: spurious retransmissions against RMSE",
        )


def _curve_fig(rep: _Report, df, x: str, name: str, caption: str, xlabel: str, formulas: bool = False):
    mean = (
        df.groupby(["cc", x], sort=False)[["goodput_pps", "overhead", "app_loss_ratio"]].mean().reset_index()
    )
    rep.fig(lambda: FM.resbw_curves(mean, x, xlabel, formulas), name, caption)
    return mean


_RESBW_COLS = ["cc", "mean_resbw", "half_width", "replication", "goodput_pps", "overhead", "app_loss_ratio", "transmissions", "delivered"]  # fmt: skip


def _resbw(c: dict, runs, traces, rep: _Report):
    rep.h("Chapter 6: congestion counteraction under a varying residual bandwidth")
    bo = c.get("bad_only", {})

    def table(block):
        df = runs[runs["block"] == block] if len(runs) else runs
        return (
            df.sort_values(["point", "replication"])[[k for k in _RESBW_COLS if k in df]] if len(df) else df
        )

    df = table("resbw-bad-only")
    if len(df):
        mean = _curve_fig(
            rep, df, "mean_resbw", "resbw-bad-only",
            f"Table 6.1: bad periods only (exp. mean {bo.get('bad_mean_s')} s), residual bandwidth "
            f"U(M - {c.get('half_width')}, M + {c.get('half_width')}); {c.get('duration_s')} s runs, "
            f"{c.get('repetitions')} repetitions",
            "mean residual bandwidth M (pkt/s)", formulas=True,
        )  # fmt: skip
        rep.table(df, "resbw-bad-only", "Table 6.1 curves (means over repetitions shown)", show=mean)
    for s in c.get("sets", []):
        df = table(f"resbw-{s['name']}")
        if not len(df):
            continue
        mean = _curve_fig(
            rep, df, "mean_resbw", f"resbw-{s['name']}",
            f"Table 6.2 {s['name']}: good periods {c.get('good')} (exp. mean {s['good_mean_s']} s), bad periods "
            f"(exp. mean {s['bad_mean_s']} s)",
            "mean bad-period residual bandwidth (pkt/s)",
        )  # fmt: skip
        rep.table(
            df, f"resbw-{s['name']}", f"Table 6.2 {s['name']} (means over repetitions shown)", show=mean
        )
    if len(traces):
        ins = c.get("instant", {})
        ccs = list(dict.fromkeys(traces["cc"]))
        good = runs[runs["block"] == "resbw-instant"].set_index("cc")["goodput_pps"].to_dict()
        rep.fig(
            lambda: FM.resbw_instant(traces, ccs, good), "resbw-instant",
            f"Instantaneous behaviour: sending rate 1/(time since the previous send) of each transmission against the "
            f"residual bandwidth {ins.get('resbw')} (first {ins.get('window_s')} s; rates above 3 pkt/s drawn at 3)",
        )  # fmt: skip
    v = c.get("variability")
    df = table("resbw-variability")
    if v and len(df):
        mean = _curve_fig(
            rep, df, "half_width", "resbw-variability",
            f"Table 6.1 high-variability runs: mean {v['mean']} pkt/s, U(mean - w, mean + w)", "half width w (pkt/s)",
        )  # fmt: skip
        rep.table(df, "resbw-variability", "High-variability runs (means over repetitions shown)", show=mean)
    bs = c.get("backoff_study")
    df = table("resbw-backoff-factor")
    if bs:
        known = set(df["cc"]) if len(df) else set()
        for val in bs["values"]:
            spec = f"{bs['cc']}{',' if ':' in bs['cc'] else ':'}{bs['key']}={val}"
            if spec not in known:
                rep.note(f"chapter 2 backoff-factor study: {spec!r} rejected by the registry; skipped")
    if bs and len(df):
        df = df.assign(**{bs["key"]: df["cc"].str.rsplit("=", n=1).str[1]})
        mean = _curve_fig(
            rep, df, "half_width", "resbw-backoff-factor",
            f"Chapter 2: {bs['cc']} with {bs['key']} swept; residual bandwidth U({bs['mean']} - w, {bs['mean']} + w)",
            "half width w (pkt/s)",
        )  # fmt: skip
        rep.table(
            df, "resbw-backoff-factor", "Backoff-factor study (means over repetitions shown)", show=mean
        )


def _skipped(sections: dict, rep: _Report) -> None:
    """A note for every algorithm of the file that this build's registry does not know."""
    from ..models.studies import available

    for where, key in (("chapter 5", "rtt_scenarios"), ("chapter 6", "resbw")):
        for s in (sections.get(key) or {}).get("cc", []):
            if not available(s):
                rep.note(f"{where}: algorithm {s!r} is not in this build's registry; skipped")
    for st in (sections.get("rtt_scenarios") or {}).get("study", []):
        if not available(st["cc"]):
            rep.note(f"chapter 5 study {st['name']!r}: {st['cc']!r} is not in this build's registry; skipped")


def build(ctx) -> Report:
    """The study's report: its tables (also as CSV files beside it), figures and notes. Two
    datasets compared: every algorithm tagged with its dataset, both in every table and
    figure (the analytical curves are those of the first dataset's ``[models]``)."""
    import pandas as pd

    meta = ctx.datasets[0].experiment
    sections = meta.get("sections", {})
    runs_l, flows_l = [], []
    for i, ds in enumerate(ctx.datasets):
        res = ds.load()
        runs, flows = res.runs, res.flows
        if ctx.compare:
            for df in (runs, flows):
                if len(df) and "cc" in df:
                    df["cc"] = [ctx.tag(c, i) for c in df["cc"]]
        runs_l.append(runs)
        flows_l.append(flows)
    runs = pd.concat(runs_l, ignore_index=True) if ctx.compare else runs_l[0]
    flows = pd.concat(flows_l, ignore_index=True) if ctx.compare else flows_l[0]
    rep = _Report(ctx.log)
    _skipped(sections, rep)
    if "models" in sections:
        _models(sections["models"], runs, rep)
    if "rtt_scenarios" in sections:
        tr = flows[flows["block"] == "rtt-trace"] if len(flows) and "block" in flows else flows.iloc[0:0]
        if "flow_rtt_ms" in tr:  # the trace's RTT, named apart from the runs' rtt_ms setting
            tr = tr.drop(columns=["rtt_ms"], errors="ignore").rename(columns={"flow_rtt_ms": "rtt_ms"})
        _rtt(sections["rtt_scenarios"], runs, tr, rep)
    if "resbw" in sections:
        tr = flows[flows["block"] == "resbw-instant"] if len(flows) and "block" in flows else flows.iloc[0:0]
        _resbw(sections["resbw"], runs, tr, rep)
    title = meta.get("title") or meta.get("name", "makarem21")
    if ctx.compare:
        title = f"coapcc report: {ctx.names[0]} vs {ctx.names[1]}"
    return Report(
        title=title,
        description=meta.get("description", "") if not ctx.compare else "",
        overview=[
            ("datasets" if ctx.compare else "dataset", ", ".join(str(d.path) for d in ctx.datasets)),
            ("runs", len(runs)),
        ],
        notes=rep.notes,
        sections=rep.sections,
        files=rep.files,
    )
