//! Builds bpf/horus_leaf.bpf.c with clang's BPF target into OUT_DIR. Without
//! clang the crate still builds, with an empty object: loading it then fails
//! with `XdpError::ObjectMissing` and the tests skip (or fail under
//! NETSCHED_REQUIRE_BPF=1).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let source = "bpf/horus_leaf.bpf.c";
    println!("cargo:rerun-if-changed={source}");
    println!("cargo:rerun-if-env-changed=CLANG");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("horus_leaf.bpf.o");
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".into());
    let built = Command::new(&clang)
        .args(["-O2", "-g", "-target", "bpf", "-Wall", "-Werror"])
        .args(["-I/usr/include/x86_64-linux-gnu", "-c", source, "-o"])
        .arg(&out)
        .status();
    match built {
        Ok(status) if status.success() => {}
        Ok(status) => panic!("{clang} failed to build {source}: {status}"),
        Err(e) => {
            println!(
                "cargo:warning=netsched-xdp: `{clang}` not found ({e}); the XDP leaf is not built (install clang llvm libbpf-dev: scripts/install-deps.sh)"
            );
            std::fs::write(&out, []).expect("write an empty BPF object");
        }
    }
}
