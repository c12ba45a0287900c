"""scripts/module-cycles.py, the CI check that no crate's modules depend on
each other in a cycle, on tiny crates written here: it must find a cycle
through `use super::`, grouped `use crate::{..}` trees, inline paths and a
parent's re-export, and must not count a unit-test module, an alias, a
comment or a string as an edge."""
import importlib.util
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "module-cycles.py"


def write(root: Path, files: dict[str, str]) -> Path:
    src = root / "src"
    for name, text in files.items():
        p = src / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return src


def run(src: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(src)], capture_output=True, text=True)


def test_a_two_module_cycle_fails(tmp_path):
    src = write(
        tmp_path,
        {
            "lib.rs": "pub mod a;\npub mod b;\npub mod c;\n",
            "a.rs": "use crate::{b::Bee, c};\npub struct Ay;\n",
            "b.rs": "pub struct Bee(crate::a::Ay);\n",
            "c.rs": "pub fn f() {}\n",
        },
    )
    r = run(src)
    assert r.returncode == 1, r.stdout
    assert "cycle among modules of crate: a <-> b" in r.stdout
    assert "c" not in r.stdout.split("(")[0].split(":")[-1]


def test_a_cycle_through_super_and_a_reexport_fails(tmp_path):
    src = write(
        tmp_path,
        {
            "lib.rs": "pub mod net;\n",
            "net/mod.rs": "mod x;\nmod y;\npub use y::Why;\n",
            "net/x.rs": "use super::Why;\npub fn ex() {}\n",
            "net/y.rs": "pub struct Why;\nfn g() { super::x::ex() }\n",
        },
    )
    r = run(src)
    assert r.returncode == 1, r.stdout
    assert "crate::net: x <-> y" in r.stdout


def test_tests_aliases_comments_and_strings_are_no_edges(tmp_path):
    src = write(
        tmp_path,
        {
            "lib.rs": "pub mod a;\npub mod b;\n",
            "a.rs": "pub struct Ay;\n#[cfg(test)]\nmod tests {\n    use crate::b::Bee;\n}\n"
            '// crate::b::Bee\nconst S: &str = "crate::b::Bee";\n',
            "b.rs": "use crate::a::Ay as Bee;\n",
        },
    )
    r = run(src)
    assert r.returncode == 0, r.stdout


def test_the_workspace_has_no_cycle():
    r = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_use_tree_expansion():
    spec = importlib.util.spec_from_file_location("module_cycles", SCRIPT)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    assert m.expand_use_tree("crate::{a::{B, c::D as E}, f, g::self}") == [
        "crate::a::B",
        "crate::a::c::D",
        "crate::f",
        "crate::g",
    ]
