//! Decode of every erasure pattern (exhaustive for small codes), update, verify, batch,
//! LRC local repair and global decode, and parameter errors.

mod common;
use common::{Blocks, Rng};
use pmec::dialga::coordinator::{CoordinatorConfig, MAX_DISTANCE};
use pmec::dialga::tuner::TunerConfig;
use pmec::{matrix, Codec, Error, Isa, Lrc, MatrixKind, Schedule, Strategy};

fn subsets(n: usize, max: usize) -> Vec<Vec<usize>> {
    (0u32..(1 << n))
        .filter(|m| m.count_ones() as usize <= max)
        .map(|m| (0..n).filter(|i| m >> i & 1 == 1).collect())
        .collect()
}

fn encoded(codec: &Codec, len: usize, rng: &mut Rng) -> Vec<Vec<u8>> {
    let k = codec.data_shards();
    let mut shards: Vec<Vec<u8>> = (0..k).map(|_| rng.bytes(len)).collect();
    shards.extend((0..codec.parity_shards()).map(|_| vec![0u8; len]));
    let mut v: Vec<&mut [u8]> = shards.iter_mut().map(|s| s.as_mut_slice()).collect();
    codec.encode_shards(&mut v).unwrap();
    shards
}

#[test]
fn every_erasure_pattern_decodes_small_codes() {
    let mut rng = Rng::new(1);
    for (k, m) in [
        (1, 1),
        (2, 2),
        (3, 3),
        (4, 2),
        (4, 4),
        (5, 3),
        (6, 4),
        (8, 4),
    ] {
        for kind in [MatrixKind::Cauchy, MatrixKind::Vandermonde] {
            if kind == MatrixKind::Vandermonde && !matrix::vandermonde_is_mds(k, m) {
                continue;
            }
            let codec = Codec::builder(k, m).matrix(kind).build().unwrap();
            let len = 64 * 3 + 17;
            let orig = encoded(&codec, len, &mut rng);
            for erased in subsets(k + m, m) {
                let mut shards = orig.clone();
                for &e in &erased {
                    shards[e].fill(0xee);
                }
                let mut v: Vec<&mut [u8]> = shards.iter_mut().map(|s| s.as_mut_slice()).collect();
                codec.decode(&mut v, &erased).unwrap();
                assert_eq!(shards, orig, "k={k} m={m} {kind:?} erased={erased:?}");
            }
        }
    }
}

#[test]
fn decode_with_every_kernel_and_wide_stripes() {
    let mut rng = Rng::new(2);
    for isa in Isa::available_all() {
        for (k, m) in [(10, 4), (48, 4), (24, 8), (200, 55)] {
            let codec = Codec::builder(k, m).isa(isa).build().unwrap();
            let len = if k > 100 { 256 } else { 1024 + 40 };
            let orig = encoded(&codec, len, &mut rng);
            for _ in 0..3 {
                let e = rng.range(1, m);
                let mut erased: Vec<usize> = Vec::new();
                while erased.len() < e {
                    let x = rng.below(k + m);
                    if !erased.contains(&x) {
                        erased.push(x);
                    }
                }
                let mut shards = orig.clone();
                for &x in &erased {
                    shards[x].fill(0);
                }
                let mut v: Vec<&mut [u8]> = shards.iter_mut().map(|s| s.as_mut_slice()).collect();
                codec.decode(&mut v, &erased).unwrap();
                assert!(shards == orig, "{isa:?} k={k} m={m} erased={erased:?}");
            }
        }
    }
}

#[test]
fn decode_plans_are_cached() {
    let mut rng = Rng::new(3);
    let codec = Codec::new(6, 3).unwrap();
    let orig = encoded(&codec, 512, &mut rng);
    for _ in 0..3 {
        let mut shards = orig.clone();
        let mut v: Vec<&mut [u8]> = shards.iter_mut().map(|s| s.as_mut_slice()).collect();
        codec.decode(&mut v, &[1, 7]).unwrap();
    }
    assert_eq!(codec.cached_decode_plans(), 1);
    let mut shards = orig.clone();
    let mut v: Vec<&mut [u8]> = shards.iter_mut().map(|s| s.as_mut_slice()).collect();
    codec.decode(&mut v, &[0]).unwrap();
    assert_eq!(codec.cached_decode_plans(), 2);
}

