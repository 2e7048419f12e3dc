//! The sweep's CSV: one row per job, written the same way by a single process and by a merge
//! of shard files, so both give byte-identical output.
//!
//! Layout: `job,config,config_file,workload,<one column per --set key>,sim_time_ns,events,
//! <every statistic, sorted by name>`. The statistic columns are the union over all rows (a cell
//! is empty where a job lacks that statistic), so the layout depends only on the rows: merging
//! shards whose own unions differ gives the same header as one process that ran every job.

use std::collections::{BTreeMap, BTreeSet};

/// Columns before the `--set` columns.
const HEAD: [&str; 4] = ["job", "config", "config_file", "workload"];
/// Columns between the `--set` columns and the statistics.
const MID: [&str; 2] = ["sim_time_ns", "events"];

/// One job's results.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Job index in grid order.
    pub job: usize,
    /// The config's `name`.
    pub config: String,
    /// The `--config` argument (file or preset name).
    pub config_file: String,
    /// The `--workload` argument.
    pub workload: String,
    /// The value of each `--set` key, in [`Table::set_keys`] order.
    pub settings: Vec<String>,
    /// Simulated time in ns (exact decimal of the integer ps count).
    pub sim_time_ns: String,
    /// Events simulated.
    pub events: String,
    /// Every statistic by name, already formatted.
    pub stats: BTreeMap<String, String>,
}

impl Row {
    /// The identity of the job (everything but its results), for checking a shard file
    /// against the grid this process expanded.
    pub fn same_job(&self, other: &Row) -> bool {
        self.job == other.job
            && self.config == other.config
            && self.config_file == other.config_file
            && self.workload == other.workload
            && self.settings == other.settings
    }
}

/// A sweep's results: the `--set` keys and the rows, in job order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    /// The `--set` keys, in the order given.
    pub set_keys: Vec<String>,
    /// One row per job, sorted by job index.
    pub rows: Vec<Row>,
}

impl Table {
    /// The CSV text (header line first, `\n` line ends).
    pub fn to_csv(&self) -> String {
        let stat_names: BTreeSet<&str> = self
            .rows
            .iter()
            .flat_map(|r| r.stats.keys().map(String::as_str))
            .collect();
        let mut header: Vec<&str> = HEAD.to_vec();
        header.extend(self.set_keys.iter().map(String::as_str));
        header.extend(MID);
        header.extend(stat_names.iter().copied());
        let mut out = String::new();
        write_record(&mut out, header);
        for r in &self.rows {
            let job = r.job.to_string();
            let mut rec: Vec<&str> = vec![&job, &r.config, &r.config_file, &r.workload];
            rec.extend(r.settings.iter().map(String::as_str));
            rec.extend([r.sim_time_ns.as_str(), r.events.as_str()]);
            rec.extend(
                stat_names
                    .iter()
                    .map(|n| r.stats.get(*n).map_or("", String::as_str)),
            );
            write_record(&mut out, rec);
        }
        out
    }

    /// Parses CSV written by [`Table::to_csv`]; `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Table, String> {
        // pmlab ends every line of the file: one cut short (an interrupted copy) is refused,
        // not read as fewer jobs or a shorter last number.
        if !text.is_empty() && !text.ends_with('\n') {
            return Err(format!(
                "{origin}: the last line has no line end: the file was cut short"
            ));
        }
        let records = parse_csv(text).map_err(|e| format!("{origin}: {e}"))?;
        let (header, body) = records
            .split_first()
            .ok_or_else(|| format!("{origin}: empty file, expected a sweep CSV header"))?;
        let not_sweep = || format!("{origin}: not a pmlab sweep CSV (unexpected header)");
        if header.len() < HEAD.len() + MID.len() || header[..HEAD.len()] != HEAD {
            return Err(not_sweep());
        }
        let mid = (HEAD.len()..header.len())
            .find(|&i| header[i..].starts_with(&MID.map(String::from)))
            .ok_or_else(not_sweep)?;
        let set_keys = header[HEAD.len()..mid].to_vec();
        let stat_names = &header[mid + MID.len()..];
        let mut rows = Vec::with_capacity(body.len());
        for (n, rec) in body.iter().enumerate() {
            let line = n + 2;
            if rec.len() != header.len() {
                return Err(format!(
                    "{origin}: record {line} has {} fields, the header {}",
                    rec.len(),
                    header.len()
                ));
            }
            let job = rec[0]
                .parse()
                .map_err(|_| format!("{origin}: record {line}: bad job index `{}`", rec[0]))?;
            let stats = stat_names
                .iter()
                .zip(&rec[mid + MID.len()..])
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            rows.push(Row {
                job,
                config: rec[1].clone(),
                config_file: rec[2].clone(),
                workload: rec[3].clone(),
                settings: rec[HEAD.len()..mid].to_vec(),
                sim_time_ns: rec[mid].clone(),
                events: rec[mid + 1].clone(),
                stats,
            });
        }
        Ok(Table { set_keys, rows })
    }

    /// Joins shard tables into one, in job order. Every part must have the same `--set` keys,
    /// no job may appear twice, and the jobs together must be 0, 1, ..., n-1 with none missing.
    pub fn merge(parts: Vec<(String, Table)>) -> Result<Table, String> {
        let mut parts = parts.into_iter();
        let Some((first, mut out)) = parts.next() else {
            return Ok(Table::default());
        };
        for (origin, t) in parts {
            if t.set_keys != out.set_keys {
                return Err(format!(
                    "{origin}: --set columns [{}] differ from {first}'s [{}]: not the same sweep",
                    t.set_keys.join(", "),
                    out.set_keys.join(", ")
                ));
            }
            out.rows.extend(t.rows);
        }
        out.rows.sort_by_key(|r| r.job);
        for (i, r) in out.rows.iter().enumerate() {
            if r.job != i {
                return Err(if r.job < i {
                    format!("job {} appears in more than one shard file", r.job)
                } else {
                    format!("job {i} is missing: a shard file is missing or incomplete")
                });
            }
        }
        if !is_one_grid(&out.rows) {
            return Err(
                "the shard files hold jobs of different sweeps: their configs, workloads \
                        and --set values do not form one grid"
                    .into(),
            );
        }
        Ok(out)
    }
}

