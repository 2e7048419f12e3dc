//! Compile tests/c/capi.c against include/pmec.h, link it with libpmec.so and run it.
//! Skips with a notice when no C compiler is found.

use std::path::PathBuf;
use std::process::Command;

/// libpmec.so from the target directory (cargo builds it with the rlib for `cargo build`, and
/// the Makefile builds before testing); otherwise build it into a side target directory.
fn libdir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    if profile_dir.join("libpmec.so").exists() {
        return profile_dir;
    }
    let side = profile_dir.join("pmec-capi-selfbuild");
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "-p", "pmec", "--lib", "--target-dir"])
        .arg(&side)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo build");
    assert!(status.success());
    side.join("release")
}

#[test]
fn c_program_uses_the_header_and_shared_library() {
    if Command::new("cc").arg("--version").output().is_err() {
        eprintln!("NOTICE: no C compiler; C API test skipped");
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let lib = libdir();
    let dir = std::env::temp_dir().join(format!("pmec-capi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prog = dir.join("capi");
    let out = Command::new("cc")
        .args(["-O2", "-Wall", "-Werror", "-I"])
        .arg(root.join("include"))
        .arg(root.join("tests/c/capi.c"))
        .arg("-o")
        .arg(&prog)
        .arg("-L")
        .arg(&lib)
        .arg("-lpmec")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&prog)
        .env("LD_LIBRARY_PATH", &lib)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "exit {:?}: {stdout}",
        run.status.code()
    );
    assert!(stdout.contains("capi ok"), "{stdout}");
    assert!(
        stdout.contains("invalid parameter"),
        "last error should describe the k=0 failure: {stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
