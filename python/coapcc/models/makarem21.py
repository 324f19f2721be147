"""The makarem21 report's claims table and its chapter 5-6 figures.

:func:`claims_and_figures` builds the study table (:func:`coapcc.models.tables.study_table`),
stores it as a dataset in the report's folder (so ``coapcc validate makarem21 --dataset
DIR`` judges it later), judges the claims of ``experiments/claims/makarem21.toml`` on it, and
adds to a report (the ``_Report`` of :mod:`coapcc.models.reproduce`) the claims table, the
thesis's figures (:mod:`coapcc.models.figures`) and the sensitivity to the named choices.
"""

from __future__ import annotations

__all__ = ["claims_and_figures", "rtt_traces", "judge", "judge_readings", "CH6_CLAIMS"]

#: Id prefixes of the chapter 6 claims (those a reading of the loss rule can change).
CH6_CLAIMS = ("M5", "C6", "M6", "M7", "M8")


def rtt_traces(cfg: dict, seed: int):
    """RTO and RTT message by message for every scenario and algorithm of the chapter 5
    comparison (``rtt_scenarios.plot.count`` messages from ``first``): rows ``scenario, cc, i,
    t_s, rtt_ms, rto_ms, retransmissions``."""
    import pandas as pd

    from . import studies

    c = cfg["rtt_scenarios"]
    pl = c.get("plot", {})
    ccs = [s for s in c["cc"] if studies.available(s)]
    ids = c.get("scenarios") or [i for i in range(1, 41) if i not in (5, 6)]
    parts = []
    for sid in ids:
        for cc in ccs:
            t = studies.rtt_trace(
                cc, sid, seed=seed, first=pl.get("first", 0), count=pl.get("count", 1000), len=c.get("len")
            )
            t.insert(0, "cc", cc.partition(":")[0])
            t.insert(0, "scenario", sid)
            parts.append(t)
    return pd.concat(parts, ignore_index=True)


def judge(table):
    """The claims of makarem21 judged on ``table`` (a :func:`study_table`): a list of
    :class:`coapcc.claims.Verdict`."""
    from ..claims import evaluate, find_claims

    class _Results:
        runs = table
        flows = table

    return evaluate(find_claims("makarem21"), _Results())


def judge_readings(table, variants):
    """The chapter 6 claims judged under the study's own reading (``variant = "thesis"``) and
    under each of ``variants`` (names of whole chapter 6 studies in ``table``, the
    ``[sensitivity] readings`` of the experiment file): one row per (reading, claim) with
    ``reading`` (the loss rule, ``(preset)`` marking the study's), ``variant``, ``claim``,
    ``paper``, ``reproduced`` and ``verdict`` (a pandas DataFrame)."""
    import pandas as pd

    from ..claims import evaluate, find_claims

    claims = [c for c in find_claims("makarem21").claims if c.id.startswith(CH6_CLAIMS)]
    bw = table[table["part"] == "resbw"]
    rows = []
    for variant in ["thesis", *variants]:
        part = bw[bw["variant"] == variant]
        if part.empty:
            continue
        rule = str(part["loss_rule"].iloc[0]) if "loss_rule" in part else variant
        reading = f"{rule} (preset)" if variant == "thesis" else rule

        class _Results:
            runs = part.assign(variant="thesis")
            flows = runs

        for v in evaluate(claims, _Results()):
            rows.append(
                {
                    "reading": reading,
                    "variant": variant,
                    "claim": v.claim.id,
                    "paper": v.claim.paper,
                    "reproduced": v.reproduced,
                    "verdict": v.verdict,
                }
            )
    return pd.DataFrame(rows)


