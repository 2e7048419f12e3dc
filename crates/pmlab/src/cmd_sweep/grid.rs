//! The sweep grid: configs × workloads × the cartesian product of `--set` value lists, expanded
//! into jobs with a stable index, and validated before anything runs.

use crate::simulate::JobInput;
use pmsim::SimConfig;
use std::path::PathBuf;

/// Most resolved configs (configs x `--set` combinations) a sweep holds. A few `--set` lists
/// multiply fast (seven of ten values: 10^7), and every config of the grid is resolved and
/// kept before the first job runs: a larger grid exhausted the memory before anything ran.
/// Workloads do not multiply the configs: each job is an index.
pub const MAX_CONFIGS: usize = 100_000;

/// Most jobs a sweep runs (an index and a result row each).
pub const MAX_JOBS: usize = 10_000_000;

/// One `--set KEY=V1,V2,...` argument: a config key and the values to sweep it over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetAxis {
    /// Dotted config key, e.g. `controller.adr`.
    pub key: String,
    /// The values, as TOML text (`true`, `32`, `[1,2]`, `"a,b"`), in the order given.
    pub values: Vec<String>,
}

impl SetAxis {
    /// Parses `KEY=V1,V2,...`; values are split on commas outside `[...]`, `{...}` and quotes.
    pub fn parse(arg: &str) -> Result<SetAxis, String> {
        let (key, raw) = arg
            .split_once('=')
            .ok_or_else(|| format!("--set {arg}: expected KEY=V1,V2,..."))?;
        let key = key.trim();
        if key.is_empty() {
            return Err(format!("--set {arg}: empty key"));
        }
        let values = split_values(raw).map_err(|e| format!("--set {arg}: {e}"))?;
        Ok(SetAxis {
            key: key.to_string(),
            values,
        })
    }
}

/// Splits a value list on top-level commas: commas inside brackets, braces or quotes (single or
/// double, with `\` escapes inside double quotes) belong to the value. Values are trimmed and
/// must not be empty.
pub fn split_values(raw: &str) -> Result<Vec<String>, String> {
    let mut values = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in raw.chars() {
        if let Some(q) = quote {
            cur.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' && q == '"' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '[' | '{' => depth += 1,
            ']' | '}' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| format!("unbalanced `{c}` in `{raw}`"))?;
            }
            ',' if depth == 0 => {
                values.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if quote.is_some() {
        return Err(format!("unterminated quote in `{raw}`"));
    }
    if depth > 0 {
        return Err(format!("unclosed bracket in `{raw}`"));
    }
    values.push(cur);
    let values: Vec<String> = values.into_iter().map(|v| v.trim().to_string()).collect();
    if values.iter().any(String::is_empty) {
        return Err(format!("empty value in `{raw}`"));
    }
    // A value given twice ran its jobs twice, with identical rows.
    if let Some((i, v)) = first_repeat(&values) {
        return Err(format!(
            "value `{v}` given twice in `{raw}` (item {})",
            i + 1
        ));
    }
    Ok(values)
}

/// The first item that repeats an earlier one, with its index (a hash set: a sweep may list a
/// million workloads).
fn first_repeat<T: std::hash::Hash + Eq>(items: &[T]) -> Option<(usize, &T)> {
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    items.iter().enumerate().find(|(_, x)| !seen.insert(*x))
}

/// The whole sweep: what the command line asked for.
#[derive(Clone, Debug)]
pub struct Grid {
    /// `--config` arguments (files or preset names), in the order given.
    pub configs: Vec<PathBuf>,
    /// `--workload` arguments, in the order given.
    pub workloads: Vec<String>,
    /// `--set` axes, in the order given.
    pub axes: Vec<SetAxis>,
}

/// One job's place in the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobPos {
    /// Index into [`Grid::configs`].
    pub config: usize,
    /// Index into [`Grid::workloads`].
    pub workload: usize,
    /// Index of the `--set` combination (see [`Grid::combination`]).
    pub combo: usize,
}

