//! Report output: CSV tables, SVG charts and the Markdown report assembled from sections.

pub mod svg;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A table of results: a header row and data rows, written as CSV and as Markdown.
#[derive(Clone, Debug, Default)]
pub struct Table {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows of cells (already formatted).
    pub rows: Vec<Vec<String>>,
}

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl Table {
    /// A table with these columns and no rows.
    pub fn new(columns: &[&str]) -> Table {
        Table {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row (must have one cell per column).
    pub fn push(&mut self, row: Vec<String>) {
        debug_assert_eq!(row.len(), self.columns.len());
        self.rows.push(row);
    }

    /// The table as CSV text.
    pub fn to_csv(&self) -> String {
        let mut s = String::new();
        let line = |cells: &[String]| {
            cells
                .iter()
                .map(|c| csv_cell(c))
                .collect::<Vec<_>>()
                .join(",")
        };
        s.push_str(&line(&self.columns));
        s.push('\n');
        for r in &self.rows {
            s.push_str(&line(r));
            s.push('\n');
        }
        s
    }

    /// The table as a Markdown table.
    pub fn to_markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "| {} |", self.columns.join(" | "));
        let _ = writeln!(s, "|{}", "---|".repeat(self.columns.len()));
        for r in &self.rows {
            let _ = writeln!(s, "| {} |", r.join(" | ").replace('\n', " "));
        }
        s
    }
}

/// Writes `contents` to `dir/name` atomically, creating `dir`; errors name the path.
pub fn write_file(dir: &Path, name: &str, contents: &str) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
    let p = dir.join(name);
    crate::atomic_file::write_atomic(&p, contents)?;
    Ok(p)
}

/// The known report sections, in report order (each writes `OUT/<name>/section.md`).
pub const SECTION_ORDER: &[&str] = &[
    "device",
    "workloads",
    "pmweaver",
    "ppo",
    "lalea",
    "pmec",
    "nvcache",
];

/// The sections whose full-size headlines README.md quotes (`tests/readme_results.sh`).
pub const README_SECTIONS: &[&str] = &["device", "workloads", "pmweaver", "ppo", "lalea"];

/// The file under `OUT/<section>/` that records the size of the run that wrote the section.
const SCALE_FILE: &str = "scale.txt";

/// Records under `OUT/<section>/` how the section was made: whether it was run with `--quick`,
/// so that the report can say which of its figures come from the smaller runs, and the pmlab
/// (version and commit) that wrote it.
pub fn write_section_record(out: &Path, section: &str, quick: bool) -> Result<(), String> {
    let scale = if quick { "quick\n" } else { "full\n" };
    write_file(&out.join(section), SCALE_FILE, scale)?;
    write_file(
        &out.join(section),
        PRODUCER_FILE,
        &format!("pmlab {}\n", crate::VERSION),
    )
    .map(|_| ())
}

/// The file under `OUT/<section>/` that names the pmlab (version and commit) that wrote it.
const PRODUCER_FILE: &str = "producer.txt";

/// The sentence that names the pmlab that wrote the report's sections: one version, or each
/// section's where runs of several versions share the folder.
fn producer_note(out: &Path) -> String {
    let mut by: Vec<(String, Vec<&str>)> = Vec::new();
    for name in SECTION_ORDER {
        if !out.join(name).join("section.md").exists() {
            continue;
        }
        let who = std::fs::read_to_string(out.join(name).join(PRODUCER_FILE))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "an unrecorded pmlab version".to_string());
        match by.iter_mut().find(|(w, _)| *w == who) {
            Some((_, names)) => names.push(name),
            None => by.push((who, vec![name])),
        }
    }
    match by.as_slice() {
        [] => String::new(),
        [(who, _)] => format!("Written by {who}.\n\n"),
        _ => {
            let parts: Vec<String> = by
                .iter()
                .map(|(who, names)| format!("{} by {who}", names.join(", ")))
                .collect();
            format!(
                "Sections written by different pmlab builds: {}.\n\n",
                parts.join("; ")
            )
        }
    }
}

/// The paragraph that names the sections run with `--quick` and, of them, those whose
/// full-size figures README.md quotes; empty when no section was quick.
fn scale_note(out: &Path) -> String {
    let quick: Vec<&str> = SECTION_ORDER
        .iter()
        .copied()
        .filter(|name| out.join(name).join("section.md").exists())
        .filter(|name| {
            std::fs::read_to_string(out.join(name).join(SCALE_FILE))
                .is_ok_and(|s| s.trim() == "quick")
        })
        .collect();
    if quick.is_empty() {
        return String::new();
    }
    let mut note = format!(
        "Run with `--quick` (smaller inputs and fewer runs than a full run; each section's \
         command says so): {}.",
        quick.join(", ")
    );
    let quoted: Vec<&str> = quick
        .iter()
        .copied()
        .filter(|s| README_SECTIONS.contains(s))
        .collect();
    if !quoted.is_empty() {
        note.push_str(&format!(
            " README.md's headline figures for {} come from full-size runs \
             (`pmlab reproduce --only SECTION`), so they differ from the figures of the same \
             names here.",
            quoted.join(", ")
        ));
    }
    note.push_str("\n\n");
    note
}

