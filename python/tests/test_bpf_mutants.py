"""scripts/bpf-mutants.py, which flips each comparison in the XDP programs'
C one at a time: which operators it finds (not shifts, arrows, compound
shift assignments, #include brackets, comments or literals), that a flip is
the operator's negation at the right offset, and that `--list` covers the
schedulers' sources. Running the mutants needs root and clang; these checks
need neither."""
import importlib.util
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bpf-mutants.py"


def load():
    spec = importlib.util.spec_from_file_location("bpf_mutants", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bpf_mutants"] = module
    spec.loader.exec_module(module)
    return module


def test_only_comparisons_are_found():
    m = load()
    text = "\n".join([
        "#include <linux/bpf.h>",
        "#define MAX (1 << 4)",
        "// a < b in a comment",
        "/* x >= y,",
        "   still a comment == */",
        'static const char *s = "a < b";',
        "int f(struct s *p, int a, int b) {",
        "\ta <<= 1; b >>= 2; a = p->x >> 3;",
        "\tif (a < b && a <= MAX && b > 0 && b >= a) return a == b || a != 1;",
        "\treturn '<' == '>';",
        "}",
    ])
    found = m.comparisons("x.c", text)
    assert [(c.line, c.op) for c in found] == [
        (9, "<"), (9, "<="), (9, ">"), (9, ">="), (9, "=="), (9, "!="), (10, "=="),
    ]
    for c in found:
        assert text[c.offset:c.offset + len(c.op)] == c.op
        assert text.split("\n")[c.line - 1][c.column - 1:].startswith(c.op)


def test_a_flip_is_the_negation():
    m = load()
    flips = {op: m.NEGATION[op] for op in m.NEGATION}
    assert flips == {"<": ">=", ">": "<=", "<=": ">", ">=": "<", "==": "!=", "!=": "=="}
    # Negating twice gives the operator back.
    assert all(m.NEGATION[m.NEGATION[op]] == op for op in m.NEGATION)


def test_list_covers_every_source_the_schedulers_include():
    r = subprocess.run([sys.executable, str(SCRIPT), "--list"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    files = {line.split(":")[0] for line in r.stdout.splitlines()[:-1]}
    assert {"horus_leaf.bpf.c", "horus_spine.bpf.c", "draconis_queue.bpf.c",
            "horus_core.h", "conn.h", "seal.h"} <= files
    # The generator is not a scheduler.
    assert "traffic.bpf.c" not in files
    count = int(r.stdout.splitlines()[-1].split()[0])
    assert count == len(r.stdout.splitlines()) - 1 and count > 150
