//! Helpers shared by the `pmlab` binary's test files.

use std::process::{Command, Output};

/// A counter of a `pmlab sim --json` file's text (0 when absent).
pub fn json_counter(stats: &str, k: &str) -> u64 {
    stats.find(&format!("\"{k}\":")).map_or(0, |i| {
        let v = stats[i + k.len() + 3..].trim_start();
        v[..v.find(|c: char| !c.is_ascii_digit()).unwrap()]
            .parse()
            .unwrap()
    })
}

/// `pmlab sim ARGS --json F`, which must succeed: its summary and its statistics (JSON text).
pub fn sim_with_stats(args: &[&str]) -> (String, String) {
    let json = std::env::temp_dir().join(format!(
        "pmlab-stats-{}-{}.json",
        std::process::id(),
        args.join("_").replace(['/', '=', '.', ':'], "-")
    ));
    let o = Command::new(env!("CARGO_BIN_EXE_pmlab"))
        .arg("sim")
        .args(args)
        .args(["--json", json.to_str().unwrap()])
        .output()
        .expect("run pmlab");
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let stats = std::fs::read_to_string(&json).unwrap();
    std::fs::remove_file(&json).unwrap();
    (String::from_utf8_lossy(&o.stdout).into_owned(), stats)
}

/// The standard error of a run that must fail with exit status 1 and a one-line message
/// (`ctx` names the run in a failure).
pub fn one_line_error(o: &Output, ctx: &dyn std::fmt::Debug) -> String {
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{ctx:?}: {e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    e
}
