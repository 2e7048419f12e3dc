//! Compile tests/c/capi.c against include/pmec.h, link it with libpmec.so and run it.
//! Skips with a notice when no C compiler is found.

use std::path::PathBuf;
use std::process::Command;

/// Newest modification time of the files under `dir`.
fn newest(dir: &std::path::Path) -> std::time::SystemTime {
    let mut t = std::time::SystemTime::UNIX_EPOCH;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let m = if p.is_dir() {
            newest(&p)
        } else {
            e.metadata().and_then(|m| m.modified()).unwrap_or(t)
        };
        t = t.max(m);
    }
    t
}

/// libpmec.so from the target directory (cargo builds it with the rlib for `cargo build`, and
/// the Makefile builds before testing) when it is newer than the sources; otherwise build it
/// into a side target directory. `cargo test` rebuilds only the rlib, so a library left from an
/// earlier build used to be tested in place of the sources.
fn libdir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let sources = newest(&root.join("src")).max(newest(&root.join("include")));
    let built = std::fs::metadata(profile_dir.join("libpmec.so")).and_then(|m| m.modified());
    if built.is_ok_and(|b| b >= sources) {
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

/// Compile `tests/c/<name>.c` against the header and libpmec.so and run it; None without a C
/// compiler.
fn build_and_run(name: &str) -> Option<(std::process::ExitStatus, String)> {
    if Command::new("cc").arg("--version").output().is_err() {
        eprintln!("NOTICE: no C compiler; C API test skipped");
        return None;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let lib = libdir();
    let dir = std::env::temp_dir().join(format!("pmec-capi-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prog = dir.join(name);
    let out = Command::new("cc")
        .args(["-O2", "-Wall", "-Werror", "-I"])
        .arg(root.join("include"))
        .arg(root.join(format!("tests/c/{name}.c")))
        .arg("-o")
        .arg(&prog)
        .arg("-L")
        .arg(&lib)
        .args(["-lpmec", "-lpthread"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The program needs libpmec.so by its SONAME, libpmec.so.0, as an installed copy's link
    // provides it; here a link beside the program does.
    std::os::unix::fs::symlink(lib.join("libpmec.so"), dir.join("libpmec.so.0")).unwrap();
    let run = Command::new(&prog)
        .env("LD_LIBRARY_PATH", &dir)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    Some((run.status, text))
}

#[test]
fn c_program_uses_the_header_and_shared_library() {
    let Some((status, stdout)) = build_and_run("capi") else {
        return;
    };
    assert!(status.success(), "exit {:?}: {stdout}", status.code());
    assert!(stdout.contains("capi ok"), "{stdout}");
    assert!(
        stdout.contains("invalid parameter"),
        "last error should describe the k=0 failure: {stdout}"
    );
}

/// A failing call from a pthread key destructor or an atexit handler returns its error code
/// (it aborted the program: the last-error message's thread-local was already destroyed).
#[test]
fn calls_while_thread_storage_is_destroyed_return_their_error() {
    let Some((status, out)) = build_and_run("exit_contexts") else {
        return;
    };
    assert!(status.success(), "exit {:?}: {out}", status.code());
    assert!(out.contains("exit contexts ok"), "{out}");
    // The calls did run with the thread's storage gone: the message says so there.
    for place in ["key destructor", "atexit"] {
        assert!(
            out.contains(&format!("{place}: -3 (no message: pmec was called while")),
            "{out}"
        );
    }
}
