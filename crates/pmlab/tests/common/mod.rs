//! Helpers shared by the `pmlab` binary's test files.

/// A counter of a `pmlab sim --json` file's text (0 when absent).
pub fn json_counter(stats: &str, k: &str) -> u64 {
    stats.find(&format!("\"{k}\":")).map_or(0, |i| {
        let v = stats[i + k.len() + 3..].trim_start();
        v[..v.find(|c: char| !c.is_ascii_digit()).unwrap()]
            .parse()
            .unwrap()
    })
}
