"""coapcc report: figures, tables, the self-contained HTML, rendered in headless Chromium."""

import base64
import os
import re
import shutil
import subprocess

import pytest

import coapcc
from coapcc.reports.cases import summary_table

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def report_path(tmp_path_factory):
    from conftest import TINY

    d = tmp_path_factory.mktemp("report")
    f = d / "tiny.toml"
    # 2 500 B buffer and 6 clients of a 2 s timer: congested enough to retransmit
    f.write_text(TINY.replace("exchanges = 4", "exchanges = 6"))
    coapcc.sweep(str(f), d / "res", workers=1, progress=False)
    return coapcc.report(d / "res", formats=("png", "svg", "pdf"))


def test_report_is_self_contained(report_path):
    html = report_path.read_text()
    imgs = re.findall(r'<img alt="([\w-]+)" src="data:image/png;base64,([A-Za-z0-9+/=]+)">', html)
    ids = [i for i, _ in imgs]
    assert ids[:4] == ["fct", "fct-ci", "fct-cdf", "fct-mixed"] and ids[-3:] == ["trace", "timeline", "queue"]
    # a figure with nothing to show is left out, with a note saying so
    for fig_id in ("retransmissions", "unnecessary", "histogram"):
        assert (fig_id in ids) != (f"<b>{fig_id}:</b> none" in html), fig_id
    for _, b64 in imgs:
        assert base64.b64decode(b64)[:8] == b"\x89PNG\r\n\x1a\n"
    assert "http://" not in html and "https://" not in html and "<link" not in html  # nothing external
    for needle in (
        "Summary per case",
        "fct_median",
        "fct_p10",
        "fct_p25",
        "fct_p75",
        "fct_p90",
        "experiment.toml",
        "Seeds",
        "config_hash",
        "pyarrow",
        "matplotlib",
        "coapcc",
        "reproduces dataset run",
        "Retransmissions per exchange",
        "Algorithms as run",
        "<th>max_retransmit</th>",
    ):
        assert needle in html, needle
    figs = report_path.parent / "figures"
    for ext, magic in (("png", b"\x89PNG"), ("svg", b"<?xml"), ("pdf", b"%PDF")):
        files = {p.stem: p for p in figs.glob(f"*.{ext}")}
        assert set(files) == set(ids), ext
        assert all(p.read_bytes().startswith(magic) for p in files.values()), ext
        assert f"figures/fct.{ext}" in html or ext == "png"
    assert (report_path.parent / "summary.csv").exists()
    # Every seed of the dataset is listed.
    res = coapcc.load_results(report_path.parent)
    for s in res.runs["seed"]:
        assert str(s) in html
    # The traced runs reproduce the dataset's runs exactly (same seed, same numbers).
    assert "<td>NO</td>" not in html and html.count("<td>yes</td>") == 2
    for col in ("fct_run_median_mean", "ci95", "jain"):
        assert f"<th>{col}</th>" in html


def _outline(html: str) -> list[str]:
    """The report's outline: its headings (by id), figures (by id) and tables (by their first
    three columns), in order."""
    out = []
    pattern = (
        r'<h([2-4]) id="([^"]+)"|<figure id="fig-([\w-]+)"|<table>\s*(?:<thead>)?\s*<tr>((?:<th>[^<]*</th>)+)'
    )
    for m in re.finditer(pattern, html):
        if m.group(1):
            out.append(f"h{m.group(1)} {m.group(2)}")
        elif m.group(3):
            out.append(f"figure {m.group(3)}")
        else:
            out.append("table " + ",".join(re.findall(r"<th>([^<]*)</th>", m.group(4))[:3]))
    return out


def test_report_keeps_every_figure_and_table(report_path):
    """The outline of the report, as the report before the figures were drawn in parallel
    from aggregated tables had it (the same experiment, by the same coapcc version's runs):
    every figure and table is still there, in the same order."""
    assert _outline(report_path.read_text()) == [
        "table dataset",
        "h2 figures",
        "figure fct",
        "figure fct-ci",
        "figure fct-cdf",
        "figure fct-mixed",
        "figure trace",
        "table algorithm,config_hash,client",
        "figure timeline",
        "figure queue",
        "h2 algorithms",
        "table label,algorithm,ack_timeout",
        "h2 summary",
        "table buffer_bytes,series,clients",
        "h2 retransmissions-per-exchange",
        "table buffer_bytes,algorithm,clients",
        "h2 configuration",
        "h3 configuration-tiny",
        "table experiment",
        "h4 seeds-tiny",
        "table block,point,replication",
        "h2 omitted",
        "h2 software",
        "table coapcc",
    ]


def test_summary_numbers(report_path):
    res = coapcc.load_results(report_path.parent)
    flows = res.flows.assign(series=res.flows["algorithm"])
    t = summary_table(flows, res.runs, ["buffer_bytes"])
    # one case order: buffer, then series in the experiment's order, then clients
    assert list(t[["buffer_bytes", "series", "clients"]].itertuples(index=False, name=None))[:4] == [
        (2500, "default", 1),
        (2500, "default", 6),
        (2500, "cocoa", 1),
        (2500, "cocoa", 6),
    ]
    row = t[(t["series"] == "cocoa") & (t["clients"] == 6) & (t["buffer_bytes"] == 2500)].iloc[0]
    fct = flows[(flows["algorithm"] == "cocoa") & (flows["clients"] == 6) & (flows["buffer_bytes"] == 2500)][
        "fct_s"
    ]
    assert row["flows"] == 12 and row["runs"] == 2
    assert row["fct_median"] == pytest.approx(fct.median())
    assert row["fct_p10"] == pytest.approx(fct.quantile(0.1)) and row["fct_p90"] == pytest.approx(
        fct.quantile(0.9)
    )
    # mean of the two runs' medians, and its 95 % interval (t with 1 degree of freedom)
    sel = flows[(flows["algorithm"] == "cocoa") & (flows["clients"] == 6) & (flows["buffer_bytes"] == 2500)]
    meds = sel.groupby("config_hash")["fct_s"].median()
    assert row["fct_run_median_mean"] == pytest.approx(meds.mean())
    assert row["ci95"] == pytest.approx(12.706 * meds.std() / 2**0.5)
    assert 1 / 6 <= row["jain"] <= 1


