//! The benchmark module runs end to end on a small pool (no speed asserted), and the thread
//! pool computes the same parity as a single thread.

mod common;
use common::{Blocks, Rng};
use pmec::bench::{self, Axis, BenchConfig, DataPool, Workload};
use pmec::{Codec, ThreadPool};

fn small(cfg: BenchConfig) -> BenchConfig {
    BenchConfig {
        bytes_per_rep: 1 << 20,
        reps: 1,
        ..cfg
    }
}

#[test]
fn bench_points_sweeps_and_breakdown_run() {
    let pool = DataPool::new(16 << 20).unwrap();
    let have_isal = common::system_isal().is_some();
    let r = bench::run(&pool, &small(BenchConfig::default())).unwrap();
    assert!(r.pmec.gbps > 0.0 && r.pmec.runs.len() == 1);
    assert_eq!(r.isal.is_some(), have_isal, "{:?}", r.isal_note);
    let dec = small(BenchConfig {
        workload: Workload::Decode { erasures: 2 },
        in_cache: true,
        ..BenchConfig::default()
    });
    assert!(bench::run(&pool, &dec).unwrap().pmec.gbps > 0.0);
    let lrc = small(BenchConfig {
        k: 12,
        m: 2,
        workload: Workload::Lrc { l: 3 },
        threads: 2,
        ..BenchConfig::default()
    });
    assert!(bench::run(&pool, &lrc).unwrap().pmec.gbps > 0.0);
    let s = bench::sweep(&pool, &small(BenchConfig::default()), Axis::K, &[4, 10]).unwrap();
    assert_eq!(
        s.iter().map(|r| r.config.k).collect::<Vec<_>>(),
        vec![4, 10]
    );
    let b = bench::breakdown(&pool, &small(BenchConfig::default()), 16).unwrap();
    assert_eq!(
        b.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        vec![
            "Vanilla",
            "+SW",
            "+HW",
            "+BF",
            "stripe-ahead L2 (pmlab)",
            "stripe-ahead L1 (pmlab)"
        ]
    );
    // Header, separator, one row per point, then the note on what the columns are.
    let md = bench::markdown(&s);
    assert_eq!(
        md.lines().filter(|l| l.starts_with("| RS")).count(),
        2,
        "{md}"
    );
    assert!(
        md.contains("median is shown with the slowest and fastest run"),
        "{md}"
    );
    let bad = small(BenchConfig {
        workload: Workload::Decode { erasures: 5 },
        ..BenchConfig::default()
    });
    assert!(bench::run(&pool, &bad).is_err());
    // the memory references run on the same pool (and refuse what they cannot measure)
    for threads in [1, 2] {
        let cfg = small(BenchConfig {
            threads,
            ..BenchConfig::default()
        });
        assert!(bench::stripe_traffic_gbps(&pool, &cfg).unwrap() > 0.0);
        assert!(bench::stream_gbps(&pool, 1 << 20, threads) > 0.0);
    }
    let tiny = small(BenchConfig {
        block: 32,
        ..BenchConfig::default()
    });
    assert!(bench::stripe_traffic_gbps(&pool, &tiny).is_err());
}

#[test]
fn thread_pool_matches_single_thread() {
    let mut rng = Rng::new(31);
    let (k, m, len, n) = (10, 4, 1024 + 64, 37);
    let codec = Codec::new(k, m).unwrap();
    let data = Blocks::new(n * k, len, 0, &mut rng);
    let mut one = Blocks::new(n * m, len, 0, &mut rng);
    let mut many = Blocks::new(n * m, len, 0, &mut rng);
    codec
        .encode_batch(&data.slices(), &mut one.slices_mut())
        .unwrap();
    for t in [2, 3, 16] {
        ThreadPool::new(t)
            .encode_batch(&codec, &data.slices(), &mut many.slices_mut())
            .unwrap();
        assert_eq!(one.to_vecs(), many.to_vecs(), "{t} threads");
    }
    assert!(ThreadPool::new(64).effective_threads() <= pmec::pool::available_cores());
}