def claims_and_figures(cfg: dict, seed: int, rep) -> list:
    """Add the claims table and the chapter 5-6 figures to ``rep``; returns the verdicts."""
    from ..validation import verdicts_table
    from . import figures
    from .tables import study_table, write_dataset

    table = study_table(cfg, seed, log=rep.log)
    write_dataset(table, rep.out)
    verdicts = judge(table)
    vt = verdicts_table(verdicts)
    counts = vt["verdict"].value_counts().to_dict()
    rep.h("Published claims: paper against reproduction")
    rep.p(
        "Each statement of the thesis the study checks (experiments/claims/makarem21.toml), what the thesis "
        "says, what this run measures and the verdict: "
        + ", ".join(f"{n} {k}" for k, n in counts.items())
        + f" of {len(vt)}. The study's table is stored beside this report (runs/, flows/): "
        "`coapcc validate makarem21 --dataset <this folder>` judges it again. docs/makarem.md says, claim "
        "by claim, what agrees and why what does not."
    )
    shown = vt[["claim", "text", "paper", "reproduced", "expect", "verdict"]]
    rep.table(vt, "claims", "Claims (paper / reproduction / verdict)", show=shown)

    rep.h("Chapter 5: the thesis's figures")
    rep.fig(
        figures.rto_vs_rtt_grid(
            rtt_traces(cfg, seed), title="RTO against RTT, first messages of each scenario"
        ),
        "ch5-rto-vs-rtt",
        "RTO against RTT per scenario (first messages; the thesis's replay: RTO-only timers, late ACKs sampled)",
    )
    studies_run = set(table.loc[table["part"] == "rtt", "study"])
    if "weights" in studies_run:
        rep.fig(
            figures.weight_study(table), "ch5-weights", "α × γ study of the final RTO (scenarios 35 and 33)"
        )
    if {"k-normal", "k-spurious"} & studies_run:
        rep.fig(figures.k_study(table), "ch5-k", "K study of the final RTO (every scenario)")
    c = cfg["resbw"]
    rep.h("Chapter 6: goodput, overhead and application loss against the residual bandwidth")
    rep.fig(
        figures.resbw_curves(table, set_name="bad-only", formulas=True),
        "ch6-bad-only",
        "Table 6.1: bad periods only; (6.1) and the MBC steady state dashed",
    )
    for s in c.get("sets", []):
        rep.fig(
            figures.resbw_curves(table, set_name=s["name"]),
            f"ch6-{s['name']}",
            f"Table 6.2 {s['name']}: good periods {c['good']} (mean {s['good_mean_s']:g} s) alternating with bad "
            f"periods (mean {s['bad_mean_s']:g} s)",
        )
    sets_run = set(table.loc[table["part"] == "resbw", "set"])
    if "variability" in sets_run:
        rep.fig(
            figures.resbw_curves(table, set_name="variability", x="half_width"),
            "ch6-variability",
            "High variability: mean 1 pkt/s, U(1 - w, 1 + w)",
        )
    if not cfg.get("sensitivity"):
        return verdicts
    readings = [v["name"] for v in cfg["sensitivity"].get("readings", [])]
    if readings:
        by = judge_readings(table, readings)
        rep.h("The simulator's loss rule: every chapter 6 claim under each reading")
        rep.p(
            "The thesis does not state which transmissions its residual bandwidth lets through (M-AMBIG-15). "
            "delivered: lost iff 1/(time since the previous delivered transmission) exceeds the residual "
            "bandwidth (a lost packet does not use the capacity); rate-check: ... since the previous "
            "transmission, lost or not; token-bucket: a one-packet bucket filled at the residual bandwidth. "
            "The whole chapter 6 study ran under each; the study's reading is marked (preset). docs/makarem.md "
            "gives the mechanism argument for it."
        )
        rep.fig(figures.readings_claims(by), "ch6-readings-claims", "Chapter 6 claims under each reading")
        pairs = list(dict.fromkeys(zip(by["reading"], by["variant"])))
        rep.fig(
            figures.readings_curves(table, pairs),
            "ch6-readings-curves",
            "Table 6.1 (bad periods only) under each reading: goodput, application loss, overhead",
        )
        by["result"] = [
            f"{x:.3g} {v}" if isinstance(x, (int, float)) and x == x else v
            for x, v in zip(by["reproduced"], by["verdict"])
        ]
        wide = by.pivot_table(index="claim", columns="reading", values="result", aggfunc="first", sort=False)
        rep.table(by, "ch6-readings", "Chapter 6 claims by reading", show=wide.reset_index())
    rep.h("Sensitivity to the choices the thesis leaves open")
    rep.p(
        "Each named choice changed alone against the defaults (the thesis's simulator: late ACKs are samples, an "
        "ACK's RTT is its copy's, chapter 5 timers are the RTO estimate, one scenario value per message, one RTT "
        "draw per transmission, the delivered loss rule, loss_spacing0 = 0, BDP-CoAP's min weight the "
        "retransmissions' share of its window)."
    )
    if cfg["sensitivity"].get("rtt"):
        rep.fig(figures.rtt_sensitivity(table), "sens-ch5", "Chapter 5 shares under each choice")
    if cfg["sensitivity"].get("resbw"):
        names = [v["name"] for v in cfg["sensitivity"]["resbw"]]
        rep.fig(
            figures.resbw_sensitivity(table, variants=names),
            "sens-ch6-goodput",
            "Chapter 6 goodput under each choice",
        )
        rep.fig(
            figures.resbw_sensitivity(table, column="app_loss_ratio", variants=names),
            "sens-ch6-loss",
            "Chapter 6 application loss under each choice",
        )
    return verdicts
