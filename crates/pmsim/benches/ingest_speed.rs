//! End-to-end replay speed from a trace file, beside the simulation alone: 1M random 64 B
//! requests over 1 GiB (2/3 reads, as `replay_speed`) written as a plain text trace
//! (`0xADDR READ|WRITE CYCLE`) and as `.pmt`, replayed memory-only on a preset the way
//! `pmlab sim --trace` does it (`open_trace`, parsed on a second thread by `Pipelined`, into
//! `Replay`), against the same events already decoded in memory. The three runs alternate
//! over the rounds; medians with min-max, in million requests per second of host time.
//!
//! `cargo bench -p pmsim --bench ingest_speed -- [REQUESTS] [PRESET] [ROUNDS]`

use pmsim::pmtrace::{open_trace, write_pmt, Pipelined, TraceEvent};
use pmsim::{Replay, SimConfig};
use std::io::Write;
use std::time::Instant;

mod common;
use common::{positional_args, xorshift};

/// Host seconds from the event source's creation (opening the file and starting its parser
/// thread, for the end-to-end cases) to the replay's end; the replay is built before the clock
/// starts, as in every case.
fn replay<I>(cfg: &SimConfig, source: impl FnOnce() -> I) -> f64
where
    I: IntoIterator<Item = Result<TraceEvent, pmsim::pmtrace::TraceError>>,
{
    let mut r = Replay::new(cfg).expect("config");
    let start = Instant::now();
    r.run(source(), |_| {}).expect("replay");
    start.elapsed().as_secs_f64()
}

fn main() {
    let args = positional_args();
    let n: u64 = args
        .first()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let preset = args.get(1).map(String::as_str).unwrap_or("nvm-ppo");
    let rounds: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5);
    let cfg = SimConfig::preset(preset).expect("preset");
    let dir = std::env::temp_dir().join(format!("pmsim-ingest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = dir.join("requests.trace");
    let pmt = dir.join("requests.pmt");
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&text).unwrap());
        let mut x = 0x243f6a8885a308d3u64;
        for i in 0..n {
            xorshift(&mut x);
            let addr = ((x >> 16) % (1 << 30)) & !63;
            let op = if x.is_multiple_of(3) { "WRITE" } else { "READ" };
            writeln!(w, "0x{addr:x} {op} {}", 2 * i).unwrap();
        }
    }
    let src = open_trace(&text).expect("text trace");
    let header = src.header().clone();
    write_pmt(&header, src, std::fs::File::create(&pmt).unwrap()).expect("write .pmt");
    let events: Vec<TraceEvent> = open_trace(&pmt)
        .unwrap()
        .collect::<Result<_, _>>()
        .expect("read .pmt");
    let mut t = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..rounds {
        t[0].push(replay(&cfg, || events.iter().copied().map(Ok)));
        t[1].push(replay(&cfg, || Pipelined::new(open_trace(&text).unwrap())));
        t[2].push(replay(&cfg, || Pipelined::new(open_trace(&pmt).unwrap())));
        t[3].push(replay(&cfg, || open_trace(&text).unwrap()));
    }
    let names = [
        "simulation alone (events in memory)",
        "text trace, end to end",
        ".pmt trace, end to end",
        "text trace, parsed on the simulator's thread",
    ];
    for (name, mut s) in names.iter().zip(t) {
        s.sort_by(f64::total_cmp);
        let rate = |secs: f64| n as f64 / secs / 1e6;
        println!(
            "ingest_speed preset={preset} requests={n} rounds={rounds} case=\"{name}\" \
             mreq_per_s_median={:.2} min={:.2} max={:.2}",
            rate(s[s.len() / 2]),
            rate(s[s.len() - 1]),
            rate(s[0])
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
