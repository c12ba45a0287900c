"""The report website in a real browser (Debian's headless Chromium, driven
by Playwright; scripts/install-deps.sh installs the browser,
scripts/ensure-python-deps.py the driver), at a desktop width (1,400 px)
and a phone's (390 px): the page never scrolls sideways, no word is broken
inside (each word's rendered line boxes lie on one line), every image
loads, verdicts are coloured, latency headers name their unit, plots sit
side by side on a desktop and stack on a phone, and a click enlarges one.

Checked on a site built from a small results directory here, on the
published report (docs/report, when docs/results is committed) and on every
site named in $NETSCHED_REPORT_SITES (scripts/test.sh: CI's reduced run).
As root (CI) a missing browser is a failure, not a skip."""
import os
import shutil
from pathlib import Path

import pytest

from netsched.report import build_site

REPO = Path(__file__).resolve().parents[2]
WIDTHS = (1400, 390)
# Generous: a busy 2-core machine starts a browser slowly; no verdict here
# depends on time.
LAUNCH_MS, PAGE_MS = 180_000, 120_000
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# Runs in the page; returns a list of problems, empty when the page is right.
CHECK = r"""() => {
  const bad = [];
  const de = document.documentElement;
  if (de.scrollWidth > de.clientWidth)
    bad.push(`the page scrolls sideways: ${de.scrollWidth} px of content in ${de.clientWidth} px`);
  for (const img of document.images)
    if (!img.complete || img.naturalWidth === 0) bad.push(`image not loaded: ${img.getAttribute("src")}`);
  for (const el of document.querySelectorAll("body *")) {
    const s = getComputedStyle(el);
    if (s.overflowWrap === "anywhere" || s.wordBreak === "break-all" || s.wordBreak === "break-word")
      bad.push(`<${el.tagName.toLowerCase()}> may break words anywhere`);
  }
  // Words: runs between spaces, hyphens, dashes and slashes (where a line
  // may break); a word whose boxes lie on two lines was broken inside.
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  const word = /[^\s\-\u2010-\u2015\/]{2,}/g;
  let n;
  while ((n = walk.nextNode())) {
    const el = n.parentElement;
    if (!el || el.closest("script, style, dialog")) continue;
    word.lastIndex = 0;
    let m;
    while ((m = word.exec(n.data))) {
      range.setStart(n, m.index);
      range.setEnd(n, m.index + m[0].length);
      const boxes = [...range.getClientRects()].filter(r => r.width > 0 && r.height > 0);
      if (boxes.some(r => Math.abs(r.top - boxes[0].top) > boxes[0].height / 2))
        bad.push(`word broken across lines: "${m[0]}" in <${el.tagName.toLowerCase()}>`);
    }
  }
  // A latency header names its unit ("p50 (µs)"); ratios ("a / b p50") have none.
  for (const th of document.querySelectorAll("th")) {
    const t = th.textContent;
    if (/\b(p\d{2,3}(\.\d+)?|mean|median|latency|response)\b/i.test(t) &&
        !/[\/×]|ratio|imbalance/i.test(t) && !/\([^)]+\)\s*$/.test(t))
      bad.push(`latency header without a unit: "${t}"`);
  }
  for (const v of document.querySelectorAll(".verdict")) {
    const bg = getComputedStyle(v).backgroundColor;
    if (bg === "rgba(0, 0, 0, 0)" || bg === "transparent") bad.push(`verdict "${v.textContent}" has no colour`);
  }
  return bad;
}"""

# The plots' positions: [left, top, width] of each figure.
FIGURES = "() => [...document.querySelectorAll('.plots figure')].map(f => {" \
          "const r = f.getBoundingClientRect(); return [r.left, r.top, r.width]; })"


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.geteuid() == 0:
            pytest.fail("chromium not installed (scripts/install-deps.sh installs it)")
        pytest.skip("chromium not installed")
    return exe


