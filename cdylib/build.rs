//! Compiles the constants shim with the MPI's own compiler wrapper and tells the Rust code
//! which MPI it is built against (`pcoll_openmpi` / `pcoll_mpich`, `pcoll_large_count`).
use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=shim/pcoll_shim.c");
    println!("cargo:rerun-if-changed=shim/pcoll_gate.c");
    println!("cargo:rerun-if-changed=shim/pcoll_gate.h");
    println!("cargo:rerun-if-changed=shim/pcoll_entry.c");
    println!("cargo:rerun-if-changed=shim/pcoll_want.c");
    println!("cargo:rerun-if-changed=shim/pcoll_memo.c");
    println!("cargo:rerun-if-env-changed=MPICC");
    println!("cargo::rustc-check-cfg=cfg(pcoll_openmpi)");
    println!("cargo::rustc-check-cfg=cfg(pcoll_mpich)");
    println!("cargo::rustc-check-cfg=cfg(pcoll_large_count)");
    println!("cargo::rustc-check-cfg=cfg(pcoll_persistent)");
    println!("cargo::rustc-check-cfg=cfg(pcoll_get_status_multi)");
    let mpicc = env::var("MPICC").unwrap_or_else(|_| "mpicc".to_string());
    // The family is read from the MPI's own header, not from the wrapper's command line:
    // Intel MPI's `mpicc -show` names no "mpich", yet its ABI is MPICH's (I_MPI_VERSION and
    // MPICH_VERSION are both defined); Open MPI defines OPEN_MPI.
    let probe = header_probe(&mpicc);
    if probe.contains("MPICH_VERSION") {
        println!("cargo:rustc-cfg=pcoll_mpich");
    } else if probe.contains("OPEN_MPI") {
        println!("cargo:rustc-cfg=pcoll_openmpi");
    } else {
        panic!("{mpicc}: its mpi.h defines neither OPEN_MPI nor MPICH_VERSION (pcoll serves the Open MPI and MPICH ABIs); set MPICC to the MPI's C compiler wrapper");
    }
    // MPI-4 large-count (`_c`) bindings: MPICH 4.x/5.x and Intel MPI 2021 declare them, Open
    // MPI 4.1 and 5.0 do not.
    if probe.contains("PMPI_Reduce_c") {
        println!("cargo:rustc-cfg=pcoll_large_count");
    }
    // MPI-4 persistent collectives (`MPI_Allreduce_init`, ...): MPICH 4.x/5.x, Open MPI 5.0
    // and Intel MPI 2021 declare them, Open MPI 4.1 does not.
    if probe.contains("PMPI_Allreduce_init") {
        println!("cargo:rustc-cfg=pcoll_persistent");
    }
    // MPI-4.1's MPI_Request_get_status_all / _any / _some: MPICH 5.0 and Intel MPI 2021
    // declare them, MPICH 4.0 and both Open MPIs do not.
    if probe.contains("PMPI_Request_get_status_all") {
        println!("cargo:rustc-cfg=pcoll_get_status_multi");
    }
    cc::Build::new()
        .compiler(&mpicc)
        .file("shim/pcoll_shim.c")
        .file("shim/pcoll_gate.c")
        .file("shim/pcoll_entry.c")
        .file("shim/pcoll_want.c")
        .file("shim/pcoll_memo.c")
        .flag_if_supported("-O2")
        .warnings(true)
        .compile("pcoll_shim");
    // The entry points' jumps (Rust) and the C entries they jump to (".text.hot.*") in one
    // output section, so a forwarded call's code is one page (shim/pcoll_entry.c).
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,keep-text-section-prefix");
    // The name the library is installed and preloaded under (the Makefile copies
    // libpcoll_mpi.so to libpcoll.so): programs linked with -lpcoll record it.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libpcoll.so");
    // The MPI's library directories as the library's RUNPATH, as the MPI's wrapper gives its
    // programs: `LD_PRELOAD=libpcoll.so mpirun ...` preloads it into `mpirun` too, which has
    // no libmpi of its own, and there libpcoll's `libmpi.so.40` resolved to Debian's Open MPI
    // 4.1 instead of the Open MPI 5 it was built against ("undefined symbol:
    // PMPI_Bcast_init": mpirun did not start). `LD_LIBRARY_PATH` still comes first.
    let dirs = mpi_lib_dirs(&mpicc);
    if !dirs.is_empty() {
        println!("cargo:rustc-cdylib-link-arg=-Wl,--enable-new-dtags");
    }
    for d in dirs {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,{d}");
    }
}

/// The `-L` directories of the wrapper's link line (`-show`, MPICH and Intel MPI; Open MPI's
/// wrappers accept it too), but the system's own, which the loader searches anyway.
fn mpi_lib_dirs(mpicc: &str) -> Vec<String> {
    const SYSTEM: [&str; 6] = [
        "/lib",
        "/lib64",
        "/usr/lib",
        "/usr/lib64",
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
    ];
    let Ok(out) = Command::new(mpicc).arg("-show").output() else {
        return Vec::new();
    };
    let mut dirs: Vec<String> = Vec::new();
    for word in String::from_utf8_lossy(&out.stdout).split_whitespace() {
        let Some(d) = word.strip_prefix("-L") else {
            continue;
        };
        let d = d.trim_matches('"').trim_end_matches('/').to_string();
        if !d.is_empty() && !SYSTEM.contains(&d.as_str()) && !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    dirs
}

/// The MPI header as the wrapper preprocesses it, with its macros (`-E -dM` lists the
/// macros only; the declarations come from one more pass per symbol it names).
fn header_probe(mpicc: &str) -> String {
    let dir = std::path::PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    let src = dir.join("pcoll_probe.c");
    std::fs::write(
        &src,
        "#include <mpi.h>\nvoid *pcoll_probe = (void *)&PMPI_Reduce_c;\n",
    )
    .expect("write the header probe");
    let run = |args: &[&str]| {
        Command::new(mpicc)
            .args(args)
            .arg(&src)
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run {mpicc} ({e}): set MPICC to the MPI's C compiler wrapper")
            })
    };
    let macros = run(&["-E", "-dM"]);
    if !macros.status.success() {
        panic!(
            "{mpicc} -E -dM could not read mpi.h:\n{}",
            String::from_utf8_lossy(&macros.stderr)
        );
    }
    let mut out = String::from_utf8_lossy(&macros.stdout).to_string();
    // Each symbol compiles only where mpi.h declares it.
    for sym in [
        "PMPI_Reduce_c",
        "PMPI_Allreduce_init",
        "PMPI_Request_get_status_all",
    ] {
        std::fs::write(
            &src,
            format!("#include <mpi.h>\nvoid *pcoll_probe = (void *)&{sym};\n"),
        )
        .expect("write the header probe");
        if run(&["-c", "-o", "/dev/null"]).status.success() {
            out.push_str(&format!("\n{sym}\n"));
        }
    }
    out
}
