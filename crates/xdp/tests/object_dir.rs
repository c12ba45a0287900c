//! `NETSCHED_XDP_OBJECT_DIR` (crates/xdp/src/object.rs): the programs are
//! loaded from that directory instead of the built-in ones, as
//! scripts/bpf-mutants.py loads its mutants; a missing or broken object is
//! a clear error, never the built-in program in its place. One test in its
//! own binary: the variable is the process's, so no other test may load a
//! program meanwhile.
//!
//! Needs root (loading BPF programs). Without it the test prints why and
//! passes, unless NETSCHED_REQUIRE_BPF=1.

mod common;

use netsched_xdp::{XdpError, XdpLeaf, XdpSpine};

const VAR: &str = "NETSCHED_XDP_OBJECT_DIR";

#[test]
fn programs_load_from_the_named_directory_and_nothing_else() {
    let test = "programs_load_from_the_named_directory_and_nothing_else";
    if !common::bpf_allowed(test) {
        return;
    }
    let built = std::path::Path::new(env!("OUT_DIR")).join("horus_leaf.bpf.o");
    if std::fs::metadata(&built).map_or(0, |m| m.len()) == 0 {
        // Built without clang: nothing to copy.
        assert!(!common::bpf_required(), "{test}: no BPF object was built");
        return;
    }
    let dir = std::env::temp_dir().join(format!("netsched-object-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    // This binary's only test: no other thread reads the environment while
    // it changes.
    std::env::set_var(VAR, &dir);

    // Missing: the error names the file, the built-in program is not used.
    match XdpLeaf::load() {
        Err(XdpError::ObjectFile { path, .. }) => {
            assert_eq!(path, dir.join("horus_leaf.bpf.o"))
        }
        Err(other) => panic!("expected a missing-object error, got {other}"),
        Ok(_) => panic!("loaded a program that is not in {}", dir.display()),
    }
    // Not an ELF object: refused by the loader.
    std::fs::write(dir.join("horus_spine.bpf.o"), b"not an object").expect("write");
    assert!(matches!(XdpSpine::load(), Err(XdpError::Load(_))));

    // The built objects, copied there: loaded and run.
    std::fs::copy(&built, dir.join("horus_leaf.bpf.o")).expect("copy the built leaf");
    let mut leaf = XdpLeaf::load().expect("the copied leaf loads");
    let not_horus = common::frame(common::SWITCH, b"not a horus message");
    let run = leaf.test_run(&not_horus, 1).expect("test run");
    assert_eq!(run.action, netsched_xdp::XdpAction::Pass);

    std::env::remove_var(VAR);
    std::fs::remove_dir_all(&dir).expect("remove temp dir");
}
