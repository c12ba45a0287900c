"""The report website's content (the browser test checks its layout) and
the README's generated numbers."""
import json
import re
from pathlib import Path

import netsched
from netsched.readme import BEGIN, END, block_of, counts_text, replace_block
from netsched.report import build_site, compact_markup, header_label, render_markdown

REPO = Path(__file__).resolve().parents[2]


def test_pages_fold_the_breaks_between_tags_but_not_text_or_scripts():
    page = ("<table>\n<tr>\n  <td>a</td>\n  <td><b>x</b>\n<i>y</i></td>\n</tr>\n</table>\n"
            "<p>one line\nand the next</p>\n"
            "<script>\nif (a >\n  b) {}\nx = '<b>'\n</script>\n<pre>\n<b>kept</b>\n</pre>")
    out = compact_markup(page)
    # Between tags: one space, which is what the browser renders anyway.
    assert out.startswith("<table> <tr> <td>a</td> <td><b>x</b> <i>y</i></td> </tr> </table> <p>")
    assert "<p>one line\nand the next</p>" in out
    assert "<script>\nif (a >\n  b) {}\nx = '<b>'\n</script>" in out
    assert "<pre>\n<b>kept</b>\n</pre>" in out


def test_headers_name_their_units():
    assert header_label("p99_us") == "p99 (µs)"
    assert header_label("median_p50_ns") == "median_p50 (ns)"
    assert header_label("share_pct") == "share (%)"
    assert header_label("load") == "load"
    html = render_markdown("| load | p50_us |\n|---|---|\n| 0.5 | 502 |\n")
    assert "<th>p50 (µs)</th>" in html
    # A header naming a data column's metric gets that column's unit; ratios none.
    html = render_markdown("| load | horus (sim) p99 | horus / sim p99 |\n|---|---|---|\n"
                           "| 1 | 2 | 3 |\n", {"p99": "µs"})
    assert "<th>horus (sim) p99 (µs)</th>" in html and "<th>horus / sim p99</th>" in html
    assert html.startswith('<div class="scroll"><table>')


def test_entry_pages_draw_claims_from_the_json(report_results, tmp_path):
    results, _ = report_results
    site = tmp_path / "site"
    assert build_site(str(results), str(site)) == 2
    index = (site / "index.html").read_text()
    page = (site / "horus-fig11.html").read_text()
    # Catalog order (fig2 before fig11) and a bar per tier for each entry.
    assert index.index('href="horus-fig2.html"') < index.index('href="horus-fig11.html"')
    assert 'aria-label="numeric: 1 agrees, 1 differs, 1 unexplained"' in index
    assert 'aria-label="shape: 1 agrees, 1 unresolved"' in index
    # Both plots, linked to enlarge; the paper's value and ours with its interval.
    assert page.count('<a class="zoom" href="../results/horus-fig11') == 2
    assert "<td data-label=\"paper\" class=\"num short\">38 %</td>" in page
    assert "36.1 ± 2.3 (n=5)" in page
    # Every verdict coloured; a difference's attribution from its run, with the command.
    for v in ("agrees", "differs", "unexplained", "unresolved", "calibration"):
        assert f'<span class="verdict v-{v}">{v}</span>' in page
    assert "Changing the leaf&#39;s idle threshold (1 instead of 0): ours 27 % -&gt; 36 %" in page
    assert '<code class="cmd">python3 -m netsched experiment run horus-fig11 --ablation' in page
    assert 'id="sensitivity"' in page and "fig11-order-sim" in page
    # The Markdown's own claims table is replaced by the JSON's; its other
    # sections stay, headers with units.
    assert "<th>paper states</th>" not in page and "checked claims within tolerance" not in page
    assert "<th>horus p50 (µs)</th>" in page and "<th>p99 (µs)</th>" in page
    assert "<th>column_3_p99 (µs)</th>" in page
    assert 'rel="next">horus-fig11' in (site / "horus-fig2.html").read_text()
    missing = (site / "horus-fig2.html").read_text()
    assert "Missing here: stock memcached" in missing
    shipped = (site / "report.css").read_text()
    assert "overflow-wrap" not in shipped
    # The shipped stylesheet is the template's rules on one line, none lost.
    template = (Path(netsched.__file__).parent / "templates" / "report.css").read_text()
    assert shipped.count("\n") == 1 and "/*" not in shipped
    assert shipped.count("{") == template.count("{") > 20


def test_the_readme_counts_are_generated_from_the_published_claims():
    readme = (REPO / "README.md").read_text()
    assert block_of(readme) == counts_text(str(REPO / "docs" / "claims.json")), \
        "README.md is stale: python3 -m netsched readme-counts --into README.md"


def test_readme_counts_follow_the_claims(report_results, tmp_path):
    _, claims = report_results
    f = tmp_path / "claims.json"
    f.write_text(json.dumps(claims))
    text = counts_text(str(f))
    assert "- **numeric** (3 claims): 1 agrees, 1 differs, 1 unexplained" in text
    assert "- **shape** (2 claims): 1 agrees, 1 unresolved" in text
    assert "calibration** (fitted values, shown, never counted): 1" in text
    # Horus against RS-H: the headline claims with paper, ours and verdict.
    assert "Fig. 11(a): fig11a-p99-horus-vs-rsh: Horus's p99 is below RS-H's: paper 38 %, ours " \
           "36.1 ± 2.3 (n=5): **agrees**" in text
    doc = f"intro\n{BEGIN}\nold\n{END}\nrest\n"
    assert replace_block(doc, text) == f"intro\n{BEGIN}\n{text}\n{END}\nrest\n"


def test_the_readme_links_only_inside_the_repository_and_its_commands_exist():
    readme = (REPO / "README.md").read_text()
    for target in re.findall(r"\]\(([^)]+)\)", readme):
        assert not re.match(r"[a-z]+:", target) and not target.startswith(".."), target
        # The published run's report and results are there once its claims are.
        if not target.startswith(("docs/report", "docs/results")) or \
                (REPO / "docs" / "claims.json").exists():
            assert (REPO / target.split("#")[0]).exists(), target
    assert "\nscripts/main-job.sh " in readme and "\nscripts/test.sh " in readme
    assert "scripts/test.sh" in (REPO / ".ci" / "run").read_text()
    # A figure reproduced in at most three commands from a clone, none as root.
    block = readme.split("## Reproduce a figure", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    cmds = [ln for ln in block.splitlines() if ln.strip()]
    assert len(cmds) <= 3 and not any("sudo" in c or "apt" in c for c in cmds), cmds


def test_the_published_report_is_built_from_the_published_results(tmp_path):
    """docs/report is what `netsched report` makes of docs/results (built
    beside a copy, so its links to the plots read the same)."""
    import shutil

    import pytest

    published = REPO / "docs" / "results"
    if not published.is_dir():
        pytest.skip("no published results (docs/results) committed yet")
    shutil.copytree(published, tmp_path / "results")
    build_site(str(tmp_path / "results"), str(tmp_path / "report"))
    built = {p.name: p.read_text() for p in (tmp_path / "report").iterdir()}
    committed = {p.name: p.read_text() for p in (REPO / "docs" / "report").iterdir()}
    assert built == committed, \
        "docs/report is stale: python3 -m netsched report --results docs/results --out docs/report"
