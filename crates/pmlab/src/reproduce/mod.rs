//! `pmlab reproduce`: runs each system's headline experiments and writes the report.

pub mod device;
pub mod lalea;
pub mod nvcache;
pub mod pmec;
pub mod pmweaver;
pub mod ppo;
pub mod scope;
pub mod workloads;

use crate::report::{assemble_report, write_scale, SECTION_ORDER};
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
        if d.exists() && !d.is_dir() {
            return Err(format!(
                "--out {}: {} is not a directory (section {s} writes there)",
                out.display(),
                d.display()
            ));
        }
    }
    Ok(())
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
    if wants("device") {
        eprintln!("reproduce: device characterisation");
        device::run(out, quick, &pmsim::config::preset_names())?;
    }
    if wants("workloads") {
        eprintln!("reproduce: workloads on the full system");
        workloads::run(out, quick)?;
    }
    if wants("pmweaver") {
        eprintln!("reproduce: PMWeaver write prediction for PM-support operations");
        pmweaver::run(out, quick)?;
    }
    if wants("ppo") {
        eprintln!("reproduce: PPO/BROI persist ordering and RDMA network persistence");
        ppo::run(out, quick)?;
    }
    if wants("lalea") {
        eprintln!("reproduce: LALEA/BLOM hardware logging on the full system");
        lalea::run(out, quick)?;
    }
    if wants("pmec") {
        eprintln!("reproduce: pmec (erasure coding beside ISA-L)");
        pmec::run(out, quick)?;
    }
    if wants("nvcache") {
        eprintln!("reproduce: nvcache (MPI-IO cache, real mpiexec)");
        let build = std::env::var_os("NVCACHE_BUILD").unwrap_or_else(|| "nvcache/build".into());
        nvcache::run(out, quick, Path::new(&build))?;
    }
    for s in SECTION_ORDER.iter().filter(|s| wants(s)) {
        write_scale(out, s, quick)?;
    }
    let report = assemble_report(out, &scope::SCOPE)?;
    eprintln!("reproduce: wrote {}", report.display());
    Ok(())
}
