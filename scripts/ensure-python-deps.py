"""Installs the experiment layer's Python dependencies if they are missing."""
import importlib.util
import subprocess
import sys

NEEDED = {"matplotlib": "matplotlib>=3.7", "pytest": "pytest>=7"}

missing = [spec for mod, spec in NEEDED.items() if importlib.util.find_spec(mod) is None]
if missing:
    print(f"installing {' '.join(missing)} with pip", file=sys.stderr)
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", *missing])
