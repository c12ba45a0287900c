"""Policy names are compared only in the parse functions of their enums
(crates/core registry.rs for push, crates/core names.rs for pull and flow): a name search over every crate's source
finds no `== "horus"`, `!= "racksched"` or `"rs-h" =>` elsewhere, so a
renamed or added policy cannot be missed by a string copy."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VOCABULARIES = {
    # Built-in policies, and the `module::Type = "name"` lines of `registered!`.
    "crates/core/src/registry.rs": r'(?:Policy::\w+ => |^    \w+::\w+ = )"([a-z0-9-]+)"',
    "crates/core/src/names.rs": r'(?:Pull|Flow)Policy::\w+ => "([a-z0-9-]+)"',
}


def policy_names() -> set[str]:
    names = set()
    for path, pattern in VOCABULARIES.items():
        found = re.findall(pattern, (ROOT / path).read_text(), re.MULTILINE)
        assert found, f"no policy names found in {path}"
        names.update(found)
    return names


def comparisons(text: str, names: set[str]) -> list[str]:
    alt = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    pattern = re.compile(rf'(?:[=!]=\s*"({alt})"|"({alt})"\s*(?:==|!=|=>|\|))')
    return [m.group(0) for m in pattern.finditer(text)]


def test_the_search_finds_a_comparison():
    names = {"horus", "racksched"}
    assert comparisons('if p == "racksched" {', names) == ['== "racksched"']
    assert comparisons('match s { "horus" => 1, _ => 0 }', names) == ['"horus" =>']
    assert comparisons('let s = "horus";', names) == []


def test_no_policy_string_is_compared_outside_the_parse_functions():
    names = policy_names()
    assert {"horus", "rs-h", "draconis", "baraat"} <= names
    found = []
    for path in sorted((ROOT / "crates").glob("*/src/**/*.rs")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in VOCABULARIES:
            continue
        text = path.read_text()
        # Unit tests assert on names; only the code under test counts.
        text = text.split("#[cfg(test)]")[0]
        found += [f"{rel}: {c}" for c in comparisons(text, names)]
    assert not found, "policy names compared as strings:\n" + "\n".join(found)


# Table names and counter labels of node, lab and cli spelled like a policy:
# `[draconis]`, `[r2p2]`, `[sparrow]`, `[racksched]`, `[horus]` sections and
# fault.rs's `racksched` message type. Anything else naming a policy in those
# crates' code is a string copy of a vocabulary.
NOT_POLICIES = {
    ("crates/node/src/pull/config.rs", "draconis"),
    ("crates/node/src/pull/config.rs", "r2p2"),
    ("crates/node/src/pull/config.rs", "sparrow"),
    ("crates/node/src/config.rs", "horus"),
    ("crates/node/src/fault.rs", "racksched"),
    ("crates/cli/src/check.rs", "draconis"),
    ("crates/cli/src/check.rs", "r2p2"),
    ("crates/cli/src/check.rs", "sparrow"),
    ("crates/cli/src/check.rs", "racksched"),
}


def literals(text: str, names: set[str]) -> list[str]:
    alt = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    return re.findall(rf'"({alt})(?:@[^"]*)?"', code)


def test_node_lab_and_cli_spell_no_policy_name_outside_tests():
    names = policy_names()
    assert literals('let s = "horus@200";\n    // "jsq"', names) == ["horus"]
    found = []
    for crate in ("node", "lab", "cli"):
        for path in sorted((ROOT / "crates" / crate / "src").glob("**/*.rs")):
            if path.name == "tests.rs":
                continue
            rel = path.relative_to(ROOT).as_posix()
            text = path.read_text().split("#[cfg(test)]")[0]
            found += [f"{rel}: {n}" for n in literals(text, names) if (rel, n) not in NOT_POLICIES]
    assert not found, "policy names spelled outside the vocabularies:\n" + "\n".join(found)
