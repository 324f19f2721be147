"""The catalogue as one table: ``coapcc reproduce --catalogue``.

Every entry ``coapcc reproduce NAME`` accepts, read from the catalogue itself (the experiment
files' titles, their planned runs with and without ``--quick``), plus the two studies that are
not experiment files of the sweep: ``sensitivity`` (its runs from :func:`coapcc.sensitivity.study`)
and ``makarem21`` (models and studies, :mod:`coapcc.models.reproduce`). The output is a Markdown
table; ``experiments/README.md`` holds it, and ``scripts/docs-check`` checks it is current.
"""

from __future__ import annotations

import sys

__all__ = ["catalogue_rows", "catalogue_markdown", "main"]


def _count(n: int) -> str:
    return f"{n:,}".replace(",", " ")


def catalogue_rows() -> list[dict]:
    """One row per entry: ``name``, ``title``, ``kind``, ``runs`` and ``quick`` (strings)."""
    from .experiment import PACKAGE_CATALOGUE, catalogue, load_experiment
    from .models.reproduce import _toml_load
    from .sensitivity import study
    from .sweeper import plan

    rows = []
    for name, path in sorted(catalogue().items()):
        where = "" if path.parent == PACKAGE_CATALOGUE else f" ({path})"
        data = _toml_load(path)
        if data.get("kind") == "makarem-studies":
            rows.append(
                {
                    "name": name,
                    "title": str(data.get("title", "")) + where,
                    "kind": "models and studies",
                    "runs": "not a sweep",
                    "quick": "shorter runs",
                }
            )
            continue
        exp = load_experiment(path)
        rows.append(
            {
                "name": name,
                "title": exp.title + where,
                "kind": "mesh sweep" if exp.kind == "mesh" else "sweep",
                "runs": _count(len(plan(exp))),
                "quick": _count(len(plan(exp.quick_variant()))),
            }
        )
    rows.append(
        {
            "name": "sensitivity",
            "title": "Error-model sensitivity of the FASOR paper's error runs (burst sojourn and burst length)",
            "kind": "study",
            "runs": _count(len(study().tasks())),
            "quick": _count(len(study(quick=True).tasks())),
        }
    )
    return sorted(rows, key=lambda r: r["name"])


def catalogue_markdown() -> str:
    lines = [
        "| Entry | Study | Kind | Runs | `--quick` runs |",
        "|---|---|---|---|---|",
    ]
    for r in catalogue_rows():
        lines.append(f"| `{r['name']}` | {r['title']} | {r['kind']} | {r['runs']} | {r['quick']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    print(catalogue_markdown())
    sys.stdout.flush()
    return 0
