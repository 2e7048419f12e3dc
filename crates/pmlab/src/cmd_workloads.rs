//! `pmlab workloads`: the built-in workloads, one per line.

/// Prints name, model, suite, default threads and operations, size and description.
pub fn run() -> Result<(), String> {
    println!(
        "{:<14} {:<8} {:<8} {:>7} {:>9}  description (size)",
        "name", "model", "suite", "threads", "ops"
    );
    for w in pmwork::registry() {
        let i = w.info();
        println!(
            "{:<14} {:<8} {:<8} {:>7} {:>9}  {} ({})",
            i.name,
            i.model.name(),
            i.suite.name(),
            i.default_threads,
            i.default_ops,
            i.description,
            i.size
        );
    }
    Ok(())
}
