//! Compiles the constants shim with the MPI's own compiler wrapper and tells the Rust code
//! which MPI it is built against (`pcoll_openmpi` / `pcoll_mpich`, `pcoll_large_count`).
use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=shim/pcoll_shim.c");
    println!("cargo:rerun-if-changed=shim/pcoll_gate.c");
    println!("cargo:rerun-if-changed=shim/pcoll_gate.h");
    println!("cargo:rerun-if-changed=shim/pcoll_entry.c");
    println!("cargo:rerun-if-env-changed=MPICC");
    println!("cargo::rustc-check-cfg=cfg(pcoll_openmpi)");
    println!("cargo::rustc-check-cfg=cfg(pcoll_mpich)");
    println!("cargo::rustc-check-cfg=cfg(pcoll_large_count)");
    let mpicc = env::var("MPICC").unwrap_or_else(|_| "mpicc".to_string());
    let show = Command::new(&mpicc)
        .arg("-show")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
        .unwrap_or_default();
    if show.contains("mpich") {
        println!("cargo:rustc-cfg=pcoll_mpich");
        // MPICH 4.x: MPI-4 large-count (`_c`) bindings exist.
        println!("cargo:rustc-cfg=pcoll_large_count");
    } else {
        println!("cargo:rustc-cfg=pcoll_openmpi");
    }
    cc::Build::new()
        .compiler(&mpicc)
        .file("shim/pcoll_shim.c")
        .file("shim/pcoll_gate.c")
        .file("shim/pcoll_entry.c")
        .flag_if_supported("-O2")
        .warnings(true)
        .compile("pcoll_shim");
    // The entry points' jumps (Rust) and the C entries they jump to (".text.hot.*") in one
    // output section, so a forwarded call's code is one page (shim/pcoll_entry.c).
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,keep-text-section-prefix");
}