impl Grid {
    /// Builds a grid; rejects a config, a workload or a `--set` key given twice.
    pub fn new(
        configs: Vec<PathBuf>,
        workloads: Vec<String>,
        axes: Vec<SetAxis>,
    ) -> Result<Grid, String> {
        if configs.is_empty() || workloads.is_empty() {
            return Err("a sweep needs at least one --config and one --workload".into());
        }
        // One given twice ran its jobs twice, with identical rows.
        if let Some((i, c)) = first_repeat(&configs) {
            return Err(format!(
                "--config {} given twice (item {})",
                c.display(),
                i + 1
            ));
        }
        if let Some((i, w)) = first_repeat(&workloads) {
            return Err(format!("--workload {w} given twice (item {})", i + 1));
        }
        for (i, a) in axes.iter().enumerate() {
            // The same key twice, or `a` and `a.b` in two axes: one value would win and the CSV
            // would label rows with values that never ran.
            if let Some(b) = axes[..i]
                .iter()
                .find(|b| pmsim::config::overlapping_keys(&b.key, &a.key))
            {
                return Err(if b.key == a.key {
                    format!(
                        "--set {}: key given twice (list all values in one --set {}=V1,V2)",
                        a.key, a.key
                    )
                } else {
                    format!(
                        "--set {}: overlaps --set {} (one is a section holding the other)",
                        a.key, b.key
                    )
                });
            }
        }
        let resolved = axes
            .iter()
            .try_fold(configs.len(), |n, a| n.checked_mul(a.values.len()));
        let jobs = resolved.and_then(|n| n.checked_mul(workloads.len()));
        match (resolved, jobs) {
            (None, _) | (_, None) => {
                return Err(format!(
                    "the grid has more than {} jobs (the product of the config, workload and \
                     --set value counts overflows)",
                    usize::MAX
                ))
            }
            (Some(c), _) if c > MAX_CONFIGS => {
                return Err(format!(
                    "the grid has {c} configurations ({} config(s) x {} setting(s)) to resolve, \
                     more than the {MAX_CONFIGS} one sweep holds: split it into several sweeps",
                    configs.len(),
                    c / configs.len().max(1)
                ))
            }
            (_, Some(n)) if n > MAX_JOBS => {
                return Err(format!(
                    "the grid has {n} jobs ({} config(s) x {} workload(s) x {} setting(s)), more \
                     than the {MAX_JOBS} one sweep runs: split it into several sweeps",
                    configs.len(),
                    workloads.len(),
                    n / (configs.len() * workloads.len()).max(1)
                ))
            }
            _ => {}
        }
        Ok(Grid {
            configs,
            workloads,
            axes,
        })
    }

    /// Number of `--set` combinations (1 without `--set`).
    pub fn combinations(&self) -> usize {
        self.axes.iter().map(|a| a.values.len()).product()
    }

    /// Total number of jobs.
    pub fn job_count(&self) -> usize {
        self.configs.len() * self.workloads.len() * self.combinations()
    }

    /// Where job `index` sits: config-major, then workload, then `--set` combination.
    pub fn position(&self, index: usize) -> JobPos {
        let combos = self.combinations();
        JobPos {
            config: index / (self.workloads.len() * combos),
            workload: index / combos % self.workloads.len(),
            combo: index % combos,
        }
    }

    /// Where the config of the job at `p` sits in the list [`Grid::validate`] returns.
    pub fn config_index(&self, p: JobPos) -> usize {
        p.config * self.combinations() + p.combo
    }

    /// The values (one per axis) of combination `combo`. The first `--set` varies slowest, so
    /// combinations come in lexicographic order of the value positions as given.
    pub fn combination(&self, combo: usize) -> Vec<&str> {
        let mut rest = combo;
        let mut out = vec![""; self.axes.len()];
        for (slot, axis) in out.iter_mut().zip(&self.axes).rev() {
            *slot = &axis.values[rest % axis.values.len()];
            rest /= axis.values.len();
        }
        out
    }

    /// `KEY=VALUE` overrides of combination `combo`, as `SimConfig::with_overrides` takes them.
    pub fn overrides(&self, combo: usize) -> Vec<String> {
        self.axes
            .iter()
            .zip(self.combination(combo))
            .map(|(a, v)| format!("{}={v}", a.key))
            .collect()
    }

    /// A short description of job `index` for messages.
    pub fn describe(&self, index: usize) -> String {
        let p = self.position(index);
        let mut s = format!(
            "job {index} (config {}, workload {}",
            self.configs[p.config].display(),
            self.workloads[p.workload]
        );
        for o in self.overrides(p.combo) {
            s.push_str(", ");
            s.push_str(&o);
        }
        s.push(')');
        s
    }