#[test]
fn cached_decode_plans_tell_apart_shards_of_every_index() {
    // A cache key that folded shard 32 onto shard 0 (`1 << (e % 32)`) reused the plan for
    // shard 0 and rebuilt shard 32 wrongly without an error; no test had more than 32 shards
    // and several erasure patterns. Every single erasure of a 132-shard code, in turn.
    let mut rng = Rng::new(5);
    let codec = Codec::new(128, 4).unwrap();
    let orig = encoded(&codec, 128, &mut rng);
    for e in 0..132 {
        let mut shards = orig.clone();
        shards[e].fill(0);
        let mut v: Vec<&mut [u8]> = shards.iter_mut().map(|s| s.as_mut_slice()).collect();
        codec.decode(&mut v, &[e]).unwrap();
        assert_eq!(shards[e], orig[e], "shard {e}");
    }
    assert_eq!(codec.cached_decode_plans(), 132);
}

#[test]
fn reconstruct_and_verify() {
    let mut rng = Rng::new(4);
    let codec = Codec::new(5, 3).unwrap();
    let orig = encoded(&codec, 1000, &mut rng);
    let views: Vec<&[u8]> = orig.iter().map(|s| s.as_slice()).collect();
    assert!(codec.verify(&views).unwrap());
    let mut bad = orig.clone();
    bad[2][999] ^= 1;
    let views: Vec<&[u8]> = bad.iter().map(|s| s.as_slice()).collect();
    assert!(!codec.verify(&views).unwrap());
    let mut opt: Vec<Option<Vec<u8>>> = orig.iter().cloned().map(Some).collect();
    opt[0] = None;
    opt[4] = None;
    opt[6] = None;
    codec.reconstruct(&mut opt).unwrap();
    let got: Vec<Vec<u8>> = opt.into_iter().map(|s| s.unwrap()).collect();
    assert_eq!(got, orig);
}

/// A reconstruct that fails leaves its shards as it found them: a retry with the fault mended
/// rebuilds the stripe (the missing shards were once left as zero-filled buffers, which the
/// retry took for data and "rebuilt" nothing from). Present shards of unequal length are an
/// error even when nothing is missing.
#[test]
fn failed_reconstruct_leaves_the_shards_alone() {
    let mut rng = Rng::new(11);
    let codec = Codec::new(4, 2).unwrap();
    let orig = encoded(&codec, 64, &mut rng);
    let mut opt: Vec<Option<Vec<u8>>> = orig.iter().cloned().map(Some).collect();
    opt[0] = None;
    opt[5] = None;
    opt[2] = Some(vec![1; 63]);
    assert!(matches!(
        codec.reconstruct(&mut opt),
        Err(Error::LengthMismatch(_))
    ));
    assert!(opt[0].is_none() && opt[5].is_none());
    opt[2] = Some(orig[2].clone());
    codec.reconstruct(&mut opt).unwrap();
    let got: Vec<Vec<u8>> = opt.into_iter().map(|s| s.unwrap()).collect();
    assert_eq!(got, orig);
    let mut all: Vec<Vec<u8>> = orig.clone();
    all[3].pop();
    let mut views: Vec<&mut [u8]> = all.iter_mut().map(|v| v.as_mut_slice()).collect();
    assert!(matches!(
        codec.decode(&mut views, &[]),
        Err(Error::LengthMismatch(_))
    ));
}

#[test]
fn update_matches_reencode() {
    let mut rng = Rng::new(5);
    let codec = Codec::new(7, 3).unwrap();
    let mut shards = encoded(&codec, 777, &mut rng);
    for idx in [0, 3, 6] {
        let new = rng.bytes(777);
        let old = shards[idx].clone();
        {
            let (_, parity) = shards.split_at_mut(7);
            let mut p: Vec<&mut [u8]> = parity.iter_mut().map(|s| s.as_mut_slice()).collect();
            codec.update(idx, &old, &new, &mut p).unwrap();
        }
        shards[idx] = new;
        let views: Vec<&[u8]> = shards.iter().map(|s| s.as_slice()).collect();
        assert!(codec.verify(&views).unwrap(), "after updating block {idx}");
    }
}

