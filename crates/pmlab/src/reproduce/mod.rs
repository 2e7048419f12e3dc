//! `pmlab reproduce`: runs each system's headline experiments and writes the report.

pub mod device;
pub mod lalea;
pub mod nvcache;
pub mod pmec;
pub mod pmweaver;
pub mod ppo;
pub mod scope;
pub mod workloads;

use crate::report::{assemble_report, write_section_record, SECTION_ORDER};
use std::path::Path;

/// Checks before any section runs that the report can be written to `out`: it is (or is made)
/// a directory a file can be created in, and no section's folder in it is something else. (A
/// file named as the output directory was found only when the first section, seconds to
/// minutes in, wrote its results.)
fn check_out_dir<'a>(out: &Path, sections: impl Iterator<Item = &'a str>) -> Result<(), String> {
    if out.exists() && !out.is_dir() {
        return Err(format!("--out {}: not a directory", out.display()));
    }
    std::fs::create_dir_all(out)
        .map_err(|e| format!("--out {}: cannot create: {e}", out.display()))?;
    let probe = out.join(format!(".pmlab-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .map_err(|e| format!("--out {}: cannot write in it: {e}", out.display()))?;
    let _ = std::fs::remove_file(&probe);
    for s in sections {
        let d = out.join(s);
        // (Not followed: a section's folder is replaced, a link to one would be.)
        match std::fs::symlink_metadata(&d) {
            Ok(m) if !m.is_dir() => {
                return Err(format!(
                    "--out {}: {} is not a directory (section {s} writes there)",
                    out.display(),
                    d.display()
                ))
            }
            _ => {}
        }
    }
    let report = out.join("REPORT.md");
    if std::fs::metadata(&report).is_ok_and(|m| m.is_dir()) {
        return Err(format!(
            "--out {}: {} is a directory (the report is written there)",
            out.display(),
            report.display()
        ));
    }
    Ok(())
}

/// Prefix of a section's folder while it is being written (`OUT/.staging-NAME-PID/NAME`).
const STAGING: &str = ".staging-";
/// Prefix of a section's earlier folder while the new one takes its place.
const REPLACED: &str = ".replaced-";

/// Runs section `name` (`run` writes `DIR/name/`) into a staging folder in `out` and puts the
/// folder in place of `OUT/name` only once every file of it is written, with the section's
/// scale: an interrupted or failed section leaves the earlier one whole (its files written
/// one after the other into `OUT/name`, with minutes of work between them, had left old and
/// new files side by side for the next report to mix), and no file of an earlier run stays
/// beside a new one.
fn staged<T>(
    out: &Path,
    name: &str,
    quick: bool,
    run: impl FnOnce(&Path) -> Result<T, String>,
) -> Result<T, String> {
    let pid = std::process::id();
    let stage = out.join(format!("{STAGING}{name}-{pid}"));
    let _ = std::fs::remove_dir_all(&stage);
    std::fs::create_dir(&stage).map_err(|e| format!("{}: cannot create: {e}", stage.display()))?;
    // An interrupt removes the partial section (until the next run into `out` did).
    let _interrupt = crate::signals::remove_tree_on_interrupt(&stage);
    let result = run(&stage).and_then(|v| write_section_record(&stage, name, quick).map(|()| v));
    let result = result.and_then(|v| {
        let dest = out.join(name);
        let replaced = out.join(format!("{REPLACED}{name}-{pid}"));
        let moved = |from: &Path, to: &Path| {
            std::fs::rename(from, to).map_err(|e| format!("{}: cannot move: {e}", from.display()))
        };
        let had = std::fs::symlink_metadata(&dest).is_ok();
        if had {
            moved(&dest, &replaced)?;
        }
        moved(&stage.join(name), &dest)?;
        if had {
            let _ = std::fs::remove_dir_all(&replaced);
        }
        Ok(v)
    });
    let _ = std::fs::remove_dir_all(&stage);
    result
}

/// Removes the staging and replaced folders that runs killed outright (SIGKILL, a crash) left
/// in `out`, of processes no longer running.
fn remove_leftovers(out: &Path) {
    let Ok(entries) = std::fs::read_dir(out) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name
            .strip_prefix(STAGING)
            .or_else(|| name.strip_prefix(REPLACED))
        else {
            continue;
        };
        let pid = rest.rsplit('-').next().and_then(|p| p.parse::<u32>().ok());
        let running = pid.is_some_and(|p| Path::new(&format!("/proc/{p}")).exists());
        if pid.is_some() && !running {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Runs the selected sections (all when `only` is `None`) and rebuilds `OUT/REPORT.md`.
pub fn run(out: &Path, quick: bool, only: Option<&str>) -> Result<(), String> {
    if let Some(s) = only {
        if !SECTION_ORDER.contains(&s) {
            return Err(format!(
                "--only {s}: unknown section (known: {})",
                SECTION_ORDER.join(", ")
            ));
        }
    }
    let wants = |s: &str| only.is_none_or(|o| o == s);
    check_out_dir(out, SECTION_ORDER.iter().copied().filter(|s| wants(s)))?;
    remove_leftovers(out);
    if wants("device") {
        eprintln!("reproduce: device characterisation");
        staged(out, "device", quick, |d| {
            device::run(d, quick, &pmsim::config::preset_names())
        })?;
    }
    if wants("workloads") {
        eprintln!("reproduce: workloads on the full system");
        staged(out, "workloads", quick, |d| workloads::run(d, quick))?;
    }
    if wants("pmweaver") {
        eprintln!("reproduce: PMWeaver write prediction for PM-support operations");
        staged(out, "pmweaver", quick, |d| pmweaver::run(d, quick))?;
    }
    if wants("ppo") {
        eprintln!("reproduce: PPO/BROI persist ordering and RDMA network persistence");
        staged(out, "ppo", quick, |d| ppo::run(d, quick))?;
    }
    if wants("lalea") {
        eprintln!("reproduce: LALEA/BLOM hardware logging on the full system");
        staged(out, "lalea", quick, |d| lalea::run(d, quick))?;
    }
    if wants("pmec") {
        eprintln!("reproduce: pmec (erasure coding beside ISA-L)");
        staged(out, "pmec", quick, |d| pmec::run(d, quick))?;
    }
    if wants("nvcache") {
        eprintln!("reproduce: nvcache (MPI-IO cache, real mpiexec)");
        let build = std::env::var_os("NVCACHE_BUILD").unwrap_or_else(|| "nvcache/build".into());
        staged(out, "nvcache", quick, |d| {
            let ran = nvcache::run(d, quick, Path::new(&build))?;
            if !ran && only == Some("nvcache") {
                return Err(
                    "--only nvcache: the section could not run (see its line above)".into(),
                );
            }
            Ok(())
        })?;
    }
    let report = assemble_report(out, &scope::SCOPE)?;
    eprintln!("reproduce: wrote {}", report.display());
    Ok(())
}