@pytest.mark.skipif(
    CHROMIUM is None and os.environ.get("CI") != "true",
    reason="chromium is not installed (scripts/system-packages.txt; scripts/setup as root); fails in CI",
)
def test_report_renders_in_headless_chromium(report_path, tmp_path):
    assert CHROMIUM is not None, "CI=true and chromium is not installed"
    n_imgs = report_path.read_text().count("<img ")
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
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=10000",
        "--dump-dom",
        report_path.resolve().as_uri(),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    # The report's inline script marks <body> once every image has decoded with a size.
    assert f'data-figures-loaded="{n_imgs}"' in r.stdout, r.stdout[:500]
    shot = tmp_path / "shot.png"
    cmd[-2:] = [f"--screenshot={shot}", "--window-size=1400,2000", report_path.resolve().as_uri()]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and shot.stat().st_size > 20_000


def test_queue_figure_of_the_traced_runs(report_path):
    """The traced runs carry queue records; the queue figure shows them, and the queue never
    exceeds the run's buffer."""
    html = report_path.read_text()
    assert 'alt="queue"' in html and "bytes in the buffer of each link direction" in html
    res = coapcc.load_results(report_path.parent)
    traces = sorted((report_path.parent / "traces").glob("*.jsonl"))
    assert len(traces) == 2
    for path in traces:
        q = coapcc.read_trace(path).queue
        assert set(q["direction"]) == {"uplink", "downlink"} and set(q["link"]) == {0}
        run = res.runs[res.runs["config_hash"] == path.stem].iloc[0]
        assert 0 < q["bytes"].max() <= run["buffer_bytes"]
        # every packet that entered left again: each direction ends empty
        last = q.groupby("direction").tail(1)
        assert (last["bytes"] == 0).all() and (last["packets"] == 0).all()


def test_report_without_trace_says_none_for_the_queue(report_path, tmp_path):
    out = coapcc.report(report_path.parent, tmp_path / "r.html", trace=False, formats=("svg",))
    html = out.read_text()
    assert 'alt="queue"' not in html and "<b>queue:</b> none" in html
    assert not (tmp_path / "figures" / "queue.svg").exists()


@pytest.mark.parametrize("workers", [1, 2])
def test_a_figure_that_fails_is_left_out_of_the_page(report_path, tmp_path, monkeypatch, workers):
    """The page is made while the figures are drawn, with placeholders for their images; a
    figure whose drawing fails is left out with its note, and no placeholder is left."""
    import coapcc.figures.flows as FF

    def broken(*a, **k):
        raise RuntimeError("no CDF today")

    monkeypatch.setattr(FF, "cdf_figure", broken)  # forked drawing processes inherit it
    out = coapcc.report(report_path.parent, tmp_path / "r.html", trace=False, workers=workers, progress=False)
    html = out.read_text()
    imgs = re.findall(r'<img alt="([\w-]+)" src="data:image/png;base64,([A-Za-z0-9+/=]+)">', html)
    ids = [i for i, _ in imgs]
    assert "fct-cdf" not in ids and ids[:3] == ["fct", "fct-ci", "fct-mixed"]
    assert "<b>fct-cdf:</b> drawing failed: RuntimeError: no CDF today" in html
    assert all(base64.b64decode(b)[:4] == b"\x89PNG" for _, b in imgs)
    assert not re.search(r"coapcc-[0-9a-f]{16}-", html)  # no placeholder left
    assert re.search(r"Report built in [0-9]+\.[0-9] s\.", html)


def test_jain_index():
    from coapcc.reports.cases import jain_index

    assert jain_index([1, 1, 1, 1]) == pytest.approx(1.0)
    assert jain_index([1, 0, 0, 0]) == pytest.approx(0.25)
    assert jain_index([2, 1, float("nan")]) == pytest.approx(9 / 10)


def test_compare_two_datasets(report_path, tmp_path):
    """`coapcc report A B`: both datasets side by side, each series tagged with its dataset."""
    from conftest import COAPCC, TINY

    f = tmp_path / "tiny2.toml"
    f.write_text(TINY.replace("exchanges = 4", "exchanges = 5").replace('name = "tiny"', 'name = "tiny5"'))
    coapcc.sweep(str(f), tmp_path / "res2", workers=1, progress=False)
    a = report_path.parent
    r = subprocess.run(
        [*COAPCC, "report", str(a), str(tmp_path / "res2"), "--no-trace", "--formats", "svg", "-q"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0 and r.stdout == "", r.stderr
    out = a / "compare-res2.html"
    html = out.read_text()
    assert "default [tiny]" in html and "default [tiny5]" in html
    assert "Comparison" in html and "fct_median ratio" in html
    assert (a / "figures-compare-res2" / "fct.svg").exists()
    assert not (a / "figures-compare-res2" / "fct.pdf").exists()