    /// Loads every config and applies every `--set` combination to it, before anything runs.
    /// Returns the configs indexed by `config * combinations() + combo`; the error names the
    /// first job that would have used the bad config or override.
    pub fn validate(&self) -> Result<Vec<SimConfig>, String> {
        let combos = self.combinations();
        let per_config = self.workloads.len() * combos;
        let mut out = Vec::with_capacity(self.configs.len() * combos);
        for (c, path) in self.configs.iter().enumerate() {
            let base = SimConfig::load(path)
                .map_err(|e| format!("{}: {e}", self.describe(c * per_config)))?;
            for combo in 0..combos {
                let cfg = base
                    .with_overrides(&self.overrides(combo))
                    .map_err(|e| format!("{}: {e}", self.describe(c * per_config + combo)))?;
                out.push(cfg);
            }
        }
        // Every workload names a readable trace file or is a valid workload spec, checked now
        // rather than when its first job runs (possibly after hours of other jobs); and so is
        // every job's config on the model its workload runs on (a memory-request trace under
        // hardware logging, a generated workload under system.model = "memory", caches larger
        // than the memory failed only in their jobs).
        let mut requests = Vec::with_capacity(self.workloads.len());
        for w in &self.workloads {
            let path = std::path::Path::new(w);
            requests.push(if path.is_file() {
                let requests = crate::simulate::trace_is_request_stream(path)
                    .map_err(|e| format!("--workload {e}"))?;
                Some(JobInput::Trace { requests })
            } else if path.is_dir() {
                // (It opens: the read in its job failed, after the jobs before it had run.)
                return Err(format!("--workload {w}: is a directory, not a trace file"));
            } else if path.exists() {
                // A FIFO or a device is not read ahead of its job (what it holds would be gone).
                std::fs::File::open(path).map_err(|e| format!("--workload {w}: {e}"))?;
                None
            } else {
                let (_, p) = crate::simulate::parse_generated(w)
                    .map_err(|e| format!("{e} (and no trace file has that name)"))?;
                Some(JobInput::Generated { threads: p.threads })
            });
        }
        for job in 0..self.job_count() {
            let p = self.position(job);
            if let Some(input) = requests[p.workload] {
                crate::simulate::check_job(&out[self.config_index(p)], input)
                    .map_err(|e| format!("{}: {e}", self.describe(job)))?;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn a_value_config_or_workload_given_twice_is_refused() {
        let e = split_values("true,false,true").unwrap_err();
        assert!(e.contains("value `true` given twice"), "{e}");
        let e = Grid::new(
            vec!["optane".into(), "optane".into()],
            v(&["btree"]),
            vec![],
        )
        .unwrap_err();
        assert!(e.contains("--config optane given twice (item 2)"), "{e}");
        let e = Grid::new(
            vec!["optane".into()],
            v(&["btree", "ctree", "btree"]),
            vec![],
        )
        .unwrap_err();
        assert!(e.contains("--workload btree given twice (item 3)"), "{e}");
    }

    #[test]
    fn splits_on_top_level_commas_only() {
        assert_eq!(split_values("true,false").unwrap(), v(&["true", "false"]));
        assert_eq!(split_values("32").unwrap(), v(&["32"]));
        assert_eq!(
            split_values("[1,2], [3,4]").unwrap(),
            v(&["[1,2]", "[3,4]"])
        );
        assert_eq!(
            split_values(r#""a,b",'c,d',e"#).unwrap(),
            v(&[r#""a,b""#, "'c,d'", "e"])
        );
        assert_eq!(
            split_values(r#""x\",y",z"#).unwrap(),
            v(&[r#""x\",y""#, "z"])
        );
        assert_eq!(
            split_values("{a = [1, 2], b = 3},[]").unwrap(),
            v(&["{a = [1, 2], b = 3}", "[]"])
        );
    }

    #[test]
    fn rejects_malformed_value_lists() {
        assert!(split_values("").is_err());
        assert!(split_values("1,,2").is_err());
        assert!(split_values("1,").is_err());
        assert!(split_values("[1,2").is_err());
        assert!(split_values("1]").is_err());
        assert!(split_values("\"abc").is_err());
        assert!(SetAxis::parse("controller.adr").is_err());
        assert!(SetAxis::parse("=1").is_err());
    }

    #[test]
    fn expands_config_major_then_workload_then_sets_in_order() {
        let g = Grid::new(
            vec!["a".into(), "b".into()],
            v(&["w1", "w2", "w3"]),
            vec![
                SetAxis::parse("x=1,2").unwrap(),
                SetAxis::parse("y=p,q,r").unwrap(),
            ],
        )
        .unwrap();
        assert_eq!(g.combinations(), 6);
        assert_eq!(g.job_count(), 36);
        assert_eq!(
            g.position(0),
            JobPos {
                config: 0,
                workload: 0,
                combo: 0
            }
        );
        assert_eq!(
            g.position(7),
            JobPos {
                config: 0,
                workload: 1,
                combo: 1
            }
        );
        assert_eq!(
            g.position(35),
            JobPos {
                config: 1,
                workload: 2,
                combo: 5
            }
        );
        let combos: Vec<Vec<&str>> = (0..6).map(|c| g.combination(c)).collect();
        assert_eq!(
            combos,
            vec![
                vec!["1", "p"],
                vec!["1", "q"],
                vec!["1", "r"],
                vec!["2", "p"],
                vec!["2", "q"],
                vec!["2", "r"],
            ]
        );
        assert_eq!(g.overrides(4), v(&["x=2", "y=q"]));
        assert_eq!(g.describe(7), "job 7 (config a, workload w2, x=1, y=q)");
    }

    #[test]
    fn no_sets_is_one_combination_and_duplicate_keys_are_rejected() {
        let g = Grid::new(vec!["a".into()], v(&["w"]), vec![]).unwrap();
        assert_eq!(g.job_count(), 1);
        assert!(g.combination(0).is_empty());
        let dup = Grid::new(
            vec!["a".into()],
            v(&["w"]),
            vec![
                SetAxis::parse("x=1").unwrap(),
                SetAxis::parse("x=2").unwrap(),
            ],
        );
        assert!(dup.unwrap_err().contains("given twice"));
    }

    /// A grid too large to hold is refused before anything is resolved (10^7 jobs: the configs
    /// of its settings, 8 GB, were allocated and the allocation aborted the process).
    #[test]
    fn a_huge_grid_is_refused() {
        let axes: Vec<SetAxis> = (0..7)
            .map(|i| SetAxis::parse(&format!("k{i}=0,1,2,3,4,5,6,7,8,9")).unwrap())
            .collect();
        let e = Grid::new(vec!["a".into()], v(&["w"]), axes).unwrap_err();
        assert!(
            e.contains("10000000 configurations") && e.contains("split"),
            "{e}"
        );
        // Many workloads over few settings: many jobs, few configs to hold (a sharded sweep of
        // a thousand traces); only a job count past MAX_JOBS is refused.
        let axes = vec![SetAxis::parse("k=0,1,2,3,4,5,6,7,8,9").unwrap()];
        let traces: Vec<String> = (0..20_000).map(|i| format!("t{i}")).collect();
        let refs: Vec<&str> = traces.iter().map(|t| t.as_str()).collect();
        assert!(Grid::new(vec!["a".into()], v(&refs), axes.clone()).is_ok());
        let many: Vec<String> = (0..1_000_001).map(|i| format!("t{i}")).collect();
        let refs: Vec<&str> = many.iter().map(|t| t.as_str()).collect();
        let e = Grid::new(vec!["a".into()], v(&refs), axes).unwrap_err();
        assert!(e.contains("10000010 jobs"), "{e}");
        let axes: Vec<SetAxis> = (0..5)
            .map(|i| SetAxis::parse(&format!("k{i}=0,1,2,3,4,5,6,7,8,9")).unwrap())
            .collect();
        assert!(Grid::new(vec!["a".into()], v(&["w"]), axes).is_ok());
    }

    #[test]
    fn validation_names_the_job() {
        let g = Grid::new(
            vec!["optane".into(), "nvm-ppo".into()],
            v(&["btree"]),
            vec![SetAxis::parse("controller.adr=true,false").unwrap()],
        )
        .unwrap();
        assert_eq!(g.validate().unwrap().len(), 4);
        let bad = Grid::new(
            vec!["optane".into(), "no-such-preset".into()],
            v(&["btree"]),
            vec![],
        )
        .unwrap();
        let e = bad.validate().unwrap_err();
        assert!(e.starts_with("job 1 (config no-such-preset"), "{e}");
        let bad = Grid::new(
            vec!["optane".into()],
            v(&["btree"]),
            vec![SetAxis::parse("controller.nope=1,2").unwrap()],
        )
        .unwrap();
        let e = bad.validate().unwrap_err();
        assert!(
            e.starts_with("job 0 ") && e.contains("controller.nope"),
            "{e}"
        );
        // A workload that is neither a trace file nor a workload spec, before any job runs.
        let bad = Grid::new(vec!["optane".into()], v(&["no-such-workload"]), vec![]).unwrap();
        let e = bad.validate().unwrap_err();
        assert!(e.contains("no trace file has that name"), "{e}");
    }
}