#[test]
fn batch_encode_and_decode_match_single() {
    let mut rng = Rng::new(6);
    let (k, m, len, n) = (8, 4, 1024, 9);
    let codec = Codec::new(k, m).unwrap();
    let data = Blocks::new(n * k, len, 0, &mut rng);
    let mut par = Blocks::new(n * m, len, 0, &mut rng);
    codec
        .encode_batch(&data.slices(), &mut par.slices_mut())
        .unwrap();
    let ds = data.slices();
    let ps = par.to_vecs();
    let mut all: Vec<Vec<u8>> = Vec::new();
    for s in 0..n {
        let mut p = vec![vec![0u8; len]; m];
        let mut pv: Vec<&mut [u8]> = p.iter_mut().map(|v| v.as_mut_slice()).collect();
        codec.encode(&ds[s * k..(s + 1) * k], &mut pv).unwrap();
        assert_eq!(&p[..], &ps[s * m..(s + 1) * m]);
        all.extend(ds[s * k..(s + 1) * k].iter().map(|d| d.to_vec()));
        all.extend(p);
    }
    let orig = all.clone();
    for s in 0..n {
        for e in [0, 5, 9] {
            all[s * (k + m) + e].fill(0);
        }
    }
    let mut v: Vec<&mut [u8]> = all.iter_mut().map(|s| s.as_mut_slice()).collect();
    codec.decode_batch(&mut v, &[0, 5, 9]).unwrap();
    assert!(all == orig);
}

#[test]
fn parameter_and_argument_errors() {
    assert!(matches!(Codec::new(0, 2), Err(Error::InvalidParameter(_))));
    assert!(matches!(
        Codec::new(250, 6),
        Err(Error::InvalidParameter(_))
    ));
    assert!(Codec::new(250, 5).is_ok());
    let e = Codec::builder(30, 6)
        .matrix(MatrixKind::Vandermonde)
        .build()
        .unwrap_err();
    assert!(matches!(e, Error::NotMds(_)), "{e}");
    assert!(e.to_string().contains("Cauchy"));
    let codec = Codec::new(4, 2).unwrap();
    let mut rng = Rng::new(7);
    let mut shards = encoded(&codec, 64, &mut rng);
    let mut v: Vec<&mut [u8]> = shards.iter_mut().map(|s| s.as_mut_slice()).collect();
    assert_eq!(
        codec.decode(&mut v, &[0, 1, 2]),
        Err(Error::TooManyErasures { erased: 3, max: 2 })
    );
    assert!(matches!(
        codec.decode(&mut v, &[6]),
        Err(Error::InvalidParameter(_))
    ));
    assert!(matches!(
        codec.decode(&mut v, &[1, 1]),
        Err(Error::InvalidParameter(_))
    ));
    let a = vec![0u8; 64];
    let b = vec![0u8; 63];
    let mut p1 = vec![0u8; 64];
    let mut p2 = vec![0u8; 64];
    let r = codec.encode(&[&a, &a, &b, &a], &mut [&mut p1, &mut p2]);
    assert!(matches!(r, Err(Error::LengthMismatch(_))), "{r:?}");
    let r = codec.encode(&[&a, &a, &a], &mut [&mut p1, &mut p2]);
    assert!(matches!(r, Err(Error::LengthMismatch(_))));
    assert!(matches!(Lrc::new(4, 2, 0), Err(Error::InvalidParameter(_))));
    assert!(matches!(Lrc::new(4, 2, 5), Err(Error::InvalidParameter(_))));
    assert!(matches!(
        Isa::parse("avx9"),
        Err(Error::InvalidParameter(_))
    ));
}

