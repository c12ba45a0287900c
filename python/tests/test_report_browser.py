"""The HTML report in a real browser: at desktop width the page itself never
scrolls sideways (wide tables scroll inside their box), and it opens with the
agreement summary. Headless Debian Chromium (scripts/install-deps.sh installs
it); as root (CI) a missing browser is a failure, not a skip."""
import json
import os
import re
import shutil
import subprocess

import pytest

from netsched.report import build_report

WIDTH = 1280
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--window-size={WIDTH},900"]


def _chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.geteuid() == 0:
            pytest.fail("chromium not installed (scripts/install-deps.sh installs it)")
        pytest.skip("chromium not installed")
    return exe


def _results(tmp_path):
    """Two entries, one with a table far wider than the page."""
    root = tmp_path / "results"
    root.mkdir()
    wide = "| " + " | ".join(f"column_{i}_p99_us" for i in range(40)) + " |\n"
    wide += "|" + "---|" * 40 + "\n"
    wide += "| " + " | ".join(f"{1234567.0 + i:,.0f}" for i in range(40)) + " |\n"
    (root / "horus-fig10.md").write_text("# horus-fig10: P Fig. 10\n\n" + wide)
    (root / "horus-fig2.md").write_text("# horus-fig2: P Fig. 2\n\nplain\n")
    claims = [{"key": "s", "kind": "numeric", "verdict": "agrees"},
              {"key": "s2", "kind": "numeric", "verdict": "differs"}]
    for n in ("horus-fig10", "horus-fig2"):
        (root / f"{n}.json").write_text(json.dumps({"claims": claims}))
    return root


def test_the_report_has_no_horizontal_page_scroll_at_desktop_width(tmp_path):
    exe = _chromium()
    out = tmp_path / "report.html"
    assert build_report(str(_results(tmp_path)), str(out)) == 2
    html = out.read_text()
    # Entries in natural order with name anchors, the summary first.
    assert html.index('id="horus-fig2"') < html.index('id="horus-fig10"')
    assert html.index("Claims within tolerance") < html.index('id="horus-fig2"')
    assert "<th>all</th><th>2</th><th>4</th><th>0</th>" in html
    assert "(.)" not in html
    probe = tmp_path / "probe.html"
    probe.write_text(html.replace(
        "</body>", "<script>document.title = 'W:' + document.documentElement.scrollWidth + ':' "
                   "+ document.documentElement.clientWidth;</script></body>"))
    run = [exe, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    r = subprocess.run(run + ["--dump-dom", probe.as_uri()], capture_output=True, text=True,
                       timeout=120)
    m = re.search(r"<title>W:(\d+):(\d+)</title>", r.stdout)
    assert m, f"no measurement from chromium: {r.stderr[-2000:]}"
    scroll, client = int(m.group(1)), int(m.group(2))
    assert client > 1000, (scroll, client)
    assert scroll <= client, f"the page scrolls sideways: {scroll} px of content in {client} px"
    shot = tmp_path / "report.png"
    subprocess.run(run + [f"--screenshot={shot}", out.as_uri()], capture_output=True,
                   timeout=120, check=True)
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == WIDTH
