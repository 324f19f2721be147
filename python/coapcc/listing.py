"""The catalogue as one table: ``coapcc reproduce --catalogue``.

Every entry ``coapcc reproduce NAME`` accepts, read from the catalogue itself: each experiment
file's title, its study kind (:mod:`coapcc.kinds`) and its planned runs with and without
``--quick`` (what :func:`coapcc.sweeper.plan` keeps: one per distinct configuration). The
output is a Markdown table; ``experiments/README.md`` holds it, and ``scripts/docs-check``
checks it is current.
"""

from __future__ import annotations

import sys

__all__ = ["catalogue_rows", "catalogue_markdown", "main"]


def _count(n: int) -> str:
    return f"{n:,}".replace(",", " ")


def catalogue_rows() -> list[dict]:
    """One row per entry: ``name``, ``title``, ``kind``, ``runs`` and ``quick`` (strings)."""
    from .experiment import PACKAGE_CATALOGUE, catalogue, load_experiment
    from .sweeper import plan

    rows = []
    for name, path in sorted(catalogue().items()):
        where = "" if path.parent == PACKAGE_CATALOGUE else f" ({path})"
        exp = load_experiment(path)
        rows.append(
            {
                "name": name,
                "title": exp.title + where,
                "kind": exp.kind,
                "runs": _count(len(plan(exp))),
                "quick": _count(len(plan(exp.quick_variant()))),
            }
        )
    return rows


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
