"""coapcc report: figures, tables, the self-contained HTML, rendered in headless Chromium."""

import base64
import re
import shutil
import subprocess

import pytest

import coapcc
from coapcc.reporting import summary_table
from conftest import needs_sim

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def report_path(tmp_path_factory):
    if not coapcc.runner.have_simulator():
        pytest.skip("this build of coapcc._native has no simulate_json")
    from conftest import TINY

    d = tmp_path_factory.mktemp("report")
    f = d / "tiny.toml"
    f.write_text(TINY.replace("exchanges = 4", "exchanges = 6"))
    coapcc.sweep(str(f), d / "res", workers=1, progress=False)
    return coapcc.report(d / "res")


@needs_sim
def test_report_is_self_contained(report_path):
    html = report_path.read_text()
    imgs = re.findall(r"<img alt='([\w-]+)' src='data:image/png;base64,([A-Za-z0-9+/=]+)'>", html)
    assert [i for i, _ in imgs] == [
        "fct",
        "fct-mixed",
        "retransmissions",
        "unnecessary",
        "histogram",
        "trace",
    ]
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
    ):
        assert needle in html, needle
    figs = report_path.parent / "figures"
    assert {p.stem for p in figs.glob("*.png")} == {i for i, _ in imgs}
    assert (report_path.parent / "summary.csv").exists()
    # Every seed of the dataset is listed.
    res = coapcc.load_results(report_path.parent)
    for s in res.runs["seed"]:
        assert str(s) in html
    # The traced runs reproduce the dataset's runs exactly (same seed, same numbers).
    assert "<td>NO</td>" not in html and html.count("<td>yes</td>") == 2


@needs_sim
def test_summary_numbers(report_path):
    res = coapcc.load_results(report_path.parent)
    flows = res.flows.assign(series=res.flows["algorithm"])
    t = summary_table(flows, res.runs, ["buffer_bytes"])
    row = t[(t["series"] == "cocoa") & (t["clients"] == 6) & (t["buffer_bytes"] == 2500)].iloc[0]
    fct = flows[(flows["algorithm"] == "cocoa") & (flows["clients"] == 6) & (flows["buffer_bytes"] == 2500)][
        "fct_s"
    ]
    assert row["flows"] == 12 and row["runs"] == 2
    assert row["fct_median"] == pytest.approx(fct.median())
    assert row["fct_p10"] == pytest.approx(fct.quantile(0.1)) and row["fct_p90"] == pytest.approx(
        fct.quantile(0.9)
    )


@needs_sim
@pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (scripts/system-packages.txt; scripts/setup as root)"
)
def test_report_renders_in_headless_chromium(report_path, tmp_path):
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
