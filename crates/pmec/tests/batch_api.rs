//! The batch and multi-threaded API at its edges: thread pools of 0 to 64 threads over stripe
//! counts that do not divide among them, edge geometries (k = 1, m = 0, k + m = 255), block
//! lengths off the vector width and unaligned buffers, checked against ISA-L's parity (when the
//! system has it) and single-stripe encodes; pooled decodes of every erasure pattern against the
//! original data; one C ABI handle used by several threads at once.

mod common;
use common::{Blocks, Rng};
use pmec::ffi::*;
use pmec::isal_dl::IsaL;
use pmec::{Codec, ThreadPool};

/// The parity ISA-L computes for one stripe with this codec's generator.
fn isal_parity(l: &IsaL, codec: &Codec, data: &[&[u8]]) -> Vec<Vec<u8>> {
    let (k, m) = (codec.data_shards(), codec.parity_shards());
    let rows = &codec.generator().as_bytes()[k * k..];
    let tables = l.init_tables(k, m, rows);
    let mut out = vec![vec![0u8; data[0].len()]; m];
    let mut o: Vec<&mut [u8]> = out.iter_mut().map(|v| v.as_mut_slice()).collect();
    l.encode_data(k, &tables, data, &mut o);
    out
}

#[test]
fn pooled_batches_match_isal_and_single_stripes() {
    let isal = common::system_isal();
    let mut rng = Rng::new(21);
    for (k, m) in [
        (1, 1),
        (1, 0),
        (2, 1),
        (5, 3),
        (10, 4),
        (200, 55),
        (254, 1),
        (1, 254),
    ] {
        let codec = Codec::new(k, m).unwrap();
        for (case, len) in [1usize, 15, 63, 65, 200, 4097].into_iter().enumerate() {
            if k * len > 64 << 10 {
                continue;
            }
            for (stripes, threads) in [(1, 0), (2, 3), (3, 2), (5, 4), (7, 64), (7, 1)] {
                let data = Blocks::new(stripes * k, len, (case * 7 + stripes) % 64, &mut rng);
                let mut par = Blocks::new(stripes * m, len, (case * 13) % 64, &mut rng);
                ThreadPool::new(threads)
                    .encode_batch(&codec, &data.slices(), &mut par.slices_mut())
                    .unwrap();
                let (ds, ps) = (data.slices(), par.to_vecs());
                for s in 0..stripes {
                    let what = format!("k={k} m={m} len={len} stripe {s}/{stripes} t={threads}");
                    let d = &ds[s * k..(s + 1) * k];
                    let got = &ps[s * m..(s + 1) * m];
                    let mut one = vec![vec![0u8; len]; m];
                    let mut ov: Vec<&mut [u8]> = one.iter_mut().map(|v| v.as_mut_slice()).collect();
                    codec.encode(d, &mut ov).unwrap();
                    assert!(one == got, "{what}: batch differs from a single encode");
                    if let (Some(l), true) = (isal, m > 0) {
                        assert!(
                            isal_parity(l, &codec, d) == got,
                            "{what}: differs from ISA-L"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn pooled_decodes_rebuild_every_stripe() {
    let mut rng = Rng::new(22);
    let (k, m) = (6usize, 3usize);
    let n = k + m;
    let codec = Codec::new(k, m).unwrap();
    for len in [1usize, 33, 130, 1024 + 5] {
        for stripes in [1usize, 3, 5] {
            let data = Blocks::new(stripes * k, len, 3, &mut rng);
            let mut par = Blocks::new(stripes * m, len, 0, &mut rng);
            codec
                .encode_batch(&data.slices(), &mut par.slices_mut())
                .unwrap();
            let (ds, ps) = (data.to_vecs(), par.to_vecs());
            let mut orig: Vec<Vec<u8>> = Vec::new();
            for s in 0..stripes {
                orig.extend(ds[s * k..(s + 1) * k].iter().cloned());
                orig.extend(ps[s * m..(s + 1) * m].iter().cloned());
            }
            // every pattern of 1 to m erasures
            let patterns = (1u32..1 << n)
                .filter(|b| b.count_ones() as usize <= m)
                .map(|b| (0..n).filter(|i| b >> i & 1 == 1).collect::<Vec<usize>>());
            for erased in patterns {
                let dec = codec.decoder(&erased).unwrap();
                for threads in [1usize, 2, 4] {
                    let mut a = orig.clone();
                    for s in 0..stripes {
                        for &e in &erased {
                            a[s * n + e].fill(0x11);
                        }
                    }
                    let srcs: Vec<*const u8> = (0..stripes)
                        .flat_map(|s| dec.survivors().iter().map(move |&i| s * n + i))
                        .map(|i| a[i].as_ptr())
                        .collect();
                    let dsts: Vec<*mut u8> = (0..stripes)
                        .flat_map(|s| dec.erased().iter().map(move |&i| s * n + i))
                        .map(|i| a[i].as_mut_ptr())
                        .collect();
                    // SAFETY: distinct buffers of `len` bytes, survivors and erased disjoint.
                    unsafe { ThreadPool::new(threads).decode_raw(&dec, len, &srcs, &dsts) };
                    assert!(
                        a == orig,
                        "len {len} stripes {stripes} erased {erased:?} threads {threads}"
                    );
                }
            }
        }
    }
}

/// pmec.h: a handle may be used by several threads at once, each splitting its own batches.
#[test]
fn one_c_handle_from_several_threads() {
    let (k, m) = (6usize, 3usize);
    let reference = Codec::new(k, m).unwrap();
    let mut c = std::ptr::null_mut();
    // SAFETY: a valid out pointer.
    assert_eq!(
        unsafe { pmec_codec_new(k as i32, m as i32, 0, &mut c) },
        PMEC_OK
    );
    let handle = c as usize;
    std::thread::scope(|sc| {
        for t in 0..4u64 {
            let reference = &reference;
            sc.spawn(move || {
                let c = handle as *const PmecCodec;
                let mut rng = Rng::new(t + 30);
                for it in 0..60 {
                    let stripes = 1 + it % 11;
                    let len = [64usize, 65, 4096, 7][it % 4];
                    let data = Blocks::new(stripes * k, len, it % 3, &mut rng);
                    let mut par = Blocks::new(stripes * m, len, 0, &mut rng);
                    let dp: Vec<*const u8> = data.slices().iter().map(|s| s.as_ptr()).collect();
                    let pp: Vec<*mut u8> = par
                        .slices_mut()
                        .into_iter()
                        .map(|s| s.as_mut_ptr())
                        .collect();
                    // SAFETY: stripes * k and stripes * m pointers to distinct len-byte blocks.
                    let r = unsafe { pmec_encode(c, len, stripes, dp.as_ptr(), pp.as_ptr(), 2) };
                    assert_eq!(r, PMEC_OK);
                    let mut want = Blocks::new(stripes * m, len, 0, &mut rng);
                    reference
                        .encode_batch(&data.slices(), &mut want.slices_mut())
                        .unwrap();
                    assert!(want.to_vecs() == par.to_vecs(), "thread {t} call {it}");
                }
            });
        }
    });
    // SAFETY: from pmec_codec_new, no longer used.
    unsafe { pmec_codec_free(c) };
}

/// pmec.h promises that handles may be shared between threads: the types behind them must stay
/// `Send + Sync` (a compile-time check).
#[test]
fn handles_are_send_and_sync() {
    fn shareable<T: Send + Sync>() {}
    shareable::<PmecCodec>();
    shareable::<PmecLrc>();
    shareable::<pmec::Decoder>();
}
