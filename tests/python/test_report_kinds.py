"""The one report builder, for every study kind: the claims table that opens a report, two
datasets of a kind compared (and two kinds refused), the strict template, and every kind's
report (and comparison) opened in headless Chromium with every image loaded."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

import coapcc
from conftest import COAPCC
from conftest import TINY as SIM_TINY
from test_mesh_study import TINY as MESH_TINY
from test_models_studies import TINY as MAKAREM_TINY
from test_sensitivity import TINY as SENS_TINY

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

#: Each kind's tiny experiment, swept in its --quick variant where it has one.
KINDS = {
    "sim": (SIM_TINY, True),
    "mesh": (MESH_TINY, True),
    "sensitivity": (SENS_TINY, False),
    "makarem-studies": (MAKAREM_TINY, True),
}


def _variant(text: str, n: int) -> str:
    """The experiment under another name and seed (a second dataset of the kind)."""
    text = re.sub(r'^name = "([^"]+)"', rf'name = "\1-{n}"', text, count=1, flags=re.M)
    return re.sub(r"^seed = (\d+)", lambda m: f"seed = {int(m.group(1)) + n}", text, count=1, flags=re.M)


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """Two small datasets of every kind: ``{kind: (A, B)}``."""
    d = tmp_path_factory.mktemp("kinds")
    out = {}
    for kind, (text, quick) in KINDS.items():
        pair = []
        for n in (0, 1):
            f = d / f"{kind}-{n}.toml"
            f.write_text(text if n == 0 else _variant(text, n))
            res = d / f"{kind}-{n}"
            coapcc.sweep(str(f), res, quick=quick, workers=2, progress=False)
            pair.append(res)
        out[kind] = tuple(pair)
    return out


@pytest.fixture(scope="module")
def reports(datasets, tmp_path_factory):
    """Every kind's report, and its comparison of the two datasets: ``{name: html path}``."""
    out = {}
    for kind, (a, b) in datasets.items():
        out[kind] = coapcc.report(a, progress=False)
        out[f"{kind} compared"] = coapcc.report(a, compare=b, trace=False, progress=False)
    return out


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_compares_two_datasets(reports, datasets, kind):
    a, b = datasets[kind]
    path = reports[f"{kind} compared"]
    assert path == a / f"compare-{b.name}.html"
    html = path.read_text()
    names = [coapcc.load_results(p, flow_columns=()).experiment["name"] for p in (a, b)]
    assert f"{names[0]} vs {names[1]}" in html
    # the figures of a comparison are its own, beside the dataset's
    figs = a / f"figures-{path.stem}"
    imgs = re.findall(r'<img alt="([\w-]+)" src="data:image/png;base64,', html)
    assert imgs and {p.stem for p in figs.glob("*.png")} == set(imgs)
    # both datasets' series are there, tagged with the dataset's name
    for n in names:
        assert f"[{n}]" in html or f">{n}<" in html, n


