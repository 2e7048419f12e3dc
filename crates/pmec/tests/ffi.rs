//! The C ABI called as C would (through the exported functions).

use pmec::ffi::*;
use std::ffi::CStr;

#[test]
fn c_abi_encode_decode_update_verify() {
    unsafe {
        let mut c = std::ptr::null_mut();
        assert_eq!(pmec_codec_new(4, 2, 0, &mut c), PMEC_OK);
        let len = 300;
        let mut bufs: Vec<Vec<u8>> = (0..6)
            .map(|i| (0..len).map(|x| (x * 7 + i * 13) as u8).collect())
            .collect();
        for p in &mut bufs[4..] {
            p.fill(0);
        }
        let ptrs: Vec<*mut u8> = bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
        let data: Vec<*const u8> = ptrs[..4].iter().map(|&p| p as *const u8).collect();
        assert_eq!(
            pmec_encode(c, len, 1, data.as_ptr(), ptrs[4..].as_ptr(), 1),
            PMEC_OK
        );
        let all: Vec<*const u8> = ptrs.iter().map(|&p| p as *const u8).collect();
        assert_eq!(pmec_verify(c, len, all.as_ptr()), 1);
        let orig = bufs.clone();
        bufs[0].fill(0);
        bufs[5].fill(0);
        let ptrs: Vec<*mut u8> = bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
        assert_eq!(
            pmec_decode(c, len, ptrs.as_ptr(), [0, 5].as_ptr(), 2),
            PMEC_OK
        );
        assert_eq!(bufs, orig);
        // too many erasures: error code and message
        assert_eq!(
            pmec_decode(c, len, ptrs.as_ptr(), [0, 1, 2].as_ptr(), 3),
            PMEC_ETOOMANY
        );
        let msg = CStr::from_ptr(pmec_last_error())
            .to_string_lossy()
            .into_owned();
        assert!(msg.contains("too many erasures"), "{msg}");
        // update block 2
        let new: Vec<u8> = vec![0xab; len];
        let old = bufs[2].clone();
        assert_eq!(
            pmec_update(c, len, 2, old.as_ptr(), new.as_ptr(), ptrs[4..].as_ptr()),
            PMEC_OK
        );
        bufs[2].copy_from_slice(&new);
        let all: Vec<*const u8> = bufs.iter().map(|b| b.as_ptr()).collect();
        assert_eq!(pmec_verify(c, len, all.as_ptr()), 1);
        assert_eq!(
            pmec_encode(
                std::ptr::null(),
                len,
                1,
                data.as_ptr(),
                ptrs[4..].as_ptr(),
                1
            ),
            PMEC_ENULL
        );
        pmec_codec_free(c);
        let mut bad = std::ptr::null_mut();
        assert_eq!(pmec_codec_new(0, 2, 0, &mut bad), PMEC_EINVAL);
        assert!(bad.is_null());
        assert_eq!(pmec_codec_new(30, 6, 1, &mut bad), PMEC_ENOTMDS);
        let mut l = std::ptr::null_mut();
        assert_eq!(pmec_lrc_new(4, 1, 2, &mut l), PMEC_OK);
        let mut lb: Vec<Vec<u8>> = (0..7).map(|i| vec![i as u8 * 3 + 1; 128]).collect();
        let lp: Vec<*mut u8> = lb.iter_mut().map(|b| b.as_mut_ptr()).collect();
        let ld: Vec<*const u8> = lp[..4].iter().map(|&p| p as *const u8).collect();
        assert_eq!(
            pmec_lrc_encode(l, 128, ld.as_ptr(), lp[4..].as_ptr()),
            PMEC_OK
        );
        let lorig = lb.clone();
        lb[1].fill(0);
        let lp: Vec<*mut u8> = lb.iter_mut().map(|b| b.as_mut_ptr()).collect();
        assert_eq!(pmec_lrc_decode(l, 128, lp.as_ptr(), [1].as_ptr(), 1), 1);
        assert_eq!(lb, lorig);
        pmec_lrc_free(l);
        assert!(!CStr::from_ptr(pmec_isa_name()).to_bytes().is_empty());
    }
}

