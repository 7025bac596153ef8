//! Records the commit the harness is built from, and whether the working tree had changes, so
//! every measurement can name the code it measured (`Provenance::commit`, `dirty`).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    // Rebuild when the commit moves or any workspace source changes (a directory is scanned
    // whole), so the dirty flag follows edits too.
    if let Some(top) = git(&["rev-parse", "--show-toplevel"]) {
        println!("cargo:rerun-if-changed={top}/.git/HEAD");
        println!("cargo:rerun-if-changed={top}/.git/index");
        println!("cargo:rerun-if-changed={top}/.git/refs");
        println!("cargo:rerun-if-changed={top}/crates");
    }
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty = match git(&["status", "--porcelain", "--untracked-files=no"]) {
        Some(s) => (!s.is_empty()).to_string(),
        None => "unknown".into(),
    };
    println!("cargo:rustc-env=MLPDEX_BENCH_COMMIT={commit}");
    println!("cargo:rustc-env=MLPDEX_BENCH_DIRTY={dirty}");
}
