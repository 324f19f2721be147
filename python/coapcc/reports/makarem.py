"""The report of Makarem's studies (``kind = "makarem-studies"``, ``experiments/makarem21.toml``).

The claims table opens it (the builder's, :mod:`coapcc.reports.claims`: the claims of
``experiments/claims/makarem21.toml`` measured on the dataset's study table,
:mod:`coapcc.models.tables`). Then, each drawn from the dataset's runs (and, for the analytical
curves, from the file's ``[models]`` section):

* chapters 3-4: the model figures, the required factor, the models against simulation,
  Table 4.1 and the Table 4.3 rows;
* chapter 5: the comparison per scenario, RTO against RTT for every scenario (and one scenario
  at length), the α × γ and K studies and every ``[[rtt_scenarios.study]]``;
* chapter 6: goodput, overhead and application loss against the residual bandwidth for Table
  6.1 and each set of Table 6.2 (the steady-state formulas over Table 6.1), the instantaneous
  behaviour, the high-variability runs, the stable-bandwidth runs and the backoff-factor study;
* the choices the thesis leaves open (``[sensitivity]``): every chapter 6 claim under each
  reading of the loss rule (a grid of verdicts, the Table 6.1 curves per reading), and the
  chapter 5 and 6 results with one choice changed.

The figures are :mod:`coapcc.figures.makarem`'s; each table is also written as a CSV file
beside the report. Two datasets compared: every algorithm tagged with its dataset in the
shared tables and figures; the studies' and sensitivity figures once per dataset.
"""

from __future__ import annotations

import numpy as np

from ..figures import makarem as FM
from ..models import loss
from . import Figure, Report, Section, Text, table

__all__ = ["build"]


class _Report:
    """Collects the report's sections, figures, tables (with their CSV files) and notes."""

    def __init__(self, ctx):
        self.ctx = ctx
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
        f = Figure(name, caption, draw)
        self._current().add(f)
        self.ctx.draw(f)  # drawn while the report goes on

    def table(self, df, name: str, caption: str, show=None):
        self.files[f"{name}.csv"] = df
        shown = df if show is None else show
        self._current().add(Text(f"{caption} ({name}.csv)"), table(shown))

    def note(self, text: str):
        self.notes.append(text)
        print(f"  note: {text}", file=self.ctx.log)

    def each(self, tables):
        """``(table, id suffix, caption suffix)`` for each dataset's own table."""
        for i, t in enumerate(tables):
            if self.ctx.compare:
                yield t, f"-{i + 1}", f" [{self.ctx.names[i]}]"
            else:
                yield t, "", ""


def _part(runs, part: str):
    return runs[runs["part"] == part] if len(runs) and "part" in runs else runs.iloc[0:0]


