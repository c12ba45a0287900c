//! Builds the XDP programs of bpf/ (the Horus leaf and spine, the Draconis queue) with
//! clang's BPF target into OUT_DIR. Without clang the crate still builds,
//! with empty objects: loading one then fails with `XdpError::ObjectMissing`
//! and the tests skip (or fail under NETSCHED_REQUIRE_BPF=1).

use std::path::PathBuf;
use std::process::Command;

const PROGRAMS: [&str; 4] = ["horus_leaf", "horus_spine", "draconis_queue", "traffic"];

fn main() {
    println!("cargo:rerun-if-env-changed=CLANG");
    // Shared by both programs: the one-CPU steering, the framing, the maps.
    println!("cargo:rerun-if-changed=bpf/steer.h");
    println!("cargo:rerun-if-changed=bpf/frame.h");
    println!("cargo:rerun-if-changed=bpf/maps.h");
    // Shared by the Horus leaf and spine.
    println!("cargo:rerun-if-changed=bpf/horus_core.h");
    println!("cargo:rerun-if-changed=bpf/conn.h");
    // The pass lock of a scheduler on every CPU (the Horus leaf and spine).
    println!("cargo:rerun-if-changed=bpf/pass_lock.h");
    // Sealed state messages (the Horus spine).
    println!("cargo:rerun-if-changed=bpf/seal.h");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".into());
    for program in PROGRAMS {
        let source = format!("bpf/{program}.bpf.c");
        println!("cargo:rerun-if-changed={source}");
        let out = out_dir.join(format!("{program}.bpf.o"));
        let built = Command::new(&clang)
            // -mcpu=v3: atomics that return a value (the pass lock's
            // compare-and-swap, fetch-and-add), kernel >= 5.12.
            .args([
                "-O2", "-g", "-target", "bpf", "-mcpu=v3", "-Wall", "-Werror",
            ])
            .args(["-I/usr/include/x86_64-linux-gnu", "-c", &source, "-o"])
            .arg(&out)
            .status();
        match built {
            Ok(status) if status.success() => {}
            Ok(status) => panic!("{clang} failed to build {source}: {status}"),
            Err(e) => {
                println!(
                    "cargo:warning=netsched-xdp: `{clang}` not found ({e}); {program} is not built (install clang llvm libbpf-dev: scripts/install-deps.sh)"
                );
                std::fs::write(&out, []).expect("write an empty BPF object");
            }
        }
    }
}
