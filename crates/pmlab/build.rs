//! Records the commit pmlab was built from (`PMLAB_COMMIT`: HEAD of the checkout when the
//! binary was built), so that `pmlab --version`, `pmlab sim --json` and the report name the
//! code that made them. Outside a git checkout of this workspace (a source archive, even one
//! unpacked inside another repository) it is `unknown`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(root: &Path, args: &[&str]) -> Option<String> {
    let o = Command::new("git")
        .args(args)
        .current_dir(root)
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let s = String::from_utf8(o.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let commit = (|| {
        let top = PathBuf::from(git(&root, &["rev-parse", "--show-toplevel"])?);
        if top.canonicalize().ok()? != root.canonicalize().ok()? {
            return None;
        }
        // Rebuilt when HEAD moves: a checkout (HEAD), a commit on the branch (refs/heads, a
        // directory: cargo looks at every file in it) or a repacking of refs. The paths come
        // from git, so a worktree (whose .git is a file) is followed too.
        let head = git(&root, &["rev-parse", "--git-path", "HEAD"])?;
        let common = PathBuf::from(git(&root, &["rev-parse", "--git-common-dir"])?);
        for p in [
            root.join(head),
            root.join(&common).join("refs/heads"),
            root.join(&common).join("packed-refs"),
        ] {
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
        git(&root, &["rev-parse", "--short=12", "HEAD"])
            .filter(|s| s.bytes().all(|b| b.is_ascii_hexdigit()))
    })();
    println!(
        "cargo:rustc-env=PMLAB_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
}
