"""The study's own figures: the drawing functions an experiment file names
(``figures = ["module:function", ...]``), shown by every kind's report after the claims.

Each function gets one dataset (:class:`coapcc.reports.Dataset`: it reads only the columns it
needs) and returns a list of :class:`coapcc.reports.Figure` (a drawing function each, drawn by
the builder like every figure of the report). With two datasets compared, each function runs
once per dataset, its figures tagged with the dataset's name. A function that cannot be
imported or fails leaves its figures out, with the reason in the report's notes: the report
is written whatever a study's figures do.

>>> # figures = ["coapcc.studies.tcp_thesis_figures:report_figures"]   (coap-tcp-thesis.toml)
"""

from __future__ import annotations

import importlib

from . import Figure, Section, Text

__all__ = ["study_figures"]


def _function(name: str):
    module, _, fn = name.partition(":")
    return getattr(importlib.import_module(module), fn)


def study_figures(ctx, notes: list[str]) -> Section | None:
    """The section of the study's own figures (None when the file names none); a function
    that fails adds a line to ``notes``."""
    names = list(ctx.datasets[0].experiment.get("figures") or [])
    if not names:
        return None
    items: list = []
    for name in names:
        ctx.progress(f"figures of {name}")
        for i, ds in enumerate(ctx.datasets):
            try:
                figs = list(_function(name)(ds))
            except Exception as e:  # noqa: BLE001 - a study's figures never stop its report
                notes.append(f"figures {name}: left out ({type(e).__name__}: {e})")
                break
            for f in figs:
                if not isinstance(f, Figure):
                    notes.append(f"figures {name}: left out (returned {type(f).__name__}, not a Figure)")
                    break
                if ctx.compare:
                    f.id, f.caption = f"{f.id}-{i + 1}", f"{f.caption} [{ds.name}]"
                items.append(f)
                ctx.draw(f)
    if not items:
        return None
    return Section(
        "study-figures",
        "The study's own figures",
        [Text(f"Drawn by {', '.join(names)} (named by the experiment file).", muted=True), *items],
    )