/// Whether rows (jobs 0..J in order) can be one sweep's grid: configs x workloads x `--set`
/// combinations in job order (config-major, see `Grid::position`), for some numbers of workloads
/// and combinations. Shards of unrelated sweeps with the same shard count merged into a table
/// of rows from both without this.
fn is_one_grid(rows: &[Row]) -> bool {
    let jobs = rows.len();
    let divisors = |n: usize| (1..=n).filter(move |d| n.is_multiple_of(*d));
    divisors(jobs).any(|combos| {
        divisors(jobs / combos).any(|workloads| {
            let block = workloads * combos;
            rows.iter().enumerate().all(|(i, r)| {
                let same_config = &rows[i / block * block];
                let same_workload = &rows[i / combos % workloads * combos];
                let same_combo = &rows[i % combos];
                r.config_file == same_config.config_file
                    && r.config == same_config.config
                    && r.workload == same_workload.workload
                    && r.settings == same_combo.settings
            })
        })
    })
}

/// Merges host-timing CSVs (same header, first column the job index) into one, in job order.
pub fn merge_host_csv(parts: &[(String, String)]) -> Result<String, String> {
    let mut header: Option<Vec<String>> = None;
    let mut rows: Vec<(usize, Vec<String>)> = Vec::new();
    for (origin, text) in parts {
        let recs = parse_csv(text).map_err(|e| format!("{origin}: {e}"))?;
        let Some((h, body)) = recs.split_first() else {
            return Err(format!("{origin}: empty file"));
        };
        if header.get_or_insert_with(|| h.clone()) != h {
            return Err(format!(
                "{origin}: header differs from the other host files"
            ));
        }
        for r in body {
            let job = r
                .first()
                .and_then(|j| j.parse().ok())
                .ok_or_else(|| format!("{origin}: bad job index"))?;
            rows.push((job, r.clone()));
        }
    }
    rows.sort_by_key(|(j, _)| *j);
    let mut out = String::new();
    write_record(
        &mut out,
        header.unwrap_or_default().iter().map(String::as_str),
    );
    for (_, r) in &rows {
        write_record(&mut out, r.iter().map(String::as_str));
    }
    Ok(out)
}

/// Appends one CSV record; fields holding a comma, quote or line break are quoted (RFC 4180).
pub fn write_record<'a>(out: &mut String, fields: impl IntoIterator<Item = &'a str>) {
    for (i, f) in fields.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if f.contains([',', '"', '\n', '\r']) {
            out.push('"');
            out.push_str(&f.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(f);
        }
    }
    out.push('\n');
}