/// Coordinator settings it cannot run with are refused when the codec is built; each panicked
/// within the first calls (a division by zero, a median of no samples, an empty clamp range).
#[test]
fn unusable_coordinator_settings_are_refused() {
    let d = CoordinatorConfig::default();
    let bad = [
        CoordinatorConfig {
            probe_every: 0,
            ..d
        },
        CoordinatorConfig {
            lone_trials: 0,
            ..d
        },
        CoordinatorConfig {
            tuner: TunerConfig {
                min_distance: 100,
                max_distance: 2,
                ..d.tuner
            },
            ..d
        },
        CoordinatorConfig {
            tuner: TunerConfig {
                min_distance: 0,
                max_distance: 0,
                ..d.tuner
            },
            ..d
        },
        // A distance whose prefetch pattern's size overflowed (a panic in the first encode),
        // and a neighbourhood searched for ever (the first encode hung).
        CoordinatorConfig {
            fixed_distance: Some(usize::MAX / 2),
            ..d
        },
        CoordinatorConfig {
            tuner: TunerConfig {
                max_distance: MAX_DISTANCE + 1,
                ..d.tuner
            },
            ..d
        },
        CoordinatorConfig {
            tuner: TunerConfig {
                neighbourhood: usize::MAX,
                ..d.tuner
            },
            ..d
        },
    ];
    let far = Schedule {
        distance: MAX_DISTANCE + 1,
        ..Schedule::VANILLA
    };
    let r = Codec::builder(8, 4).strategy(Strategy::Fixed(far)).build();
    assert!(matches!(r, Err(Error::InvalidParameter(_))));
    assert!(matches!(
        Lrc::new(usize::MAX, 1, 1),
        Err(Error::InvalidParameter(_))
    ));
    for cfg in bad {
        let r = std::panic::catch_unwind(|| Codec::builder(8, 4).coordinator(cfg).build());
        let e = r.expect("build must not panic").unwrap_err();
        assert!(matches!(e, Error::InvalidParameter(_)), "{e}");
    }
    // the edges that work are accepted and run
    let ok = CoordinatorConfig {
        probe_every: 1,
        lone_trials: 1,
        fixed_distance: Some(MAX_DISTANCE),
        tuner: TunerConfig {
            min_distance: 0,
            max_distance: 1,
            ..d.tuner
        },
        ..d
    };
    let codec = Codec::builder(8, 4).coordinator(ok).build().unwrap();
    let mut rng = Rng::new(13);
    for _ in 0..200 {
        encoded(&codec, 1024, &mut rng);
    }
}

fn lrc_encoded(lrc: &Lrc, len: usize, rng: &mut Rng) -> Vec<Vec<u8>> {
    let k = lrc.data_shards();
    let mut shards: Vec<Vec<u8>> = (0..k).map(|_| rng.bytes(len)).collect();
    let data = shards.clone();
    let mut par = vec![vec![0u8; len]; lrc.global_parities() + lrc.local_parities()];
    let d: Vec<&[u8]> = data.iter().map(|v| v.as_slice()).collect();
    let mut p: Vec<&mut [u8]> = par.iter_mut().map(|v| v.as_mut_slice()).collect();
    lrc.encode(&d, &mut p).unwrap();
    shards.extend(par);
    shards
}

#[test]
fn lrc_local_parity_is_group_xor_and_global_is_rs() {
    let mut rng = Rng::new(8);
    let lrc = Lrc::new(12, 2, 3).unwrap();
    let shards = lrc_encoded(&lrc, 300, &mut rng);
    for g in 0..3 {
        let mut x = vec![0u8; 300];
        for i in lrc.group(g) {
            for (a, b) in x.iter_mut().zip(&shards[i]) {
                *a ^= b;
            }
        }
        assert_eq!(x, shards[12 + 2 + g], "group {g}");
    }
    // global parities equal RS(12+2, 12) Cauchy parities
    let rs = Codec::new(12, 2).unwrap();
    let d: Vec<&[u8]> = shards[..12].iter().map(|v| v.as_slice()).collect();
    let mut p = vec![vec![0u8; 300]; 2];
    let mut pv: Vec<&mut [u8]> = p.iter_mut().map(|v| v.as_mut_slice()).collect();
    rs.encode(&d, &mut pv).unwrap();
    assert_eq!(&p[..], &shards[12..14]);
}

/// `group_consistent` checks the group it is asked about in a whole stripe: a shorter shard,
/// a wrong shard count or a group that does not exist is an error, not a verdict on part of
/// the group (a corrupted group with an empty first shard was once "consistent").
#[test]
fn lrc_group_check_refuses_malformed_stripes() {
    let mut rng = Rng::new(12);
    let lrc = Lrc::new(6, 2, 2).unwrap();
    let mut shards = lrc_encoded(&lrc, 128, &mut rng);
    let views: Vec<&[u8]> = shards.iter().map(|v| v.as_slice()).collect();
    assert!(lrc.group_consistent(&views, 0).unwrap());
    assert!(lrc.group_consistent(&views, 1).unwrap());
    assert!(lrc.group_consistent(&views, 2).is_err());
    assert!(lrc.group_consistent(&views[1..], 0).is_err());
    shards[1][5] ^= 1;
    let views: Vec<&[u8]> = shards.iter().map(|v| v.as_slice()).collect();
    assert!(!lrc.group_consistent(&views, 0).unwrap());
    let mut short = views.clone();
    short[0] = &[];
    assert!(lrc.group_consistent(&short, 0).is_err());
}