def _sites(tmp_path_factory) -> list:
    """Every site to check: the published one (docs/report, committed
    beside docs/results), then those named in $NETSCHED_REPORT_SITES."""
    sites = []
    if (REPO / "docs" / "results").is_dir():
        assert (REPO / "docs" / "report" / "index.html").exists(), \
            "docs/results is committed without its report: python3 -m netsched report " \
            "--results docs/results --out docs/report"
        sites.append(REPO / "docs" / "report")
    for s in filter(None, os.environ.get("NETSCHED_REPORT_SITES", "").split(os.pathsep)):
        assert (Path(s) / "index.html").exists(), f"$NETSCHED_REPORT_SITES names {s}, no site there"
        sites.append(Path(s).resolve())
    return sites


def check_site(site: Path, tmp: Path) -> list:
    """Every page of `site` at every width: a list of "page @ width: problem"."""
    from playwright.sync_api import sync_playwright

    exe = _chromium()
    pages = sorted(site.glob("*.html"))
    assert pages, f"{site}: no pages"
    problems = []
    with sync_playwright() as pw:
        for w in WIDTHS:
            ctx = pw.chromium.launch_persistent_context(
                str(tmp / f"profile-{w}"), executable_path=exe, headless=True, args=FLAGS,
                viewport={"width": w, "height": 900}, timeout=LAUNCH_MS)
            try:
                page = ctx.new_page()
                page.set_default_timeout(PAGE_MS)
                for p in pages:
                    page.goto(p.as_uri(), wait_until="load")
                    problems += [f"{p.name} @ {w} px: {b}" for b in page.evaluate(CHECK)]
            finally:
                ctx.close()
    return problems


def test_the_site_reads_well_at_desktop_and_phone_width(report_results, tmp_path):
    results, _ = report_results
    site = tmp_path / "site"
    assert build_site(str(results), str(site)) == 2
    assert check_site(site, tmp_path) == []
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        for w in WIDTHS:
            ctx = pw.chromium.launch_persistent_context(
                str(tmp_path / f"p2-{w}"), executable_path=_chromium(), headless=True,
                args=FLAGS, viewport={"width": w, "height": 900}, timeout=LAUNCH_MS)
            try:
                page = ctx.new_page()
                page.set_default_timeout(PAGE_MS)
                page.goto((site / "horus-fig11.html").as_uri(), wait_until="load")
                figs = page.evaluate(FIGURES)
                assert len(figs) == 2
                if w == 1400:  # side by side
                    assert figs[0][1] == figs[1][1] and figs[0][0] < figs[1][0], figs
                else:  # stacked, each as wide as the screen allows
                    assert figs[0][0] == figs[1][0] and figs[0][1] < figs[1][1], figs
                    assert all(f[2] <= w for f in figs), figs
                # A click shows the plot larger than on the page: at its own
                # size, or the screen's width if that is larger.
                page.click(".plots figure a.zoom")
                big = page.wait_for_selector("dialog#zoom[open] img")
                page.wait_for_function(
                    "() => document.querySelector('dialog#zoom img').naturalWidth > 0")
                natural, shown = big.evaluate("i => [i.naturalWidth, i.getBoundingClientRect().width]")
                assert shown > figs[0][2] and shown >= min(natural, 0.96 * w) - 1, (natural, shown, figs)
                page.keyboard.press("Escape")
                page.wait_for_selector("dialog#zoom", state="hidden")
            finally:
                ctx.close()


def test_a_broken_layout_is_caught(report_results, tmp_path):
    """The checks can fail: a stylesheet that breaks words anywhere and a
    missing plot are both reported."""
    results, _ = report_results
    site = tmp_path / "site"
    build_site(str(results), str(site))
    css = site / "report.css"
    css.write_text(css.read_text() + "\ntd, p { overflow-wrap: anywhere; } .scroll { overflow: visible; }"
                   "\ntd.why { min-width: 0; width: 3em; }")
    (results / "horus-fig2.png").unlink()
    problems = "\n".join(check_site(site, tmp_path))
    assert "may break words anywhere" in problems
    assert "image not loaded: ../results/horus-fig2.png" in problems
    assert "the page scrolls sideways" in problems
    assert "word broken across lines" in problems


def test_the_published_and_ci_reports_read_well(tmp_path_factory, tmp_path):
    sites = _sites(tmp_path_factory)
    if not sites:
        pytest.skip("no published results (docs/results) and no $NETSCHED_REPORT_SITES")
    for s in sites:
        assert check_site(s, tmp_path) == [], s
