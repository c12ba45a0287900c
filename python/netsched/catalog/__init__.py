"""The experiment catalog: one entry per reproduced figure or table.

`REGISTRY` maps an entry's name (``horus-fig11``) to its `Experiment`:
config generators at "paper" and "reduced" scale, the table it writes, a plot
in the paper's style and the paper's stated numbers (`Claim`s)."""
import difflib
import re

from .base import FAMILIES, REGISTRY, SCALES, Claim, Experiment, register  # noqa: F401
from . import horus, horus_appendix, horus_testbed, racksched  # noqa: F401  (registration)
from . import draconis, comparison  # noqa: F401  (registration)
from . import baraat, baraat_sweeps  # noqa: F401  (registration)


def natural_key(name: str) -> list:
    """Sorts `horus-fig2` before `horus-fig10`: digit runs compare as numbers."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", name) if t]


def ordered() -> list[Experiment]:
    """Every entry in the one order `experiment list` and the report use."""
    return [REGISTRY[n] for n in sorted(REGISTRY, key=natural_key)]


def get(name: str) -> Experiment:
    """The entry `name`; `base+x+y` is a family's entry with designs x and y
    (the comparison's: `comparison+random`, any push policy), registered on first use."""
    base, *extra = name.split("+")
    if name not in REGISTRY and extra and base in FAMILIES and all(extra):
        return register(FAMILIES[base](tuple(extra)))
    try:
        return REGISTRY[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(REGISTRY), n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(f'`{c}`' for c in close)}?" if close else ""
        raise ValueError(f"unknown experiment `{name}`{hint} (`experiment list` shows all "
                         f"{len(REGISTRY)})") from None
