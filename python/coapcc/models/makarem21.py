"""The makarem21 study's chapter 6 claims under each reading of the residual-bandwidth
simulator's loss rule (:func:`judge_readings`), for the report's grid of claims against
readings (:mod:`coapcc.reports.makarem`). The claims themselves open the report like every
study's (:mod:`coapcc.reports.claims`), measured on the dataset's study table
(:mod:`coapcc.models.tables`).
"""

from __future__ import annotations

__all__ = ["judge_readings", "CH6_CLAIMS"]

#: Id prefixes of the chapter 6 claims (those a reading of the loss rule can change).
CH6_CLAIMS = ("M5", "C6", "M6", "M7", "M8")


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