def test_comparing_two_kinds_is_refused(datasets):
    r = subprocess.run(
        [*COAPCC, "report", str(datasets["sim"][0]), str(datasets["mesh"][0]), "-q"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2
    assert "only datasets of the same kind of study can be compared" in r.stderr
    assert "'sim'" in r.stderr and "'mesh'" in r.stderr and "Traceback" not in r.stderr


CLAIMS = """
study = "tiny-quick"
source = "a test of the report's claims table"

[[claim]]
id = "fct-finite"
text = "Default CoAP's median FCT is positive"
where = "nowhere"
paper = 1.0
expect = ">"
value = 0.0
unit = "s"
measure = "stat"
[claim.args]
column = "fct_s"
where = { algorithm = "default", groups = "" }

[[claim]]
id = "fct-tiny"
text = "Default CoAP's median FCT is 1 ms"
paper = 0.001
tolerance = 0.01
unit = "s"
measure = "stat"
[claim.args]
column = "fct_s"
where = { algorithm = "default", groups = "" }

[[claim]]
id = "no-such-buffer"
text = "runs the quick variant does not have"
paper = 1.0
tolerance = 0.1
measure = "stat"
[claim.args]
column = "fct_s"
where = { buffer_bytes = 999 }

[[claim]]
id = "no-such-column"
text = "a column no dataset has"
paper = 1.0
tolerance = 0.1
measure = "stat"
[claim.args]
column = "warp_factor"
"""


def _claims_rows(html: str) -> dict:
    """The claims table's rows by claim id (cells as text)."""
    start = html.index('<h2 id="claims">')
    table = html[start : html.index("</table>", start)]
    rows = {}
    for tr in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)[1:]:
        cells = re.findall(r"<td>(.*?)</td>", tr, flags=re.S)
        rows[cells[0]] = cells
    return rows


def test_claims_open_the_report_and_missing_data_is_missing(datasets, tmp_path, monkeypatch):
    a, b = datasets["sim"]
    claims = tmp_path / "tiny.toml"
    claims.write_text(CLAIMS)
    html = coapcc.report(a, tmp_path / "r.html", claims=claims, trace=False, progress=False).read_text()
    # the claims are the report's first section
    h2 = re.findall(r'<h2 id="([\w-]+)">', html)
    assert h2[0] == "claims", h2
    rows = _claims_rows(html)
    assert list(rows) == ["fct-finite", "fct-tiny", "no-such-buffer", "no-such-column"]
    verdict = {k: r[6] for k, r in rows.items()}
    assert verdict == {
        "fct-finite": "holds",
        "fct-tiny": "off",
        "no-such-buffer": "missing",
        "no-such-column": "missing",
    }
    # the reproduction is the dataset's value
    res = coapcc.load_results(a)
    f = res.flows[(res.flows["algorithm"] == "default") & (res.flows["groups"] == "")]
    assert rows["fct-tiny"][5] == f"{f['fct_s'].median():.4g}"
    assert "cannot be measured" in rows["no-such-column"][7] and "warp_factor" in rows["no-such-column"][7]
    assert rows["no-such-buffer"][5] == "–"
    assert "1 holds, 1 off, 2 missing of 4 claims" in html
    # two datasets: each one's reproduction and verdict
    cmp = coapcc.report(
        a, tmp_path / "c.html", compare=b, claims=claims, trace=False, progress=False
    ).read_text()
    head = cmp[cmp.index('<h2 id="claims">') :]
    assert "verdict [tiny-quick]" in head and "verdict [tiny-1-quick]" in head
    # A study's packaged claims open its report without being named; --no-claims leaves them out.
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    shutil.copy(claims, pkg / "tiny.toml")
    monkeypatch.setattr("coapcc.claims.claims_catalogue", lambda: {"tiny": pkg / "tiny.toml"})
    html = coapcc.report(a, tmp_path / "p.html", trace=False, progress=False).read_text()
    assert re.findall(r'<h2 id="([\w-]+)">', html)[0] == "claims"
    html = coapcc.report(a, tmp_path / "n.html", trace=False, claims=False, progress=False).read_text()
    assert 'id="claims"' not in html
    # from the command line
    r = subprocess.run(
        [
            *COAPCC,
            "report",
            str(a),
            "-o",
            str(tmp_path / "cli.html"),
            "--claims",
            str(claims),
            "--no-trace",
            "-q",
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert _claims_rows((tmp_path / "cli.html").read_text())["fct-finite"][6] == "holds"


def test_the_template_is_strict():
    """A name the document lacks is an error, never an empty string in the report."""
    import jinja2

    from coapcc.reporting import _render

    with pytest.raises(jinja2.UndefinedError):
        _render(title="t", description="", overview=[], warnings=[], notes=[], sections=[], omitted=[])


def test_no_html_outside_the_template():
    """Reports build no HTML in Python: markup is the template's."""
    import coapcc.reports as pkg

    root = os.path.dirname(pkg.__file__)
    here = [os.path.join(root, f) for f in os.listdir(root) if f.endswith(".py")]
    here += [os.path.join(os.path.dirname(root), m) for m in ("reporting.py", "drawing.py", "sensitivity.py")]
    fig_root = os.path.join(os.path.dirname(root), "figures")
    here += [os.path.join(fig_root, f) for f in os.listdir(fig_root) if f.endswith(".py")]
    for path in here:
        with open(path) as f:
            text = f.read()
        for tag in ("<h1", "<h2", "<p>", "<table", "<img", "<figure", "to_html(", "html.escape"):
            assert tag not in text, (path, tag)


@pytest.mark.skipif(
    CHROMIUM is None and os.environ.get("CI") != "true",
    reason="chromium is not installed (scripts/system-packages.txt; scripts/setup as root); fails in CI",
)
def test_every_kind_opens_in_headless_chromium(reports, tmp_path):
    """Every kind's report and comparison, opened at once in headless Chromium: every image
    decodes with a size (the report's script marks <body> when they have)."""
    assert CHROMIUM is not None, "CI=true and chromium is not installed"
    procs = {}
    for i, (name, path) in enumerate(reports.items()):
        cmd = [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-dev-shm-usage",
            f"--user-data-dir={tmp_path / f'profile-{i}'}",
            "--virtual-time-budget=10000",
            "--dump-dom",
            path.resolve().as_uri(),
        ]
        procs[name] = (path, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for name, (path, p) in procs.items():
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, (name, err[-2000:])
        n_imgs = path.read_text().count("<img ")
        assert n_imgs > 0, name
        assert f'data-figures-loaded="{n_imgs}"' in out, (name, out[:300])