# -- chapters 3 and 4 ------------------------------------------------------------------------


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
    t41 = _part(runs, "table-4.1")
    if len(t41):
        cols = [
            "row",
            "p",
            "q",
            "k",
            "h",
            "P_L_exact",
            "paper_exact",
            "P_L_approx",
            "paper_approx",
            "P_L_closed",
        ]
        t41 = t41.sort_values("row")[[c for c in cols if c in t41]]
        rep.table(
            t41.reset_index(drop=True),
            "model-table-4-1",
            "Table 4.1 (r = 3): the exact 2-D chain, the approximate 1-D chain and the closed form (4.25) "
            "against the printed values",
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
        n = int(sim_runs["sim_messages"].iloc[0])
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


# -- chapter 5 -------------------------------------------------------------------------------

_RTT_COLS = ["scenario", "cc", "seed", "spurious", "spurious_messages", "rmse_ms", "transmissions", "messages", "gave_up", "late_acks", "mean_rto_ms", "mean_rtt_ms"]  # fmt: skip


def _rtt(c: dict, runs, own, traces, rep: _Report):
    rep.h("Chapter 5: RTO algorithms on the RTT scenarios of Table 5.1")
    if not c.get("trace"):
        rep.note(
            "chapter 5: scenarios 5 and 6 (real traces, unpublished) skipped; set rtt_scenarios.trace to a file"
        )
    rep.p(
        "The thesis's replay (the reliability layer's options as the file sets them: by default late ACKs are "
        "samples, an ACK's RTT is its copy's, every copy waits the RTO estimate, one scenario value per "
        "message). Spurious retransmissions are counted as the thesis counts them: one per transmission whose "
        "RTO is below its RTT (spurious_messages)."
    )
    main = runs[runs["block"] == "rtt-scenarios"] if len(runs) else runs
    if len(main):
        df = main.sort_values(["scenario", "block_index", "point", "replication"])
        df = df[[k for k in _RTT_COLS if k in df.columns]]
        ccs = list(dict.fromkeys(main.sort_values("point")["cc"]))
        per = (
            df.groupby(["scenario", "cc"], sort=False)[[FM.SPURIOUS, "spurious", "rmse_ms"]]
            .mean()
            .reset_index()
        )
        seeds = main["seed"].nunique()
        rep.table(
            df,
            "rtt-scenarios",
            f"Spurious retransmissions and RMSE(RTO, RTT) per scenario ({c.get('len')} messages each, {seeds} "
            "seed(s); the mean over the seeds shown)",
            show=per,
        )
        rep.fig(
            lambda: FM.rtt_scenarios(per, ccs),
            "rtt-scenarios",
            "Spurious retransmissions and RMSE per scenario (mean over the seeds)",
        )
    if len(traces):
        rep.fig(
            lambda: FM.rto_vs_rtt_grid(traces, title="RTO against RTT, first messages of each scenario"),
            "ch5-rto-vs-rtt",
            "RTO against RTT per scenario (first messages; the thesis's replay: RTO-only timers, late ACKs sampled)",
        )
        sc = int(c.get("plot", {}).get("scenario", 7))
        one = traces[traces["scenario"] == sc]
        if len(one):
            per_cc = {
                cc: g.sort_values("i").reset_index(drop=True) for cc, g in one.groupby("cc", sort=False)
            }
            rep.fig(
                lambda: FM.rto_vs_rtt(per_cc, f"Scenario {sc}: RTO against RTT"),
                f"rtt-rto-vs-rtt-s{sc}",
                f"RTO and RTT over time, scenario {sc}",
            )
    for t, sid, stag in rep.each(own):
        studies = set(t.loc[t["part"] == "rtt", "study"]) if "study" in t else set()
        if "weights" in studies:
            rep.fig(
                lambda t=t: FM.weight_study(t),
                f"ch5-weights{sid}",
                f"α × γ study of the final RTO (its scenarios){stag}",
            )
        if {"k-normal", "k-spurious"} & studies:
            rep.fig(
                lambda t=t: FM.k_study(t), f"ch5-k{sid}", f"K study of the final RTO (every scenario){stag}"
            )
    blocks = [b for b in dict.fromkeys(runs["block"]) if str(b).startswith("rtt-study-")] if len(runs) else []
    for b in blocks:
        df = runs[runs["block"] == b].sort_values(["point"])
        name = b[len("rtt-study-") :]
        cols = (
            "scenario",
            "cc",
            "setting",
            "spurious",
            FM.SPURIOUS,
            "rmse_ms",
            "transmissions",
            "messages",
            "gave_up",
        )
        summ = (
            df.groupby("setting", sort=False)[[FM.SPURIOUS, "rmse_ms"]]
            .mean()
            .reset_index()
            .rename(columns={FM.SPURIOUS: "spurious"})
        )
        rep.table(
            df[[k for k in cols if k in df]],
            f"rtt-study-{name}",
            f"Study {name}: {df['study_base'].iloc[0]} (mean over scenarios below)",
            show=summ,
        )
        rep.fig(
            lambda summ=summ: FM.rtt_study(summ),
            f"rtt-study-{name}",
            f"Study {name}: spurious retransmissions against RMSE",
        )


# -- chapter 6 -------------------------------------------------------------------------------

_RESBW_COLS = ["cc", "cc_spec", "family", "mean_resbw", "half_width", "replication", "seed", "goodput_pps", "overhead", "app_loss_ratio", "transmissions", "delivered", "gp_ratio", "loss_rule"]  # fmt: skip


def _means(df, x: str):
    return (
        df.groupby(["cc", x], sort=False)[["goodput_pps", "overhead", "app_loss_ratio"]].mean().reset_index()
    )


def _resbw(c: dict, runs, traces, rep: _Report):
    rep.h("Chapter 6: congestion counteraction under a varying residual bandwidth")
    bw = _part(runs, "resbw")
    bw = bw[bw["variant"] == "thesis"] if len(bw) else bw
    rule = ", ".join(sorted(set(bw["loss_rule"].dropna()))) if "loss_rule" in bw and len(bw) else "?"
    rep.p(
        f"The residual-bandwidth simulator's loss rule: {rule} (the thesis does not state it; [sensitivity] "
        "readings runs the whole chapter 6 study under the others). Curves: the mean over the repetitions, "
        "error bars their range."
    )
    bo = c.get("bad_only", {})

    def rows(set_name: str):
        df = bw[bw["set"] == set_name] if len(bw) else bw
        return (
            df.sort_values(["block", "point", "replication"])[[k for k in _RESBW_COLS if k in df]]
            if len(df)
            else df
        )

    df = rows("bad-only")
    if len(df):
        rep.fig(
            lambda: FM.resbw_curves(runs, set_name="bad-only", formulas=True),
            "resbw-bad-only",
            f"Table 6.1: bad periods only (exp. mean {bo.get('bad_mean_s')} s), residual bandwidth "
            f"U(M - {c.get('half_width')}, M + {c.get('half_width')}); {c.get('duration_s')} s runs, "
            f"{c.get('repetitions')} repetitions; (6.1) and the MBC steady state dashed",
        )
        rep.table(
            df,
            "resbw-bad-only",
            "Table 6.1 curves (means over repetitions shown)",
            show=_means(df, "mean_resbw"),
        )
    for s in c.get("sets", []):
        df = rows(s["name"])
        if not len(df):
            continue
        rep.fig(
            lambda name=s["name"]: FM.resbw_curves(runs, set_name=name),
            f"resbw-{s['name']}",
            f"Table 6.2 {s['name']}: good periods {c.get('good')} (exp. mean {s['good_mean_s']:g} s) alternating "
            f"with bad periods (exp. mean {s['bad_mean_s']:g} s)",
        )
        rep.table(
            df,
            f"resbw-{s['name']}",
            f"Table 6.2 {s['name']} (means over repetitions shown)",
            show=_means(df, "mean_resbw"),
        )
    if len(traces):
        ins = c.get("instant", {})
        ccs = list(dict.fromkeys(traces["cc"]))
        inst = runs[runs["block"] == "resbw-instant"]
        good = inst.set_index("cc")["goodput_pps"].to_dict()
        rep.fig(
            lambda: FM.resbw_instant(traces, ccs, good), "resbw-instant",
            f"Instantaneous behaviour: sending rate 1/(time since the previous send) of each transmission against the "
            f"residual bandwidth {ins.get('resbw')} (first {ins.get('window_s')} s; rates above 3 pkt/s drawn at 3)",
        )  # fmt: skip
    v = c.get("variability")
    df = rows("variability")
    if v and len(df):
        rep.fig(
            lambda: FM.resbw_curves(runs, set_name="variability", x="half_width"),
            "resbw-variability",
            f"Table 6.1 high-variability runs: mean {v['mean']} pkt/s, U(mean - w, mean + w)",
        )
        rep.table(
            df,
            "resbw-variability",
            "High-variability runs (means over repetitions shown)",
            show=_means(df, "half_width"),
        )
    df = rows("stable")
    if len(df):
        wide = df.pivot_table(index="cc", columns="mean_resbw", values="gp_ratio", aggfunc="mean", sort=False)
        wide.columns = [f"gp_ratio at {x:g} pkt/s" for x in wide.columns]
        rep.table(
            df,
            "resbw-stable",
            "A stable residual bandwidth: goodput / residual bandwidth (IDC-CoAP's steady state (6.1) is 0.791 "
            "for iw = 1.5, 0.862 for iw = 1.1; MBC-CoAP's 0.6885)",
            show=wide.reset_index(),
        )
    bs = c.get("backoff_study")
    df = rows("backoff-factor")
    if bs:
        known = set(df["cc_spec"]) if len(df) else set()
        for val in bs["values"]:
            spec = f"{bs['cc']}{',' if ':' in bs['cc'] else ':'}{bs['key']}={val}"
            if spec not in known:
                rep.note(f"chapter 2 backoff-factor study: {spec!r} rejected by the registry; skipped")
    if bs and len(df):
        df = df.assign(**{bs["key"]: df["cc_spec"].str.rsplit("=", n=1).str[1]})
        rep.fig(
            lambda: FM.resbw_curves(runs, set_name="backoff-factor", x="half_width"),
            "resbw-backoff-factor",
            f"Chapter 2: {bs['cc']} with {bs['key']} swept; residual bandwidth U({bs['mean']} - w, {bs['mean']} + w)",
        )
        rep.table(
            df,
            "resbw-backoff-factor",
            "Backoff-factor study (means over repetitions shown)",
            show=_means(df, "half_width"),
        )


# -- the choices the thesis leaves open ------------------------------------------------------


def _readings(sens: dict, own, rep: _Report):
    import pandas as pd

    from ..models.makarem21 import judge_readings

    names = [v["name"] for v in sens.get("readings", [])]
    if not names:
        return
    rep.h("The simulator's loss rule: every chapter 6 claim under each reading")
    rep.p(
        "The thesis does not state which transmissions its residual bandwidth lets through (M-AMBIG-15). "
        "delivered: lost iff 1/(time since the previous delivered transmission) exceeds the residual "
        "bandwidth (a lost packet does not use the capacity); rate-check: ... since the previous "
        "transmission, lost or not; token-bucket: a one-packet bucket filled at the residual bandwidth. "
        "The whole chapter 6 study ran under each; the study's reading is marked (preset). docs/makarem.md "
        "gives the mechanism argument for it."
    )
    every = []
    for t, sid, stag in rep.each(own):
        by = judge_readings(t, names)
        if by.empty:
            continue
        every.append(by.assign(dataset=stag.strip(" []")) if stag else by)
        rep.fig(
            lambda by=by: FM.readings_claims(by),
            f"ch6-readings-claims{sid}",
            f"Chapter 6 claims under each reading{stag}",
        )
        pairs = list(dict.fromkeys(zip(by["reading"], by["variant"])))
        rep.fig(
            lambda t=t, pairs=pairs: FM.readings_curves(t, pairs),
            f"ch6-readings-curves{sid}",
            f"Table 6.1 (bad periods only) under each reading: goodput, application loss, overhead{stag}",
        )
    if every:
        by = pd.concat(every, ignore_index=True)
        by["result"] = [
            f"{x:.3g} {v}" if isinstance(x, (int, float)) and x == x else v
            for x, v in zip(by["reproduced"], by["verdict"])
        ]
        index = ["claim", "dataset"] if "dataset" in by else ["claim"]
        wide = by.pivot_table(index=index, columns="reading", values="result", aggfunc="first", sort=False)
        rep.table(by, "ch6-readings", "Chapter 6 claims by reading", show=wide.reset_index())


def _sensitivity(sens: dict, own, rep: _Report):
    if not (sens.get("rtt") or sens.get("resbw")):
        return
    rep.h("Sensitivity to the choices the thesis leaves open")
    rep.p(
        "Each named choice changed alone against the defaults (the thesis's simulator: late ACKs are samples, an "
        "ACK's RTT is its copy's, chapter 5 timers are the RTO estimate, one scenario value per message, one RTT "
        "draw per transmission, the file's loss rule, loss_spacing0 = 0, BDP-CoAP's min weight the "
        "retransmissions' share of its window, pCoCoA's Block 2 decaying mdev_max after 8 Block 2 samples below it "
        "and δ = 0.5). Chapter 5: every scenario, first seed; chapter 6: bad periods only, one repetition."
    )
    names = [v["name"] for v in sens.get("resbw", [])]
    for t, sid, stag in rep.each(own):
        if sens.get("rtt"):
            rep.fig(
                lambda t=t: FM.rtt_sensitivity(t),
                f"sens-ch5{sid}",
                f"Chapter 5 shares under each choice{stag}",
            )
        if names:
            rep.fig(
                lambda t=t: FM.resbw_sensitivity(t, variants=names),
                f"sens-ch6-goodput{sid}",
                f"Chapter 6 goodput under each choice{stag}",
            )
            rep.fig(
                lambda t=t: FM.resbw_sensitivity(t, column="app_loss_ratio", variants=names),
                f"sens-ch6-loss{sid}",
                f"Chapter 6 application loss under each choice{stag}",
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
    for s in ((sections.get("resbw") or {}).get("stable") or {}).get("cc", []):
        if not available(s):
            rep.note(f"chapter 6 stable runs: algorithm {s!r} is not in this build's registry; skipped")
    sens = sections.get("sensitivity") or {}
    for v in [*sens.get("rtt", []), *sens.get("resbw", [])]:
        for s in v.get("cc", []):
            if not available(s):
                rep.note(
                    f"sensitivity {v.get('name')!r}: algorithm {s!r} is not in this build's registry; skipped"
                )


def _flows_of(flows, block: str, rename_rtt: bool = False):
    tr = flows[flows["block"] == block] if len(flows) and "block" in flows else flows.iloc[0:0]
    if rename_rtt and "trace_rtt_ms" in tr:  # the trace's RTT, named apart from the runs' rtt_ms setting
        tr = tr.drop(columns=["rtt_ms"], errors="ignore").rename(columns={"trace_rtt_ms": "rtt_ms"})
    return tr


def build(ctx) -> Report:
    """The study's report: its tables (also as CSV files beside it), figures and notes. Two
    datasets compared: every algorithm tagged with its dataset in the shared tables and
    figures (the analytical curves are those of the first dataset's ``[models]``), the
    studies' and sensitivity figures once per dataset."""
    import pandas as pd

    meta = ctx.datasets[0].experiment
    sections = meta.get("sections", {})
    own, runs_l, flows_l = [], [], []
    for i, ds in enumerate(ctx.datasets):
        ctx.progress(f"reading {ds.name}")
        res = ds.load()
        runs, flows = res.runs, res.flows
        for df in (runs, flows):  # integer columns that other parts' rows leave empty
            for col in ("scenario", "row", "r", "i"):
                if col in df and df[col].dtype.kind == "f":
                    df[col] = df[col].astype("Int64")
        own.append(runs.copy() if ctx.compare else runs)
        if ctx.compare:
            for df in (runs, flows):
                for col in ("cc", "cc_spec"):
                    if len(df) and col in df:
                        df[col] = [ctx.tag(c, i) for c in df[col]]
        runs_l.append(runs)
        flows_l.append(flows)
    runs = pd.concat(runs_l, ignore_index=True) if ctx.compare else runs_l[0]
    flows = pd.concat(flows_l, ignore_index=True) if ctx.compare else flows_l[0]
    rep = _Report(ctx)
    _skipped(sections, rep)
    ctx.progress("tables and figures")
    if "models" in sections:
        _models(sections["models"], runs, rep)
    if "rtt_scenarios" in sections:
        _rtt(sections["rtt_scenarios"], runs, own, _flows_of(flows, "rtt-trace", rename_rtt=True), rep)
    if "resbw" in sections:
        _resbw(sections["resbw"], runs, _flows_of(flows, "resbw-instant"), rep)
    if "sensitivity" in sections:
        _readings(sections["sensitivity"], own, rep)
        _sensitivity(sections["sensitivity"], own, rep)
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