/// Rebuilds `OUT/REPORT.md` from every section present under `out`, each followed by its note
/// from `scope` ((section, what it models and leaves out) pairs).
pub fn assemble_report(out: &Path, scope: &[(&str, &str)]) -> Result<PathBuf, String> {
    let mut md = String::from(
        "# pmlab reproduction report\n\n\
         Produced by `pmlab reproduce`. Every table and chart below was measured by the \
         command that wrote this file; a figure in the text quoted from a paper or from \
         `docs/validation.md` names its source. Each section names its inputs, and CSV/SVG \
         files sit beside it.\n\n",
    );
    md.push_str(&producer_note(out));
    md.push_str(&scale_note(out));
    let headlines: Vec<String> = SECTION_ORDER
        .iter()
        .filter_map(|name| std::fs::read_to_string(out.join(name).join("headline.md")).ok())
        .collect();
    if !headlines.is_empty() {
        md.push_str("## Headlines\n\n");
        for h in headlines {
            md.push_str(h.trim_end());
            md.push('\n');
        }
        md.push('\n');
    }
    let mut found = 0;
    for name in SECTION_ORDER {
        let p = out.join(name).join("section.md");
        if let Ok(text) = std::fs::read_to_string(&p) {
            md.push_str(&text);
            md.push('\n');
            if let Some((_, note)) = scope.iter().find(|(s, _)| s == name) {
                md.push_str(&format!("**What this section models.** {note}\n\n"));
            }
            found += 1;
        }
    }
    if found == 0 {
        md.push_str("No section has been produced yet.\n");
    }
    write_file(out, "REPORT.md", &md)
}

/// The median (the mean of the middle two for an even count), smallest and largest of some
/// runs' figures.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spread {
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `v` (not empty).
    pub(crate) fn of(v: &[f64]) -> Spread {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Spread {
            median,
            min: v[0],
            max: v[n - 1],
        }
    }

    /// True when every run of `self` lies above every run of `other`, or every one below: the
    /// ranges do not overlap, so the two sides are distinguishable.
    pub(crate) fn apart_from(&self, other: &Spread) -> bool {
        self.min > other.max || self.max < other.min
    }

    /// For per-pair ratios: `median [min-max]`, with `~` when the range crosses 1 (the pairs
    /// disagree on which side is faster: not distinguishable).
    pub(crate) fn text(&self) -> String {
        let tie = self.min < 1.0 && self.max > 1.0;
        format!(
            "{:.2} [{:.2}-{:.2}]{}",
            self.median,
            self.min,
            self.max,
            if tie { " ~" } else { "" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_says_which_sections_are_quick_and_differ_from_readme() {
        let out = std::env::temp_dir().join(format!("pmlab-report-scale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        for (name, quick) in [("pmweaver", true), ("pmec", true), ("lalea", false)] {
            write_file(&out.join(name), "section.md", &format!("## {name}\n")).unwrap();
            write_section_record(&out, name, quick).unwrap();
        }
        let report = std::fs::read_to_string(assemble_report(&out, &[]).unwrap()).unwrap();
        assert!(
            report.contains("Run with `--quick` (smaller inputs"),
            "{report}"
        );
        assert!(report.contains("): pmweaver, pmec."), "{report}");
        // Only the quick sections README quotes are named as differing from README.
        assert!(
            report.contains("README.md's headline figures for pmweaver come from full-size"),
            "{report}"
        );
        // All full: no note.
        write_section_record(&out, "pmweaver", false).unwrap();
        write_section_record(&out, "pmec", false).unwrap();
        let report = std::fs::read_to_string(assemble_report(&out, &[]).unwrap()).unwrap();
        assert!(!report.contains("--quick"), "{report}");
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn the_report_names_the_pmlab_that_wrote_each_section() {
        let out =
            std::env::temp_dir().join(format!("pmlab-report-producer-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        for name in ["device", "ppo"] {
            write_file(&out.join(name), "section.md", &format!("## {name}\n")).unwrap();
            write_section_record(&out, name, true).unwrap();
        }
        let report = std::fs::read_to_string(assemble_report(&out, &[]).unwrap()).unwrap();
        let me = format!("Written by pmlab {}.", crate::VERSION);
        assert!(report.contains(&me), "{report}");
        assert!(crate::VERSION.contains("(commit "), "{}", crate::VERSION);
        // A section an older build wrote into the same folder is named as such.
        write_file(
            &out.join("ppo"),
            PRODUCER_FILE,
            "pmlab 0.0.9 (commit 0123abcd)\n",
        )
        .unwrap();
        let report = std::fs::read_to_string(assemble_report(&out, &[]).unwrap()).unwrap();
        assert!(!report.contains(&me), "{report}");
        assert!(
            report.contains(&format!(
                "Sections written by different pmlab builds: device by pmlab {}; ppo by pmlab \
                 0.0.9 (commit 0123abcd).",
                crate::VERSION
            )),
            "{report}"
        );
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn the_report_claims_measurement_only_for_its_tables_and_charts() {
        let out = std::env::temp_dir().join(format!("pmlab-report-intro-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        write_file(&out.join("pmweaver"), "section.md", "## pmweaver\n").unwrap();
        let report = std::fs::read_to_string(assemble_report(&out, &[]).unwrap()).unwrap();
        // The sections' text quotes figures of the papers and of docs/validation.md's full-size
        // runs (PMWeaver's 1.005x without the validator lookup): not every figure is this run's.
        assert!(
            !report.contains("Every figure below was measured"),
            "{report}"
        );
        assert!(report.contains("names its source"), "{report}");
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn csv_quotes_and_markdown_shape() {
        let mut t = Table::new(&["a", "b"]);
        t.push(vec!["1".into(), "x,y".into()]);
        assert_eq!(t.to_csv(), "a,b\n1,\"x,y\"\n");
        let md = t.to_markdown();
        assert!(md.starts_with("| a | b |\n|---|---|\n| 1 | x,y |"));
    }
}