/// Counts and lengths no buffer can have are invalid parameters. A stripe count whose pointer
/// count wrapped (2^62 + 1 stripes of RS(4+4): 4 pointers each way) once encoded one stripe and
/// returned success; a block length above `isize::MAX` formed slices that size (undefined
/// behaviour: an abort, a capacity panic or a wild read).
#[test]
fn impossible_counts_and_lengths_are_invalid() {
    unsafe {
        let mut c = std::ptr::null_mut();
        assert_eq!(pmec_codec_new(4, 4, 0, &mut c), PMEC_OK);
        let mut bufs = vec![vec![7u8; 64]; 8];
        let p: Vec<*mut u8> = bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
        let d: Vec<*const u8> = p[..4].iter().map(|&x| x as *const u8).collect();
        let last = || {
            CStr::from_ptr(pmec_last_error())
                .to_string_lossy()
                .into_owned()
        };
        let wraps = (1usize << 62) + 1;
        assert_eq!(
            pmec_encode(c, 64, wraps, d.as_ptr(), p[4..].as_ptr(), 1),
            PMEC_EINVAL
        );
        assert!(last().contains("stripes"), "{}", last());
        // the parity was not written
        assert!(bufs[4..].iter().all(|b| b.iter().all(|&x| x == 7)));
        let huge = isize::MAX as usize + 1;
        assert_eq!(
            pmec_encode(c, huge, 1, d.as_ptr(), p[4..].as_ptr(), 1),
            PMEC_EINVAL
        );
        assert!(last().contains("block length"), "{}", last());
        let all: Vec<*const u8> = p.iter().map(|&x| x as *const u8).collect();
        assert_eq!(pmec_verify(c, huge, all.as_ptr()), PMEC_EINVAL);
        assert_eq!(
            pmec_decode(c, usize::MAX, p.as_ptr(), [0].as_ptr(), 1),
            PMEC_EINVAL
        );
        assert_eq!(
            pmec_update(c, huge, 0, d[0], d[1], p[4..].as_ptr()),
            PMEC_EINVAL
        );
        // a real call still works
        assert_eq!(
            pmec_encode(c, 64, 1, d.as_ptr(), p[4..].as_ptr(), 1),
            PMEC_OK
        );
        pmec_codec_free(c);
        let mut l = std::ptr::null_mut();
        assert_eq!(pmec_lrc_new(4, 2, 2, &mut l), PMEC_OK);
        assert_eq!(
            pmec_lrc_encode(l, huge, d.as_ptr(), p[4..].as_ptr()),
            PMEC_EINVAL
        );
        assert_eq!(
            pmec_lrc_decode(l, huge, p.as_ptr(), [0].as_ptr(), 1),
            PMEC_EINVAL
        );
        pmec_lrc_free(l);
    }
}

/// An empty pointer array may be null: the parity of a code without parity (m = 0), or the
/// arrays of a call with no stripes. Such calls were refused as null-pointer errors, so a C
/// caller of an m = 0 code had to invent a parity array to encode, update or verify.
#[test]
fn empty_pointer_arrays_may_be_null() {
    unsafe {
        let null_p: *const *mut u8 = std::ptr::null();
        let null_d: *const *const u8 = std::ptr::null();
        let mut c = std::ptr::null_mut();
        assert_eq!(pmec_codec_new(3, 0, 0, &mut c), PMEC_OK);
        let bufs = [vec![1u8; 32], vec![2u8; 32], vec![3u8; 32]];
        let d: Vec<*const u8> = bufs.iter().map(|b| b.as_ptr()).collect();
        assert_eq!(pmec_encode(c, 32, 1, d.as_ptr(), null_p, 2), PMEC_OK);
        assert_eq!(pmec_update(c, 32, 1, d[0], d[1], null_p), PMEC_OK);
        assert_eq!(pmec_verify(c, 32, d.as_ptr()), 1);
        pmec_codec_free(c);
        assert_eq!(pmec_codec_new(4, 2, 0, &mut c), PMEC_OK);
        assert_eq!(pmec_encode(c, 32, 0, null_d, null_p, 1), PMEC_OK);
        // a non-empty array still may not be null
        assert_eq!(pmec_encode(c, 32, 1, d.as_ptr(), null_p, 1), PMEC_ENULL);
        assert_eq!(pmec_encode(c, 32, 1, null_d, null_p, 1), PMEC_ENULL);
        pmec_codec_free(c);
    }
}

/// PMEC_ENULL's message names the argument (it said "null pointer argument" for all of them).
#[test]
fn null_pointer_errors_name_the_argument() {
    unsafe {
        let last = || {
            CStr::from_ptr(pmec_last_error())
                .to_string_lossy()
                .into_owned()
        };
        let mut c = std::ptr::null_mut();
        assert_eq!(pmec_codec_new(2, 1, 0, std::ptr::null_mut()), PMEC_ENULL);
        assert!(last().contains("out"), "{}", last());
        assert_eq!(pmec_codec_new(2, 1, 0, &mut c), PMEC_OK);
        let mut bufs = vec![vec![0u8; 16]; 3];
        let mut p: Vec<*mut u8> = bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
        let d: Vec<*const u8> = p[..2].iter().map(|&x| x as *const u8).collect();
        let null_p: *const *mut u8 = std::ptr::null();
        assert_eq!(pmec_encode(c, 16, 1, d.as_ptr(), null_p, 1), PMEC_ENULL);
        assert!(last().contains("parity"), "{}", last());
        assert_eq!(
            pmec_encode(std::ptr::null(), 16, 1, d.as_ptr(), p[2..].as_ptr(), 1),
            PMEC_ENULL
        );
        assert!(last().contains("codec handle"), "{}", last());
        p[1] = std::ptr::null_mut();
        assert_eq!(pmec_decode(c, 16, p.as_ptr(), [0].as_ptr(), 1), PMEC_ENULL);
        assert!(last().contains("shards"), "{}", last());
        p[1] = bufs[1].as_mut_ptr();
        assert_eq!(
            pmec_decode(c, 16, p.as_ptr(), std::ptr::null(), 1),
            PMEC_ENULL
        );
        assert!(last().contains("erased"), "{}", last());
        pmec_codec_free(c);
    }
}
