//! Sharding: which slice of the grid this process runs (`--shard I/N` or a launcher's
//! environment), and how shard files are named.

use crate::atomic_file::with_suffix;
use std::path::{Path, PathBuf};

/// The most shards a sweep is split into (each writes a file; the last to finish reads them all).
pub const MAX_SHARDS: usize = 65536;

/// Shard `index` of `count`: the process runs the jobs whose index % count == index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// 0-based shard number.
    pub index: usize,
    /// Number of shards.
    pub count: usize,
}

impl Shard {
    /// Parses `I/N` (0-based, I < N).
    pub fn parse(s: &str) -> Result<Shard, String> {
        let bad = || format!("--shard {s}: expected I/N with 0 <= I < N, e.g. 0/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        Shard::new(index, count).map_err(|e| format!("--shard {s}: {e}"))
    }

    fn new(index: usize, count: usize) -> Result<Shard, String> {
        if count == 0 {
            return Err("the shard count must be at least 1".into());
        }
        if count > MAX_SHARDS {
            return Err(format!("at most {MAX_SHARDS} shards (got {count})"));
        }
        if index >= count {
            return Err(format!(
                "shard {index} of {count} does not exist (shards are numbered 0 to {})",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }

    /// Whether job `job` belongs to this shard.
    pub fn owns(&self, job: usize) -> bool {
        job % self.count == self.index
    }

    /// The file this shard writes its rows to: `OUT.shard-I-of-N`.
    pub fn file(&self, out: &Path) -> PathBuf {
        with_suffix(out, &format!(".shard-{}-of-{}", self.index, self.count))
    }

    /// Reads `I` and `N` back from a shard file name (`....shard-I-of-N`).
    pub fn from_file_name(path: &Path) -> Option<Shard> {
        let name = path.file_name()?.to_str()?;
        let tail = &name[name.rfind(".shard-")? + ".shard-".len()..];
        let (i, n) = tail.split_once("-of-")?;
        Shard::new(i.parse().ok()?, n.parse().ok()?).ok()
    }
}

/// A shard file's path without its `.shard-I-of-N` suffix (the sweep's `--out`).
pub fn strip_shard_suffix(path: &Path) -> PathBuf {
    let s = path.as_os_str().to_string_lossy();
    match s.rfind(".shard-") {
        Some(i) => PathBuf::from(&s[..i]),
        None => path.to_path_buf(),
    }
}

/// The shard given by a parallel launcher's environment, if any, and where it came from.
///
/// Checked in order: MPICH/Hydra (`PMI_RANK`, `PMI_SIZE`), Open MPI
/// (`OMPI_COMM_WORLD_RANK`, `OMPI_COMM_WORLD_SIZE`), Slurm job arrays (`SLURM_ARRAY_TASK_ID`
/// with `SLURM_ARRAY_TASK_MIN`/`MAX` or `SLURM_ARRAY_TASK_COUNT`). Malformed or inconsistent
/// values are an error, not a silent single-process run. `env` looks a variable up (tests pass
/// a map; the command passes `std::env::var`).
pub fn from_env(env: impl Fn(&str) -> Option<String>) -> Result<Option<(Shard, String)>, String> {
    let num = |name: &str| -> Result<Option<usize>, String> {
        match env(name) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| format!("{name}={v}: not a non-negative integer")),
        }
    };
    for (rank, size) in [
        ("PMI_RANK", "PMI_SIZE"),
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ] {
        if let Some(r) = num(rank)? {
            let n = num(size)?.ok_or_else(|| format!("{rank} is set but {size} is not"))?;
            let shard = Shard::new(r, n).map_err(|e| format!("{rank}={r}, {size}={n}: {e}"))?;
            return Ok(Some((shard, format!("{rank}/{size}"))));
        }
        if let Some(n) = num(size)?.filter(|&n| n > 1) {
            // Every process would run the whole grid, each writing the same output.
            return Err(format!("{size}={n} is set but {rank} is not"));
        }
    }
    let Some(id) = num("SLURM_ARRAY_TASK_ID")? else {
        return Ok(None);
    };
    if let Some(step) = num("SLURM_ARRAY_TASK_STEP")? {
        if step != 1 {
            return Err(format!(
                "SLURM_ARRAY_TASK_STEP={step}: use a contiguous array such as --array=0-3"
            ));
        }
    }
    let min = num("SLURM_ARRAY_TASK_MIN")?;
    let max = num("SLURM_ARRAY_TASK_MAX")?;
    let count = num("SLURM_ARRAY_TASK_COUNT")?;
    let base = min.unwrap_or(0);
    let size = match (max, count) {
        (Some(max), c) => {
            // Saturating: a maximum of usize::MAX overflowed here (a panic in a debug build; in
            // a release build a count of 0, refused as "must be at least 1"); it is refused as
            // too many shards.
            let size = max
                .checked_sub(base)
                .map(|d| d.saturating_add(1))
                .ok_or_else(|| format!("SLURM_ARRAY_TASK_MAX={max} is below the minimum {base}"))?;
            if let Some(c) = c.filter(|&c| c != size) {
                return Err(format!(
                    "Slurm array has {c} tasks over ids {base}-{max}: use a contiguous array \
                     such as --array=0-3"
                ));
            }
            size
        }
        (None, Some(c)) => c,
        (None, None) => {
            return Err(
                "SLURM_ARRAY_TASK_ID is set but neither SLURM_ARRAY_TASK_COUNT nor \
                 SLURM_ARRAY_TASK_MAX is"
                    .into(),
            )
        }
    };
    let rank = id
        .checked_sub(base)
        .ok_or_else(|| format!("SLURM_ARRAY_TASK_ID={id} is below SLURM_ARRAY_TASK_MIN={base}"))?;
    let shard = Shard::new(rank, size).map_err(|e| format!("Slurm array task {id}: {e}"))?;
    Ok(Some((shard, "SLURM_ARRAY_TASK_ID".into())))
}

/// How many processes the launcher started on this node (to share the cores), if it says.
pub fn local_ranks(env: impl Fn(&str) -> Option<String>) -> Option<usize> {
    ["MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE"]
        .iter()
        .find_map(|v| env(v)?.trim().parse().ok())
        .filter(|&n: &usize| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn parses_shard_arguments() {
        assert_eq!(Shard::parse("0/2").unwrap(), Shard { index: 0, count: 2 });
        assert_eq!(Shard::parse("3/4").unwrap(), Shard { index: 3, count: 4 });
        for bad in ["2/2", "x/y", "1", "0/0", "-1/2", "1/2/3", ""] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        assert!(Shard::parse("2/2").unwrap_err().contains("0 to 1"));
        // A count no sweep needs (it used to write its shard file, then panic allocating).
        assert!(Shard::parse("1/18446744073709551615")
            .unwrap_err()
            .contains("at most 65536 shards"));
        assert!(Shard::parse("0/65536").is_ok());
    }

    #[test]
    fn shard_files_round_trip() {
        let s = Shard { index: 1, count: 3 };
        let f = s.file(Path::new("/tmp/out.csv"));
        assert_eq!(f, Path::new("/tmp/out.csv.shard-1-of-3"));
        assert_eq!(Shard::from_file_name(&f), Some(s));
        assert_eq!(strip_shard_suffix(&f), Path::new("/tmp/out.csv"));
        assert_eq!(Shard::from_file_name(Path::new("out.csv")), None);
        assert_eq!(Shard::from_file_name(Path::new("x.shard-3-of-3")), None);
        assert!(s.owns(4) && !s.owns(5));
    }

    #[test]
    fn reads_launcher_environments() {
        assert_eq!(from_env(env(&[])).unwrap(), None);
        let (s, from) = from_env(env(&[("PMI_RANK", "1"), ("PMI_SIZE", "4")]))
            .unwrap()
            .unwrap();
        assert_eq!(
            (s, from.as_str()),
            (Shard { index: 1, count: 4 }, "PMI_RANK/PMI_SIZE")
        );
        let (s, _) = from_env(env(&[
            ("OMPI_COMM_WORLD_RANK", "2"),
            ("OMPI_COMM_WORLD_SIZE", "3"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(s, Shard { index: 2, count: 3 });
        // --array=1-4: ids 1..4 become shards 0..3.
        let (s, _) = from_env(env(&[
            ("SLURM_ARRAY_TASK_ID", "4"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_MAX", "4"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(s, Shard { index: 3, count: 4 });
        let (s, _) = from_env(env(&[
            ("SLURM_ARRAY_TASK_ID", "0"),
            ("SLURM_ARRAY_TASK_COUNT", "2"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(s, Shard { index: 0, count: 2 });
    }

    #[test]
    fn a_size_of_one_without_a_rank_is_a_single_process() {
        assert_eq!(from_env(env(&[("PMI_SIZE", "1")])).unwrap(), None);
    }

    #[test]
    fn rejects_malformed_launcher_environments() {
        for bad in [
            env(&[("PMI_RANK", "x"), ("PMI_SIZE", "2")]),
            env(&[("PMI_RANK", "0")]),
            env(&[("PMI_SIZE", "2")]),
            env(&[("OMPI_COMM_WORLD_SIZE", "4")]),
            env(&[("PMI_RANK", "2"), ("PMI_SIZE", "2")]),
            env(&[("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "")]),
            env(&[("SLURM_ARRAY_TASK_ID", "0")]),
            // --array=0,2,5: not contiguous.
            env(&[
                ("SLURM_ARRAY_TASK_ID", "5"),
                ("SLURM_ARRAY_TASK_MIN", "0"),
                ("SLURM_ARRAY_TASK_MAX", "5"),
                ("SLURM_ARRAY_TASK_COUNT", "3"),
            ]),
            env(&[
                ("SLURM_ARRAY_TASK_ID", "2"),
                ("SLURM_ARRAY_TASK_MIN", "0"),
                ("SLURM_ARRAY_TASK_MAX", "4"),
                ("SLURM_ARRAY_TASK_STEP", "2"),
            ]),
        ] {
            assert!(from_env(bad).is_err());
        }
        let e = from_env(env(&[
            ("SLURM_ARRAY_TASK_ID", "0"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_MAX", &usize::MAX.to_string()),
        ]))
        .unwrap_err();
        assert!(e.contains("at most 65536 shards"), "{e}");
    }

    #[test]
    fn local_rank_count() {
        assert_eq!(local_ranks(env(&[("MPI_LOCALNRANKS", "4")])), Some(4));
        assert_eq!(local_ranks(env(&[])), None);
    }
}
