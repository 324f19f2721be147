"""Relative links between the pages lead somewhere: the file exists, and a ``#anchor`` names a
heading of the page it points to (GitHub's anchors: lower case, punctuation dropped, spaces
as hyphens)."""

from __future__ import annotations

import re
from pathlib import Path

from .blocks import outside_fences
from .run import Result

LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def anchor(heading: str) -> str:
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading)
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    out: set[str] = set()
    for _, line in outside_fences(path.read_text(encoding="utf-8")):
        m = HEADING.match(line)
        if m:
            a = anchor(m.group(1))
            n = 1
            base = a
            while a in out:  # GitHub numbers repeated headings
                a = f"{base}-{n}"
                n += 1
            out.add(a)
    return out


def check_links(repo: Path, pages: list[str]) -> list[Result]:
    out = []
    for page in pages:
        path = repo / page
        for line, text in outside_fences(path.read_text(encoding="utf-8")):
            for target in LINK.findall(re.sub(r"`[^`]*`", "", text)):
                if re.match(r"[a-z]+:", target):  # https:, mailto:
                    continue
                file, _, frag = target.partition("#")
                dest = (path.parent / file).resolve() if file else path
                where = f"{page}:{line}"
                if not dest.exists():
                    out.append(Result(where, "link", "failed", f"link to {target}: no such file"))
                elif frag and dest.suffix == ".md" and frag not in anchors(dest):
                    out.append(Result(where, "link", "failed", f"link to {target}: no heading #{frag} there"))
    return out
