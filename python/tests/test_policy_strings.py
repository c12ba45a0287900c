"""Policy names are compared only in the parse functions of their enums
(crates/core registry.rs for push, crates/config pull.rs for pull,
crates/flowsim policy.rs for flow): a name search over every crate's source
finds no `== "horus"`, `!= "racksched"` or `"rs-h" =>` elsewhere, so a
renamed or added policy cannot be missed by a string copy."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VOCABULARIES = {
    # Built-in policies, and the `module::Type = "name"` lines of `registered!`.
    "crates/core/src/registry.rs": r'(?:Policy::\w+ => |^    \w+::\w+ = )"([a-z0-9-]+)"',
    "crates/config/src/pull.rs": r'PullPolicy::\w+ => "([a-z0-9-]+)"',
    "crates/flowsim/src/policy.rs": r'Policy::\w+ => "([a-z0-9-]+)"',
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
