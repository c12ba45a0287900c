"""The experiment catalog: one entry per reproduced figure or table.

`REGISTRY` maps an entry's name (``horus-fig11``) to its `Experiment`:
config generators at "paper" and "reduced" scale, the table it writes, a plot
in the paper's style and the paper's stated numbers (`Claim`s)."""
from .base import REGISTRY, SCALES, Claim, Experiment  # noqa: F401
from . import horus, racksched  # noqa: F401  (registration)
from . import draconis, comparison  # noqa: F401  (registration)
from . import baraat  # noqa: F401  (registration)


def get(name: str) -> Experiment:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"unknown experiment `{name}` (expected one of: {', '.join(sorted(REGISTRY))})"
        ) from None
