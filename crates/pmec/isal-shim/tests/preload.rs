//! Build a plain ISA-L C program against /usr/include/isa-l and -lisal, run it as is and with
//! `LD_PRELOAD=libpmec_isal.so`, and require identical output and proof that the shim served
//! the calls. Skips with a notice when ISA-L's headers or a C compiler are missing.

use std::path::PathBuf;
use std::process::Command;

/// The shim library: target/<profile>/libpmec_isal.so when `cargo build` made it (the
/// Makefile does, before the tests); otherwise build it into a side target directory (cargo
/// does not build a cdylib for its own integration tests).
fn shim_path() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    let built = profile_dir.join("libpmec_isal.so");
    if built.exists() {
        return built;
    }
    let side = profile_dir.join("pmec-shim-selfbuild");
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "--manifest-path"])
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&side)
        .status()
        .expect("run cargo build for the shim");
    assert!(status.success(), "building the shim failed");
    side.join("release/libpmec_isal.so")
}

/// Whether ISA-L's headers are installed (a C client can be built); says so when not.
fn isal_headers() -> bool {
    let there = std::path::Path::new("/usr/include/isa-l/erasure_code.h").exists();
    if !there {
        eprintln!("NOTICE: ISA-L headers missing (apt-get install libisal-dev); test skipped");
    }
    there
}

#[test]
fn isal_program_runs_identically_on_pmec() {
    if !isal_headers() {
        return;
    }
    let shim = shim_path();
    assert!(shim.exists(), "{} not built", shim.display());
    let dir = std::env::temp_dir().join(format!("pmec-preload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prog = compile("isal_prog", &dir, &["-lisal", "-ldl"]);
    let plain = Command::new(&prog).output().unwrap();
    let pre = Command::new(&prog)
        .env("LD_PRELOAD", &shim)
        .env("PMEC_SHIM_VERBOSE", "1")
        .output()
        .unwrap();
    let (out_a, out_b) = (
        String::from_utf8_lossy(&plain.stdout),
        String::from_utf8_lossy(&pre.stdout),
    );
    let err_b = String::from_utf8_lossy(&pre.stderr);
    assert!(plain.status.success(), "plain run failed:\n{out_a}");
    assert!(
        pre.status.success(),
        "preloaded run failed:\n{out_b}\n{err_b}"
    );
    assert!(out_a.contains("failures 0") && out_a.lines().count() > 40);
    assert_eq!(out_a, out_b, "outputs differ with the shim");
    assert!(
        err_b.contains("pmec-isal-shim: active"),
        "shim not loaded: {err_b}"
    );
    let calls: u64 = err_b
        .lines()
        .find_map(|l| l.strip_prefix("shim calls: "))
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    assert!(calls >= 49 * 2, "shim served {calls} encode calls: {err_b}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Compiles `tests/c/NAME.c` into `dir` with `libs`.
fn compile(name: &str, dir: &std::path::Path, libs: &[&str]) -> PathBuf {
    let exe = dir.join(name);
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/c/{name}.c"));
    let cc = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(&src)
        .args(libs)
        .output()
        .expect("run cc");
    assert!(
        cc.status.success(),
        "cc failed: {}",
        String::from_utf8_lossy(&cc.stderr)
    );
    exe
}

#[test]
fn a_client_that_dlopens_libisal_by_name_gets_the_shim_preloaded_or_first_on_the_path() {
    let system = std::path::Path::new("/usr/lib/x86_64-linux-gnu/libisal.so.2");
    if !system.exists() {
        eprintln!("NOTICE: system ISA-L missing (apt-get install libisal2); test skipped");
        return;
    }
    let shim = shim_path();
    let dir = std::env::temp_dir().join(format!("pmec-dlopen-{}", std::process::id()));
    let libdir = dir.join("lib");
    std::fs::create_dir_all(&libdir).unwrap();
    // The installed layout: the shim as libisal.so.2 in a directory of its own.
    std::fs::copy(&shim, libdir.join("libisal.so.2")).unwrap();
    let client = compile("dlopen_client", &dir, &["-ldl"]);
    let run = |env: &[(&str, &std::path::Path)]| {
        let mut c = Command::new(&client);
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert!(
            o.status.success(),
            "{env:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let from = out
            .lines()
            .find_map(|l| l.strip_prefix("ec_encode_data from "))
            .unwrap()
            .to_string();
        let rest = out.lines().nth(1).unwrap().to_string();
        (std::fs::canonicalize(from).unwrap(), rest)
    };
    let (plain_lib, plain_out) = run(&[]);
    assert_eq!(plain_lib, std::fs::canonicalize(system).unwrap());
    let (pre_lib, pre_out) = run(&[("LD_PRELOAD", shim.as_path())]);
    assert_eq!(pre_lib, std::fs::canonicalize(&shim).unwrap(), "preloaded");
    let (path_lib, path_out) = run(&[("LD_LIBRARY_PATH", libdir.as_path())]);
    assert_eq!(path_lib, libdir.join("libisal.so.2"), "first on the path");
    // The same parity, and the CRC (forwarded to the system ISA-L) the same, every way.
    assert_eq!(plain_out, pre_out);
    assert_eq!(plain_out, path_out);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn encodes_from_destructors_exit_handlers_and_signal_handlers_work_as_under_isal() {
    if !isal_headers() {
        return;
    }
    let shim = shim_path();
    let dir = std::env::temp_dir().join(format!("pmec-odd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prog = compile("odd_contexts", &dir, &["-lisal", "-lpthread"]);
    let plain = Command::new(&prog).output().unwrap();
    let pre = Command::new(&prog)
        .env("LD_PRELOAD", &shim)
        .output()
        .unwrap();
    let out = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).into_owned();
    let err = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(plain.status.success(), "under ISA-L: {}", err(&plain));
    // Before: a panic in a thread-local destructor or a borrowed cache aborted the process.
    assert!(
        pre.status.success(),
        "under the shim: {:?}\n{}{}",
        pre.status,
        out(&pre),
        err(&pre)
    );
    for line in [
        "thread:",
        "pthread key destructor:",
        "main:",
        "atexit handler:",
        "encodes in the signal handler:",
    ] {
        assert!(
            out(&plain).contains(line),
            "{line} missing: {}",
            out(&plain)
        );
    }
    assert!(out(&plain).contains("(at least 20)"), "{}", out(&plain));
    assert_eq!(out(&plain), out(&pre), "outputs differ with the shim");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_real_isal_that_is_the_shim_itself_is_reported_not_called_for_ever() {
    if !isal_headers() {
        return;
    }
    let shim = shim_path();
    let dir = std::env::temp_dir().join(format!("pmec-self-{}", std::process::id()));
    let libdir = dir.join("lib");
    std::fs::create_dir_all(&libdir).unwrap();
    std::fs::copy(&shim, libdir.join("libisal.so.2")).unwrap();
    let prog = compile("odd_contexts", &dir, &["-lisal", "-lpthread"]);
    let ok = Command::new(&prog)
        .arg("crc")
        .env("LD_LIBRARY_PATH", &libdir)
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    // A bare name resolves to the shim already loaded: its forwarding stubs would call
    // themselves (before: a silent spin).
    let mut child = Command::new(&prog)
        .arg("crc")
        .env("LD_LIBRARY_PATH", &libdir)
        .env("PMEC_ISAL_REAL", "libisal.so.2")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            panic!("a forwarded call through the shim to itself hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("is this shim itself"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
