//! Records the commit pmlab was built from (`PMLAB_COMMIT`), so that `pmlab --version`, `pmlab
//! sim --json` and the report name the code that made them. Outside a git checkout (a source
//! archive) it is `unknown`.

use std::path::Path;
use std::process::Command;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let git = root.join(".git");
    // Rebuilt when HEAD moves: a checkout (HEAD), a commit on the branch (refs/heads, a
    // directory: cargo looks at every file in it) or a repacking of refs.
    for p in ["HEAD", "refs/heads", "packed-refs"] {
        let p = git.join(p);
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(&root)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=PMLAB_COMMIT={commit}");
}