#[test]
fn lrc_local_repair_every_group_member() {
    let mut rng = Rng::new(9);
    let lrc = Lrc::new(10, 2, 3).unwrap(); // groups of 4, 3, 3
    assert_eq!(lrc.group(0), 0..4);
    assert_eq!(lrc.group(2), 7..10);
    let orig = lrc_encoded(&lrc, 512 + 3, &mut rng);
    for idx in (0..10).chain(12..15) {
        let mut shards = orig.clone();
        shards[idx].fill(0x55);
        let mut v: Vec<&mut [u8]> = shards.iter_mut().map(|s| s.as_mut_slice()).collect();
        lrc.local_repair(&mut v, idx).unwrap();
        assert_eq!(shards, orig, "shard {idx}");
    }
    let mut shards = orig.clone();
    let mut v: Vec<&mut [u8]> = shards.iter_mut().map(|s| s.as_mut_slice()).collect();
    assert!(matches!(
        lrc.local_repair(&mut v, 10),
        Err(Error::InvalidParameter(_))
    ));
    // an index past the last shard is out of range, not "a global parity"
    let e = lrc.local_repair(&mut v, 15).unwrap_err().to_string();
    assert!(e.contains("out of range"), "{e}");
}

#[test]
fn lrc_decode_all_patterns_up_to_three() {
    let mut rng = Rng::new(10);
    let lrc = Lrc::new(6, 2, 2).unwrap(); // n = 10, tolerates any 3 erasures
    let orig = lrc_encoded(&lrc, 200, &mut rng);
    let n = lrc.total_shards();
    let mut locals = 0;
    let mut undecodable = 0;
    for erased in subsets(n, 4) {
        let mut shards = orig.clone();
        for &e in &erased {
            shards[e].fill(0);
        }
        let mut v: Vec<&mut [u8]> = shards.iter_mut().map(|s| s.as_mut_slice()).collect();
        match lrc.decode(&mut v, &erased) {
            Ok(l) => {
                locals += l;
                assert_eq!(shards, orig, "erased {erased:?}");
            }
            Err(e @ Error::TooManyErasures { .. }) => {
                assert!(erased.len() == 4, "pattern {erased:?} of <= 3 must decode");
                assert!(!lrc.can_decode(&erased));
                // m + l = 4: the message must not say that 4 can be rebuilt
                let msg = e.to_string();
                assert!(msg.contains("cannot be rebuilt"), "{msg}");
                undecodable += 1;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(locals > 0 && undecodable > 0);
    // a repeated index is refused, as the RS codec refuses it
    let mut shards = orig.clone();
    let mut v: Vec<&mut [u8]> = shards.iter_mut().map(|s| s.as_mut_slice()).collect();
    assert!(matches!(
        lrc.decode(&mut v, &[0, 0]),
        Err(Error::InvalidParameter(_))
    ));
}

/// A raw call with no stripes (directly, or through a thread pool or a decoder) does nothing
/// and leaves the coordinator untouched. It was timed as a one-stripe call costing almost
/// nothing per line, so when it was a block length's first call its cache-residency probe
/// concluded "resident" and the real batches after it ran unprefetched.
#[test]
fn empty_raw_calls_leave_the_coordinator_alone() {
    let codec = Codec::new(8, 4).unwrap();
    // SAFETY: no pointers are read or written.
    unsafe {
        let d = codec.encode_raw(4096, &[], &[], 1);
        assert!(!d.measured && !d.cache_resident);
        pmec::ThreadPool::new(2).encode_raw(&codec, 4096, &[], &[]);
    }
    assert!(
        codec.coordinator().stats().is_empty(),
        "{:?}",
        codec.coordinator().stats()
    );
    let dec = codec.decoder(&[1, 9]).unwrap();
    // SAFETY: as above.
    unsafe { dec.decode_raw(4096, &[], &[], 1) };
    assert!(dec.coordinator().stats().is_empty());
    // the first real call is then the block length's residency probe, as for a fresh codec
    let mut rng = Rng::new(14);
    let data = Blocks::new(8 * 2, 4096, 0, &mut rng);
    let mut par = Blocks::new(4 * 2, 4096, 0, &mut rng);
    codec
        .encode_batch(&data.slices(), &mut par.slices_mut())
        .unwrap();
    let stats = codec.coordinator().stats();
    assert_eq!(stats.len(), 1);
    assert_eq!(stats[0].1.calls, 1);
}

/// Empty blocks encode to empty parity, whichever of the coordinator's calls it is: the first
/// call of a block length is a residency probe, which loads the first line of each source, and
/// empty slices' pointers may dangle (it must not load them).
#[test]
fn empty_blocks_encode_on_every_kind_of_call() {
    let codec = Codec::new(8, 4).unwrap();
    let data: Vec<&[u8]> = vec![&[]; 8];
    for _ in 0..600 {
        let mut bufs: Vec<Vec<u8>> = vec![Vec::new(); 4];
        let mut parity: Vec<&mut [u8]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
        codec.encode(&data, &mut parity).unwrap();
    }
}

/// A codec's single-stripe calls reuse only their own coordinator's decisions: a codec built
/// where a dropped one was (often at the same address) runs its own strategy from its first
/// call.
#[test]
fn a_new_codec_never_runs_a_dropped_codecs_decision() {
    use pmec::dialga::coordinator::LONE_SCHEDULES;
    let len = 4096;
    let data: Vec<Vec<u8>> = (0..8).map(|i| vec![i as u8 + 1; len]).collect();
    let srcs: Vec<*const u8> = data.iter().map(|d| d.as_ptr()).collect();
    let mut par: Vec<Vec<u8>> = (0..4).map(|_| vec![0u8; len]).collect();
    let dsts: Vec<*mut u8> = par.iter_mut().map(|p| p.as_mut_ptr()).collect();
    let fixed = LONE_SCHEDULES[5];
    for _ in 0..20 {
        let a = Box::new(
            Codec::builder(8, 4)
                .strategy(pmec::Strategy::Vanilla)
                .build()
                .unwrap(),
        );
        // SAFETY: 8 readable and 4 writable blocks of len bytes.
        let da = unsafe { a.encode_raw(len, &srcs, &dsts, 1) };
        assert!(!da.measured, "{da:?}");
        drop(a);
        let b = Box::new(
            Codec::builder(8, 4)
                .strategy(pmec::Strategy::Fixed(fixed))
                .build()
                .unwrap(),
        );
        // SAFETY: as above.
        let db = unsafe { b.encode_raw(len, &srcs, &dsts, 1) };
        assert_eq!(db.schedule.fetch, fixed.fetch, "{db:?}");
        assert_eq!(b.coordinator().stats()[0].1.calls, 1);
    }
}

/// Encoders on many threads that do not declare their concurrency (each call says one thread)
/// are still seen by the coordinator: calls in progress are counted whether or not the
/// coordinator is asked (single-stripe calls mostly reuse a decision, and a decision not timed
/// closes its ticket before the kernel runs).
#[test]
fn undeclared_concurrency_is_seen() {
    let codec = Codec::new(8, 4).unwrap();
    let len = 1024;
    let bar = std::sync::Barrier::new(8);
    let seen = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|sc| {
        for t in 0..8u8 {
            let (codec, bar, seen) = (&codec, &bar, &seen);
            sc.spawn(move || {
                let data: Vec<Vec<u8>> = (0..8).map(|i| vec![t ^ i as u8; len]).collect();
                let srcs: Vec<*const u8> = data.iter().map(|d| d.as_ptr()).collect();
                let mut par: Vec<Vec<u8>> = (0..4).map(|_| vec![0u8; len]).collect();
                let dsts: Vec<*mut u8> = par.iter_mut().map(|p| p.as_mut_ptr()).collect();
                bar.wait();
                let t0 = std::time::Instant::now();
                while t0.elapsed().as_secs_f64() < 0.3 {
                    // SAFETY: 8 readable and 4 writable blocks of len bytes, this thread's own.
                    let d = unsafe { codec.encode_raw(len, &srcs, &dsts, 1) };
                    seen.fetch_max(d.threads, std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
    });
    let seen = seen.into_inner();
    assert!(
        seen >= 5,
        "8 concurrent encoders, at most {seen} seen at once"
    );
}
