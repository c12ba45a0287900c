"""Installs the experiment layer's Python dependencies if they are missing:
plotting, tests (pytest; Playwright drives Debian's Chromium in the report's
browser test, without downloading a browser of its own), and the netsched
package's build (maturin) and runtime (pandas, Dask distributed, tqdm; the
report's markdown-it-py and Jinja2) dependencies."""
import importlib.util
import subprocess
import sys

NEEDED = {
    "matplotlib": "matplotlib>=3.7",
    "pytest": "pytest>=7",
    "pandas": "pandas>=1.5",
    "distributed": "dask[distributed]>=2023.1",
    "tqdm": "tqdm>=4.60",
    "maturin": "maturin>=1.5,<2",
    "markdown_it": "markdown-it-py>=3",
    "jinja2": "jinja2>=3.1",
    "playwright": "playwright>=1.40",
}

missing = [spec for mod, spec in NEEDED.items() if importlib.util.find_spec(mod) is None]
if missing:
    print(f"installing {' '.join(missing)} with pip", file=sys.stderr)
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", *missing])
