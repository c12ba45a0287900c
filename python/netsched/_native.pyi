"""Types of the compiled module (crates/py, built by maturin). Every function
takes a config's TOML text; `label` names it in error messages (a path), and
errors are ValueError with the CLI's message. Results are JSON and CSV text,
which netsched.api parses."""

def run_sim(toml: str, label: str | None = None, base_dir: str = ".",
            threads: int | None = None, progress: bool = False) -> tuple[str, str, str, str]:
    """(summary JSON, runs CSV, pools CSV, printed table)"""

def run_flowsim(toml: str, label: str | None = None) -> tuple[str, str, str, str]:
    """(summary JSON, runs CSV, tasks CSV, printed table)"""

def run_pull(toml: str, label: str | None = None, base_dir: str = ".") -> tuple[str, str, str]:
    """(summary JSON, runs CSV, printed table)"""

def canonical_sim(toml: str, label: str | None = None) -> str: ...
def canonical_flowsim(toml: str, label: str | None = None) -> str: ...
def canonical_pull(toml: str, label: str | None = None) -> str: ...
def placement(toml: str, label: str | None = None) -> str:
    """CSV: pool_id, leaf_id, pod, workers, servers, spine_id"""

def json_to_toml(json: str) -> str: ...
def policy_names() -> dict[str, list[str]]:
    """Every policy name by family: `push` (run_sim), `pull` (run_pull),
    `flow` (run_flowsim)."""

def build_info() -> tuple[str, str]:
    """(version, git commit) the module was built from"""



def source_tree() -> str:
    """`clean`, or a digest of the uncommitted changes under crates/ this
    module was built with."""
    ...