/// Parses RFC 4180 CSV (quoted fields may hold commas, doubled quotes and line breaks).
pub fn parse_csv(text: &str) -> Result<Vec<Vec<String>>, String> {
    let mut records = Vec::new();
    let mut rec = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while let Some(c) = chars.next() {
        match c {
            '"' if field.is_empty() => loop {
                match chars.next() {
                    None => return Err(format!("line {line}: unterminated quoted field")),
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => {
                        if c == '\n' {
                            line += 1;
                        }
                        field.push(c);
                    }
                }
            },
            ',' => rec.push(std::mem::take(&mut field)),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                rec.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut rec));
                line += 1;
            }
            c => field.push(c),
        }
    }
    if !field.is_empty() || !rec.is_empty() {
        rec.push(field);
        records.push(rec);
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(job: usize, settings: &[&str], stats: &[(&str, &str)]) -> Row {
        Row {
            job,
            config: "optane".into(),
            config_file: "configs/a,b.toml".into(),
            workload: "w.trace".into(),
            settings: settings.iter().map(|s| s.to_string()).collect(),
            sim_time_ns: "1.250".into(),
            events: "10".into(),
            stats: stats
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn csv_round_trips_with_quoting_and_missing_stats() {
        let t = Table {
            set_keys: vec!["x".into(), "y".into()],
            rows: vec![
                row(0, &["[1,2]", "\"q\""], &[("b", "2"), ("a", "1")]),
                row(1, &["3", "s"], &[("c", "0.5")]),
            ],
        };
        let csv = t.to_csv();
        assert_eq!(
            csv.lines().next().unwrap(),
            "job,config,config_file,workload,x,y,sim_time_ns,events,a,b,c"
        );
        assert!(
            csv.contains(r#"0,optane,"configs/a,b.toml",w.trace,"[1,2]","""q""",1.250,10,1,2,"#)
        );
        assert!(csv.ends_with("1,optane,\"configs/a,b.toml\",w.trace,3,s,1.250,10,,,0.5\n"));
        let back = Table::parse(&csv, "t").unwrap();
        assert_eq!(back, t);
        assert_eq!(back.to_csv(), csv);
    }

    #[test]
    fn merging_shards_equals_the_whole() {
        let whole = Table {
            set_keys: vec!["k".into()],
            rows: vec![
                row(0, &["1"], &[("a", "1")]),
                row(1, &["2"], &[("a", "2"), ("z", "9")]),
                row(2, &["1"], &[("m", "3")]),
            ],
        };
        let shard = |i: usize| Table {
            set_keys: whole.set_keys.clone(),
            rows: whole
                .rows
                .iter()
                .filter(|r| r.job % 2 == i)
                .cloned()
                .collect(),
        };
        let parts: Vec<(String, Table)> = [1, 0]
            .iter()
            .map(|&i| {
                let text = shard(i).to_csv();
                (format!("s{i}"), Table::parse(&text, "s").unwrap())
            })
            .collect();
        let merged = Table::merge(parts).unwrap();
        assert_eq!(merged.to_csv(), whole.to_csv());
        // A missing shard or a shard given twice is refused.
        let e = Table::merge(vec![("s1".into(), shard(1))]).unwrap_err();
        assert!(e.contains("job 0 is missing"), "{e}");
        let e = Table::merge(vec![
            ("s0".into(), shard(0)),
            ("s1".into(), shard(1)),
            ("s1b".into(), shard(1)),
        ])
        .unwrap_err();
        assert!(e.contains("more than one"), "{e}");
    }

    #[test]
    fn rejects_foreign_csv() {
        assert!(Table::parse("", "f").is_err());
        assert!(Table::parse("a,b,c\n1,2,3\n", "f").is_err());
        assert!(Table::parse(
            "job,config,config_file,workload,sim_time_ns,events\n1,2\n",
            "f"
        )
        .is_err());
        assert!(parse_csv("\"abc").is_err());
    }

    #[test]
    fn host_files_merge_in_job_order() {
        let a = "job,seconds\n1,0.5\n3,0.1\n".to_string();
        let b = "job,seconds\n0,0.2\n2,0.3\n".to_string();
        let m = merge_host_csv(&[("a".into(), a), ("b".into(), b)]).unwrap();
        assert_eq!(m, "job,seconds\n0,0.2\n1,0.5\n2,0.3\n3,0.1\n");
    }

    #[test]
    fn rows_of_different_sweeps_are_not_one_grid() {
        let r = |job: usize, config: &str, workload: &str, set: &str| Row {
            config: config.into(),
            config_file: config.into(),
            workload: workload.into(),
            ..row(job, &[set], &[])
        };
        // 2 configs x 2 workloads x 2 values, config-major; a workload given twice is fine.
        let mut grid = Vec::new();
        for c in ["optane", "nvm-ppo"] {
            for w in ["btree", "btree"] {
                for v in ["1", "2"] {
                    grid.push(r(grid.len(), c, w, v));
                }
            }
        }
        assert!(is_one_grid(&grid));
        assert!(is_one_grid(&grid[..4]));
        // Job 1 from another sweep (its workload).
        let mut mixed = grid.clone();
        mixed[1] = r(1, "optane", "skiplist", "2");
        assert!(!is_one_grid(&mixed));
        // Two shards of two unrelated sweeps: job 0 optane/btree, job 1 nvm-ppo/skiplist.
        let two = vec![
            r(0, "optane", "btree", "1"),
            r(1, "nvm-ppo", "skiplist", "1"),
        ];
        assert!(!is_one_grid(&two));
        // Shards of two sweeps that differ only in their --set values: jobs 0-1 of
        // `--config optane,nvm-ppo --set k=1,2`, jobs 2-3 of the same with `k=3,4` (the value
        // column was not compared, and such shards merged into one table).
        let values = [
            r(0, "optane", "btree", "1"),
            r(1, "optane", "btree", "2"),
            r(2, "nvm-ppo", "btree", "3"),
            r(3, "nvm-ppo", "btree", "4"),
        ];
        assert!(!is_one_grid(&values));
        let e = Table::merge(vec![
            (
                "a".into(),
                Table {
                    set_keys: vec!["k".into()],
                    rows: vec![two[0].clone()],
                },
            ),
            (
                "b".into(),
                Table {
                    set_keys: vec!["k".into()],
                    rows: vec![two[1].clone()],
                },
            ),
        ])
        .unwrap_err();
        assert!(e.contains("different sweeps"), "{e}");
    }
}
