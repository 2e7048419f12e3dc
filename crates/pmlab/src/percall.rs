//! The single-call comparison: one unmodified ISA-L client (`percall`, built from
//! `crates/pmec/bench/percall.c` against `libisal.so.2`) run on several implementations of
//! that library, chosen by `LD_LIBRARY_PATH`, in interleaved rounds.
//!
//! Each run of the client measures every point once, with the plain move of the same bytes
//! (the physical reference) beside it, and prints a checksum of the parity of its first
//! stripes; the comparison refuses implementations whose parity differs.

use crate::report::Spread;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// An implementation of `libisal.so.2`: a name for reports, the folder holding the library and
/// environment settings for it (e.g. `PMEC_STRATEGY=vanilla` to measure one DIALGA layer).
#[derive(Clone, Debug)]
pub struct Library {
    /// Name in reports (e.g. `isal-2.32.1`, `pmec`).
    pub name: String,
    /// Folder with `libisal.so.2`, put first on `LD_LIBRARY_PATH`.
    pub dir: PathBuf,
    /// Variables set for the client.
    pub env: Vec<(String, String)>,
}

impl Library {
    /// Parses `NAME=DIR[,VAR=VALUE...]`.
    pub fn parse(s: &str) -> Result<Library, String> {
        let mut parts = s.split(',');
        let (name, dir) = parts
            .next()
            .and_then(|p| p.split_once('='))
            .filter(|(n, d)| !n.is_empty() && !d.is_empty())
            .ok_or_else(|| format!("--lib '{s}': want NAME=DIR[,VAR=VALUE...]"))?;
        let env = parts
            .map(|kv| {
                kv.split_once('=')
                    .filter(|(k, _)| !k.is_empty())
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .ok_or_else(|| format!("--lib '{s}': '{kv}' is not VAR=VALUE"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let dir = PathBuf::from(dir);
        if !dir.join("libisal.so.2").exists() {
            return Err(format!(
                "--lib '{s}': {} has no libisal.so.2",
                dir.display()
            ));
        }
        Ok(Library {
            name: name.to_string(),
            dir,
            env,
        })
    }
}

/// One point of one run.
#[derive(Clone, Debug, PartialEq)]
struct Sample {
    point: String,
    block: usize,
    encode: f64,
    /// Best of the regular and the non-temporal plain move.
    moved: f64,
    crc: String,
}

/// A point's figures on one library over all rounds.
#[derive(Clone, Debug)]
pub struct Row {
    /// `RS(n,k)`.
    pub point: String,
    /// Block bytes.
    pub block: usize,
    /// Library name.
    pub lib: String,
    /// Encode GB/s per round.
    pub encode: Vec<f64>,
    /// Plain-move GB/s per round (best of regular and non-temporal stores).
    pub moved: Vec<f64>,
}

/// Checks a point `K:M:BLOCK` as the client takes them (1 <= K <= 128, 1 <= M <= 32, BLOCK a
/// positive multiple of 64; the client's K + M <= 255 follows), before any library runs.
fn check_point(p: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("percall point {p:?}: {why}"));
    let f: Vec<&str> = p.split(':').collect();
    let [k, m, block] = f[..] else {
        return bad("expected K:M:BLOCK, e.g. 8:4:1024");
    };
    let (Ok(k), Ok(m), Ok(block)) = (k.parse::<u64>(), m.parse::<u64>(), block.parse::<u64>())
    else {
        return bad("K, M and BLOCK must be whole numbers, e.g. 8:4:1024");
    };
    if !(1..=128).contains(&k) || !(1..=32).contains(&m) {
        return bad("needs 1 <= K <= 128, 1 <= M <= 32");
    }
    if block == 0 || block % 64 != 0 || block > i32::MAX as u64 {
        return bad("BLOCK must be a positive multiple of 64");
    }
    Ok(())
}

fn parse_line(line: &str) -> Option<Sample> {
    let field = |key: &str| {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
    };
    let f = |key: &str| field(key).and_then(|v| v.parse::<f64>().ok());
    Some(Sample {
        point: field("point")?.to_string(),
        block: field("block")?.parse().ok()?,
        encode: f("encode_gbps")?,
        moved: f("move_gbps")?.max(f("move_nt_gbps")?),
        crc: field("parity_crc")?.to_string(),
    })
}

/// Runs `client` on every library for `rounds` interleaved rounds over `points` (`K:M:BLOCK`);
/// each run encodes for `seconds` per point, in cache or over `pool_mib` MiB.
pub fn compare(
    client: &Path,
    libs: &[Library],
    points: &[String],
    rounds: usize,
    in_cache: bool,
    seconds: f64,
    pool_mib: usize,
) -> Result<Vec<Row>, String> {
    if libs.is_empty() || points.is_empty() || rounds == 0 {
        return Err("percall: need at least one library, one point and one round".into());
    }
    for p in points {
        check_point(p)?;
    }
    // The client's warnings (a library's variables it does not take, say), once each: run
    // quietly, a mistyped PMEC_STRATEGY measured `auto` under the name given.
    let mut warned: std::collections::BTreeSet<(String, String)> = Default::default();
    let mut rows: Vec<Row> = Vec::new();
    // The parity checksum of each point (and block) on the first library that ran it.
    let mut crcs: BTreeMap<(String, usize), String> = BTreeMap::new();
    for _ in 0..rounds {
        for lib in libs {
            let mut cmd = Command::new(client);
            let path = match std::env::var_os("LD_LIBRARY_PATH") {
                Some(old) => {
                    let mut p = lib.dir.clone().into_os_string();
                    p.push(":");
                    p.push(old);
                    p
                }
                None => lib.dir.clone().into_os_string(),
            };
            cmd.envs(lib.env.iter().map(|(k, v)| (k, v)))
                .env("LD_LIBRARY_PATH", path)
                .arg("--seconds")
                .arg(seconds.to_string())
                .arg("--pool-mib")
                .arg(pool_mib.to_string());
            if in_cache {
                cmd.arg("--in-cache");
            }
            cmd.args(points);
            let out = cmd
                .output()
                .map_err(|e| format!("percall: cannot run {}: {e}", client.display()))?;
            if !out.status.success() {
                // One line: the client's last, if it said anything.
                let err = String::from_utf8_lossy(&out.stderr);
                let why = err
                    .lines()
                    .rev()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .unwrap_or("the client printed no message");
                return Err(format!(
                    "percall on library {:?} failed ({}): {why}",
                    lib.name, out.status
                ));
            }
            for line in String::from_utf8_lossy(&out.stderr).lines() {
                let line = line.trim();
                if !line.is_empty() && warned.insert((lib.name.clone(), line.to_string())) {
                    eprintln!("percall on {}: {line}", lib.name);
                }
            }
            let text = String::from_utf8_lossy(&out.stdout);
            let samples: Vec<Sample> = text.lines().filter_map(parse_line).collect();
            if samples.len() != points.len() {
                return Err(format!(
                    "percall on {}: {} result lines for {} points",
                    lib.name,
                    samples.len(),
                    points.len()
                ));
            }
            for s in samples {
                let first = crcs
                    .entry((s.point.clone(), s.block))
                    .or_insert_with(|| s.crc.clone());
                if *first != s.crc {
                    return Err(format!(
                        "percall: {} {} B: parity on {} differs from the first library's \
                         (checksum {} against {first})",
                        s.point, s.block, lib.name, s.crc
                    ));
                }
                match rows
                    .iter_mut()
                    .find(|r| r.point == s.point && r.block == s.block && r.lib == lib.name)
                {
                    Some(r) => {
                        r.encode.push(s.encode);
                        r.moved.push(s.moved);
                    }
                    None => rows.push(Row {
                        point: s.point,
                        block: s.block,
                        lib: lib.name.clone(),
                        encode: vec![s.encode],
                        moved: vec![s.moved],
                    }),
                }
            }
        }
    }
    Ok(rows)
}

/// A Markdown table of `rows`: per point and library the encode median [min-max] and its run
/// count, the plain move's median, encode over move, and the ratio of medians to library
/// `against`, marked `~` where the two libraries' runs overlap (the ratio is then not
/// distinguishable from 1). The plain
/// move does not depend on the library: each point's reference is the median of every
/// library's move runs of that point (each process measures it beside its own encodes), one
/// figure for all its rows.
pub fn markdown(rows: &[Row], against: Option<&str>) -> String {
    let mut s = String::from(
        "| point | block | library | encode GB/s median [min-max] | runs | plain move GB/s | \
         encode / move | ratio |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let spread = Spread::of(&r.encode);
        let Spread {
            median: e,
            min: elo,
            max: ehi,
        } = spread;
        let moved: Vec<f64> = rows
            .iter()
            .filter(|o| o.point == r.point && o.block == r.block)
            .flat_map(|o| o.moved.iter().copied())
            .collect();
        let mv = Spread::of(&moved).median;
        let ratio = against
            .and_then(|a| {
                rows.iter()
                    .find(|o| o.point == r.point && o.block == r.block && o.lib == a)
            })
            .map_or("".to_string(), |o| {
                let base = Spread::of(&o.encode);
                // The reference row itself is 1.00x by definition, not a comparison.
                let tie = o.lib != r.lib && !spread.apart_from(&base);
                format!("{:.2}x{}", e / base.median, if tie { " ~" } else { "" })
            });
        s.push_str(&format!(
            "| {} | {} | {} | {e:.2} [{elo:.2}-{ehi:.2}] | {} | {mv:.2} | {:.0}% | {ratio} |\n",
            r.point,
            r.block,
            r.lib,
            r.encode.len(),
            100.0 * e / mv
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_gives_run_counts_and_marks_overlapping_ratios() {
        let row = |lib: &str, encode: Vec<f64>| Row {
            point: "RS(12,8)".into(),
            block: 1024,
            lib: lib.into(),
            moved: vec![5.0; encode.len()],
            encode,
        };
        let rows = vec![
            row("vanilla", vec![3.0, 3.3, 3.15]),
            // Runs inside vanilla's: 0.93x cannot be told from 1.
            row("+sw", vec![2.66, 3.16, 2.93]),
            // Every run above vanilla's.
            row("auto", vec![3.75, 4.4, 3.86]),
        ];
        let md = markdown(&rows, Some("vanilla"));
        assert!(md.contains("| runs |"), "{md}");
        assert!(
            md.contains(
                "| RS(12,8) | 1024 | vanilla | 3.15 [3.00-3.30] | 3 | 5.00 | 63% | 1.00x |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| RS(12,8) | 1024 | +sw | 2.93 [2.66-3.16] | 3 | 5.00 | 59% | 0.93x ~ |"),
            "{md}"
        );
        assert!(
            md.contains("| RS(12,8) | 1024 | auto | 3.86 [3.75-4.40] | 3 | 5.00 | 77% | 1.23x |"),
            "{md}"
        );
    }

    #[test]
    fn parses_the_client_line_and_takes_the_better_move() {
        let s = parse_line(
            "point=RS(12,8) block=1024 in_cache=0 encode_gbps=4.5 move_gbps=6.0 \
             move_nt_gbps=6.7 parity_crc=00ff",
        )
        .unwrap();
        assert_eq!(s.point, "RS(12,8)");
        assert_eq!(s.block, 1024);
        assert_eq!((s.encode, s.moved), (4.5, 6.7));
        assert_eq!(s.crc, "00ff");
        assert!(parse_line("point=RS(12,8) block=1024").is_none());
        assert!(Library::parse("noequals").is_err());
        assert!(Library::parse("x=/nonexistent-dir").is_err());
        let dir = std::env::temp_dir().join(format!("pmlab-percall-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("libisal.so.2"), b"").unwrap();
        let l = Library::parse(&format!("pmec-sw={},PMEC_STRATEGY=sw", dir.display())).unwrap();
        assert_eq!(
            (l.name.as_str(), l.dir.as_path()),
            ("pmec-sw", dir.as_path())
        );
        assert_eq!(l.env, vec![("PMEC_STRATEGY".to_string(), "sw".to_string())]);
        assert!(Library::parse(&format!("x={},novalue", dir.display())).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
