//! Policy names on the command line: `sim`, `pull` and `flowsim` refuse an
//! unknown name with one message format (the name, a suggestion when it is
//! a likely typo, every name of the family: `netsched_core::names`), and
//! list the names in `--help`.

mod common;

use common::netsched;

const EXPERIMENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../experiments");

#[test]
fn unknown_policies_get_one_message_with_a_suggestion() {
    let main = format!("{EXPERIMENTS}/main.toml");
    let baraat = format!("{EXPERIMENTS}/baraat.toml");
    let cases: [(&[&str], &str, &str); 3] = [
        (
            &["sim", "-q", "-c", &main, "--policy", "hours"],
            "horus",
            "push policies: horus,",
        ),
        (
            &["pull", "-q", "--policy", "dracnis"],
            "draconis",
            "pull policies: draconis,",
        ),
        (
            &["flowsim", "-q", "-c", &baraat, "--policy", "barat"],
            "baraat",
            "flow policies: fair,",
        ),
    ];
    for (args, suggestion, family) in cases {
        let (code, _, err) = netsched(args);
        assert_ne!(code, 0, "{args:?} accepted");
        let given = args.last().unwrap();
        let line = err.trim_end();
        assert_eq!(line.lines().count(), 1, "{err}");
        assert!(
            line.contains(&format!(
                "--policy: unknown policy `{given}`: did you mean `{suggestion}`? ({family}"
            )),
            "{args:?}: {err}"
        );
    }
    // Not a typo of anything: no suggestion, still every name.
    let (_, _, err) = netsched(&["pull", "-q", "--policy", "zzzzzz"]);
    assert!(
        err.contains("unknown policy `zzzzzz` (pull policies: "),
        "{err}"
    );
}

#[test]
fn help_lists_every_policy() {
    for (cmd, names) in [
        (
            "sim",
            vec!["horus", "horus-tokens", "rs-h", "r2p2", "central"],
        ),
        ("pull", vec!["draconis", "draconis-server", "sparrow"]),
        (
            "flowsim",
            vec!["fair", "pfabric", "orchestra", "stf", "baraat"],
        ),
    ] {
        let (code, out, err) = netsched(&[cmd, "--help"]);
        assert_eq!(code, 0, "{err}");
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with("Policies: "))
            .unwrap_or_else(|| panic!("{cmd} --help lists no policies:\n{out}"));
        for n in names {
            assert!(line.contains(n), "{cmd}: {n} missing from {line}");
        }
    }
}
