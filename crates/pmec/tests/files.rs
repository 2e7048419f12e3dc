//! `pmlab ec encode/decode/verify` library functions: round trips with up to m shards deleted
//! or corrupted, reports, repair, and clear errors.

mod common;
use common::Rng;
use pmec::files::{self, EncodeOptions};
use pmec::Error;
use std::path::PathBuf;

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pmec-files-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn round_trip_with_missing_and_corrupt_shards() {
    let dir = tmpdir("rt");
    let mut rng = Rng::new(21);
    let input = dir.join("data.bin");
    let content = rng.bytes(1_000_003);
    std::fs::write(&input, &content).unwrap();
    let opts = EncodeOptions {
        k: 6,
        m: 3,
        block: 4096,
        threads: 2,
        ..EncodeOptions::default()
    };
    let out = dir.join("shards");
    let man = files::encode_file(&input, &out, &opts).unwrap();
    assert_eq!(man.file_size, 1_000_003);
    assert_eq!(man.stripes, 1_000_003u64.div_ceil(6 * 4096));
    let mp = files::manifest_path(&out, "data.bin");
    assert_eq!(files::read_manifest(&mp).unwrap(), man);
    let v = files::verify(&mp).unwrap();
    assert!(v.check.bad().is_empty() && v.parity_consistent == Some(true));

    // intact
    let restored = dir.join("restored.bin");
    let r = files::decode_file(&mp, &restored, false).unwrap();
    assert_eq!(std::fs::read(&restored).unwrap(), content);
    assert_eq!(r.used, vec![0, 1, 2, 3, 4, 5]);

    // delete a data and a parity shard, corrupt another data shard: 3 = m bad
    std::fs::remove_file(out.join(&man.shards[1].file)).unwrap();
    std::fs::remove_file(out.join(&man.shards[7].file)).unwrap();
    let p4 = out.join(&man.shards[4].file);
    let mut b = std::fs::read(&p4).unwrap();
    b[12345] ^= 0x40;
    std::fs::write(&p4, &b).unwrap();
    let v = files::verify(&mp).unwrap();
    assert_eq!(v.check.missing, vec![1, 7]);
    assert_eq!(v.check.corrupt, vec![4]);
    assert!(v.recoverable && v.parity_consistent.is_none());
    std::fs::remove_file(&restored).unwrap();
    let r = files::decode_file(&mp, &restored, true).unwrap();
    assert_eq!(std::fs::read(&restored).unwrap(), content);
    assert_eq!(r.check.missing, vec![1, 7]);
    assert_eq!(r.check.corrupt, vec![4]);
    assert_eq!(r.repaired, vec![1, 4, 7]);
    let v = files::verify(&mp).unwrap();
    assert!(v.check.bad().is_empty(), "{v:?}");
    assert_eq!(v.parity_consistent, Some(true));

    // one more than m: a clear error, no output written
    for i in [0, 2, 5, 8] {
        std::fs::remove_file(out.join(&man.shards[i].file)).unwrap();
    }
    let e = files::decode_file(&mp, &dir.join("x.bin"), false).unwrap_err();
    assert_eq!(
        e,
        Error::TooManyBadShards {
            missing: vec![0, 2, 5, 8],
            corrupt: vec![],
            max: 3
        }
    );
    assert!(!dir.join("x.bin").exists());
    assert!(!files::verify(&mp).unwrap().recoverable);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_single_and_double_loss_small_file() {
    let dir = tmpdir("pairs");
    let mut rng = Rng::new(22);
    let input = dir.join("small.txt");
    let content = rng.bytes(777);
    std::fs::write(&input, &content).unwrap();
    let opts = EncodeOptions {
        k: 3,
        m: 2,
        block: 100,
        ..EncodeOptions::default()
    };
    let out = dir.join("s");
    let man = files::encode_file(&input, &out, &opts).unwrap();
    let mp = files::manifest_path(&out, "small.txt");
    let originals: Vec<Vec<u8>> = man
        .shards
        .iter()
        .map(|s| std::fs::read(out.join(&s.file)).unwrap())
        .collect();
    for a in 0..5 {
        for b in a..5 {
            for (i, sh) in man.shards.iter().enumerate() {
                std::fs::write(out.join(&sh.file), &originals[i]).unwrap();
            }
            std::fs::remove_file(out.join(&man.shards[a].file)).unwrap();
            if b != a {
                std::fs::write(out.join(&man.shards[b].file), b"short").unwrap();
            }
            let o = dir.join("o.bin");
            files::decode_file(&mp, &o, false).unwrap();
            assert_eq!(std::fs::read(&o).unwrap(), content, "lost {a},{b}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn empty_file_and_errors() {
    let dir = tmpdir("err");
    let input = dir.join("empty");
    std::fs::write(&input, b"").unwrap();
    let man = files::encode_file(&input, &dir, &EncodeOptions::default()).unwrap();
    assert_eq!(man.stripes, 0);
    let mp = files::manifest_path(&dir, "empty");
    files::decode_file(&mp, &dir.join("back"), false).unwrap();
    assert_eq!(std::fs::read(dir.join("back")).unwrap(), b"");

    let bad_k = EncodeOptions {
        k: 0,
        ..EncodeOptions::default()
    };
    assert!(matches!(
        files::encode_file(&input, &dir, &bad_k),
        Err(Error::InvalidParameter(_))
    ));
    let bad_b = EncodeOptions {
        block: 0,
        ..EncodeOptions::default()
    };
    assert!(matches!(
        files::encode_file(&input, &dir, &bad_b),
        Err(Error::InvalidParameter(_))
    ));
    let e = files::encode_file(&dir.join("nope"), &dir, &EncodeOptions::default()).unwrap_err();
    assert!(matches!(&e, Error::Io(s) if s.contains("nope")), "{e}");
    std::fs::write(dir.join("junk.pmec"), "hello\n").unwrap();
    assert!(matches!(
        files::decode_file(&dir.join("junk.pmec"), &dir.join("o"), false),
        Err(Error::Format(_))
    ));
    std::fs::write(dir.join("junk2.pmec"), "pmec-manifest 1\nfile a\nsize x\n").unwrap();
    let e = files::verify(&dir.join("junk2.pmec")).unwrap_err();
    assert!(e.to_string().contains("line 3"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn too_many_bad_shards_says_which_are_missing_and_which_corrupt() {
    let dir = tmpdir("bad");
    let input = dir.join("data.bin");
    std::fs::write(&input, Rng::new(5).bytes(100_000)).unwrap();
    let opts = EncodeOptions {
        k: 4,
        m: 2,
        block: 4096,
        ..EncodeOptions::default()
    };
    let out = dir.join("shards");
    let man = files::encode_file(&input, &out, &opts).unwrap();
    std::fs::remove_file(out.join(&man.shards[0].file)).unwrap();
    for i in [1, 3] {
        let p = out.join(&man.shards[i].file);
        let mut b = std::fs::read(&p).unwrap();
        b[100] ^= 1;
        std::fs::write(&p, &b).unwrap();
    }
    let mp = files::manifest_path(&out, "data.bin");
    let e = files::decode_file(&mp, &dir.join("x.bin"), false).unwrap_err();
    assert_eq!(
        e.to_string(),
        "too many erasures: 1 shard(s) missing [0] and 2 corrupt [1, 3], at most 2 can be rebuilt"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Names in `dir`, sorted.
fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn failed_encode_and_decode_leave_earlier_output_intact_and_no_temporaries() {
    let dir = tmpdir("atomic");
    let input = dir.join("data.bin");
    let content = Rng::new(9).bytes(300_000);
    std::fs::write(&input, &content).unwrap();
    let out = dir.join("shards");
    files::encode_file(&input, &out, &EncodeOptions::default()).unwrap();
    let before = names(&out);
    let shard0 = std::fs::read(out.join("data.bin.0.shard")).unwrap();
    // A block too large for memory and a stripe that overflows are refused before any file
    // is touched (an earlier version truncated all shards, then failed).
    for block in [99_999_999_999usize, usize::MAX / 2, usize::MAX] {
        let e = files::encode_file(
            &input,
            &out,
            &EncodeOptions {
                block,
                ..EncodeOptions::default()
            },
        )
        .unwrap_err();
        assert!(matches!(e, Error::InvalidParameter(_)), "{e}");
    }
    let e = files::encode_file(&dir, &out, &EncodeOptions::default()).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    assert_eq!(names(&out), before);
    assert_eq!(std::fs::read(out.join("data.bin.0.shard")).unwrap(), shard0);
    let mp = files::manifest_path(&out, "data.bin");
    // Output into a directory: refused, nothing left beside it.
    std::fs::create_dir(dir.join("outdir")).unwrap();
    let e = files::decode_file(&mp, &dir.join("outdir"), false).unwrap_err();
    assert!(e.to_string().contains("is a directory"), "{e}");
    files::decode_file(&mp, &dir.join("back.bin"), false).unwrap();
    assert_eq!(std::fs::read(dir.join("back.bin")).unwrap(), content);
    assert_eq!(
        names(&dir),
        ["back.bin", "data.bin", "outdir", "shards"],
        "temporary files left behind"
    );
    assert_eq!(names(&out), before);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_altered_manifest_is_refused_instead_of_rebuilding_a_different_file() {
    let dir = tmpdir("altered");
    let input = dir.join("data.bin");
    std::fs::write(&input, Rng::new(10).bytes(300_000)).unwrap();
    let out = dir.join("shards");
    files::encode_file(&input, &out, &EncodeOptions::default()).unwrap();
    let mp = files::manifest_path(&out, "data.bin");
    let text = std::fs::read_to_string(&mp).unwrap();
    assert!(text.contains("\ncrc32 "), "{text}");
    let edit = |from: &str, to: &str| {
        assert!(text.contains(from));
        std::fs::write(&mp, text.replace(from, to)).unwrap();
    };
    let decode = || files::decode_file(&mp, &dir.join("o.bin"), false);

    // A second value of a key would silently win.
    edit("size 300000\n", "size 300000\nsize 299999\n");
    let e = decode().unwrap_err();
    assert!(e.to_string().contains("line 4: 'size' given twice"), "{e}");
    // Another size that keeps the stripe count: a smaller one leaves data in the padding, a
    // larger one takes padding as data, and the file's checksum differs.
    edit("size 300000\n", "size 299999\n");
    let e = decode().unwrap_err();
    assert!(
        e.to_string().contains("data past the manifest's size"),
        "{e}"
    );
    edit("size 300000\n", "size 300001\n");
    let e = decode().unwrap_err();
    assert!(e.to_string().contains("manifest's crc32"), "{e}");
    let v = files::verify(&mp).unwrap();
    assert_eq!(
        (v.parity_consistent, v.file_matches),
        (Some(true), Some(false))
    );
    // The same without the file's CRC (a manifest from before it was recorded): the last
    // stripe's padding, zero as encoded, holds the cut byte (it decoded a shorter file).
    let no_crc: String = text
        .lines()
        .filter(|l| !l.starts_with("crc32 "))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&mp, no_crc.replace("size 300000\n", "size 299999\n")).unwrap();
    let e = decode().unwrap_err();
    assert!(
        e.to_string().contains("data past the manifest's size"),
        "{e}"
    );
    assert!(!dir.join("o.bin").exists());
    let v = files::verify(&mp).unwrap();
    assert_eq!(
        (v.parity_consistent, v.file_matches),
        (Some(true), Some(false))
    );
    // Unaltered, a manifest without the CRC decodes, and verify has no checksum to compare.
    std::fs::write(&mp, &no_crc).unwrap();
    decode().unwrap();
    assert_eq!(
        std::fs::read(dir.join("o.bin")).unwrap(),
        std::fs::read(&input).unwrap()
    );
    assert_eq!(files::verify(&mp).unwrap().file_matches, None);
    std::fs::remove_file(dir.join("o.bin")).unwrap();
    // Shard lines out of order: the message names the misplaced one.
    let mut lines: Vec<&str> = text.lines().collect();
    let first = lines
        .iter()
        .position(|l| l.starts_with("shard 0 "))
        .unwrap();
    lines.swap(first, first + 1);
    std::fs::write(&mp, lines.join("\n") + "\n").unwrap();
    let e = decode().unwrap_err();
    assert!(
        e.to_string()
            .contains("shard 1 is listed where shard 0 belongs"),
        "{e}"
    );
    // Another matrix with a shard lost: the rebuilt shard is not the one encoded.
    edit("matrix cauchy\n", "matrix vandermonde\n");
    let shard0 = out.join("data.bin.0.shard");
    let kept = std::fs::read(&shard0).unwrap();
    std::fs::remove_file(&shard0).unwrap();
    let e = decode().unwrap_err();
    assert!(
        e.to_string()
            .contains("shard 0 rebuilt from the others does not match"),
        "{e}"
    );
    assert!(!dir.join("o.bin").exists());
    // A block whose stripe overflows is a format error, not a panic.
    std::fs::write(&shard0, kept).unwrap();
    edit("block 65536\n", "block 2305843009213693952\n");
    assert!(matches!(decode(), Err(Error::Format(_))));
    assert!(matches!(files::verify(&mp), Err(Error::Format(_))));
    // The manifest as written still decodes.
    std::fs::write(&mp, &text).unwrap();
    decode().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// An encoded 100 000-byte file (k 4, m 2, 4 KiB blocks) in a fresh directory: (dir, the
/// file's bytes, the manifest's path).
fn encoded(tag: &str) -> (PathBuf, Vec<u8>, PathBuf) {
    let dir = tmpdir(tag);
    let mut rng = Rng::new(77);
    let bytes: Vec<u8> = (0..100_000).map(|_| rng.next() as u8).collect();
    let input = dir.join("f.bin");
    std::fs::write(&input, &bytes).unwrap();
    let opts = EncodeOptions {
        k: 4,
        m: 2,
        block: 4096,
        ..EncodeOptions::default()
    };
    files::encode_file(&input, &dir, &opts).unwrap();
    (dir.clone(), bytes, files::manifest_path(&dir, "f.bin"))
}

/// The manifest with `f` applied to its text, written back.
fn edit_manifest(mp: &std::path::Path, f: impl Fn(&str) -> String) {
    let t = std::fs::read_to_string(mp).unwrap();
    std::fs::write(mp, f(&t)).unwrap();
}

fn mkfifo(p: &std::path::Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn manifests_with_impossible_code_parameters_are_refused_not_panicked_on() {
    // k 0 (a division by zero before), k + m wrapping around (an index out of bounds), a size
    // whose shards would be longer than 2^64 bytes, a stripe of k + m blocks over 1 GiB
    // (allocated before: 17 GB at m 254 and 64 MiB blocks)
    type Edit = fn(&str) -> String;
    let cases: [(&str, Edit); 4] = [
        ("k 0", |t| {
            t.replace("\nk 4\n", "\nk 0\n")
                .lines()
                .filter(|l| !l.starts_with("shard 2") && !l.starts_with("shard 3"))
                .filter(|l| !l.starts_with("shard 4") && !l.starts_with("shard 5"))
                .map(|l| format!("{l}\n"))
                .collect()
        }),
        ("m wraps", |t| {
            t.replace("\nm 2\n", "\nm 18446744073709551614\n")
        }),
        ("size", |t| {
            let t = t
                .replace("\nk 4\n", "\nk 1\n")
                .replace("\nblock 4096\n", "\nblock 2\n");
            t.replace("\nsize 100000\n", "\nsize 18446744073709551615\n")
                .replace("\nstripes 7\n", "\nstripes 9223372036854775808\n")
        }),
        ("stripe", |t| {
            // 4 + 16 blocks of 64 MiB: 1.25 GiB (the 4 data blocks alone are 256 MiB)
            let t = t.replace("\nm 2\n", "\nm 16\n");
            t.replace("\nblock 4096\n", "\nblock 67108864\n")
                .replace("\nstripes 7\n", "\nstripes 1\n")
        }),
    ];
    for (what, f) in cases {
        let (dir, _, mp) = encoded(&format!("par-{}", what.replace(' ', "")));
        edit_manifest(&mp, f);
        for e in [
            files::verify(&mp).map(|_| ()).unwrap_err(),
            files::decode_file(&mp, &dir.join("o"), true)
                .map(|_| ())
                .unwrap_err(),
        ] {
            assert!(matches!(e, Error::Format(_)), "{what}: {e}");
        }
        assert!(!dir.join("o").exists(), "{what}");
        let _ = std::fs::remove_dir_all(&dir);
    }
    let e = files::encode_file(
        &std::env::temp_dir().join("unused"),
        &std::env::temp_dir(),
        &EncodeOptions {
            k: 1,
            m: 254,
            block: 64 << 20,
            ..EncodeOptions::default()
        },
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidParameter(s) if s.contains("1 GiB")),
        "{e}"
    );
}

#[test]
fn fifos_devices_and_directories_neither_hang_nor_stop_a_rebuild() {
    let (dir, bytes, mp) = encoded("special");
    // a shard that is a FIFO, one that is a directory and (below) a link to /dev/zero: each
    // counts as corrupt, and the others rebuild the file (a FIFO hung verify and decode before)
    std::fs::remove_file(dir.join("f.bin.1.shard")).unwrap();
    mkfifo(&dir.join("f.bin.1.shard"));
    std::fs::remove_file(dir.join("f.bin.4.shard")).unwrap();
    std::fs::create_dir(dir.join("f.bin.4.shard")).unwrap();
    let v = files::verify(&mp).unwrap();
    assert_eq!(v.check.corrupt, vec![1, 4]);
    let r = files::decode_file(&mp, &dir.join("back"), false).unwrap();
    assert_eq!(r.check.bad(), vec![1, 4]);
    assert_eq!(std::fs::read(dir.join("back")).unwrap(), bytes);
    std::fs::remove_file(dir.join("f.bin.1.shard")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.join("f.bin.1.shard")).unwrap();
    assert_eq!(files::verify(&mp).unwrap().check.corrupt, vec![1, 4]);
    // a FIFO or device as the manifest or the input: one error, no hang
    mkfifo(&dir.join("fifo"));
    for p in [dir.join("fifo"), PathBuf::from("/dev/zero")] {
        assert!(matches!(files::verify(&p), Err(Error::Io(_))), "{p:?}");
        let e = files::encode_file(&p, &dir.join("enc"), &EncodeOptions::default()).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
    // a manifest-sized mistake: a 2 MiB file is refused without reading it all
    std::fs::write(dir.join("big.pmec"), vec![b'x'; 2 << 20]).unwrap();
    let e = files::verify(&dir.join("big.pmec")).unwrap_err();
    assert!(e.to_string().contains("larger than a manifest"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_decode_never_writes_over_its_own_inputs() {
    let (dir, bytes, mp) = encoded("own");
    let before: Vec<Vec<u8>> = (0..6)
        .map(|i| std::fs::read(dir.join(format!("f.bin.{i}.shard"))).unwrap())
        .collect();
    for out in [
        dir.join("f.bin.0.shard"),
        mp.clone(),
        dir.join("f.bin.5.shard"),
    ] {
        let e = files::decode_file(&mp, &out, true).unwrap_err();
        assert!(matches!(e, Error::InvalidParameter(_)), "{out:?}: {e}");
    }
    // and a repair whose output is the missing shard it would rebuild
    std::fs::remove_file(dir.join("f.bin.2.shard")).unwrap();
    let e = files::decode_file(&mp, &dir.join("f.bin.2.shard"), true).unwrap_err();
    assert!(matches!(e, Error::InvalidParameter(_)), "{e}");
    assert!(!dir.join("f.bin.2.shard").exists());
    for (i, b) in before.iter().enumerate().filter(|(i, _)| *i != 2) {
        assert_eq!(
            &std::fs::read(dir.join(format!("f.bin.{i}.shard"))).unwrap(),
            b
        );
    }
    // ... or a dangling link to that missing shard, the manifest named as `./`: the repaired
    // shard was renamed over the rebuilt file, reported as rebuilt
    let link = dir.join("link");
    std::os::unix::fs::symlink("f.bin.2.shard", &link).unwrap();
    let dotted = dir.join(".").join("f.bin.pmec");
    for repair in [true, false] {
        let e = files::decode_file(&dotted, &link, repair).unwrap_err();
        assert!(matches!(e, Error::InvalidParameter(_)), "{e}");
        assert!(!dir.join("f.bin.2.shard").exists());
    }
    std::fs::remove_file(&link).unwrap();
    files::decode_file(&mp, &dir.join("back"), true).unwrap();
    assert_eq!(std::fs::read(dir.join("back")).unwrap(), bytes);
    // manifests naming one file for two shards, the manifest as a shard, or `..`
    for (from, to) in [
        (" f.bin.1.shard\n", " f.bin.0.shard\n"),
        (" f.bin.1.shard\n", " f.bin.pmec\n"),
        (" f.bin.1.shard\n", " ..\n"),
    ] {
        edit_manifest(&mp, |t| t.replace(from, to));
        let e = files::decode_file(&mp, &dir.join("o2"), true).unwrap_err();
        assert!(matches!(e, Error::Format(_)), "{to:?}: {e}");
        edit_manifest(&mp, |t| t.replace(to, from));
    }
    assert!(!dir.join("o2").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_file_name_a_manifest_cannot_hold_is_refused() {
    let dir = tmpdir("nl");
    let input = dir.join("a\nshard 9 0 x");
    std::fs::write(&input, b"data").unwrap();
    let e = files::encode_file(&input, &dir.join("out"), &EncodeOptions::default()).unwrap_err();
    assert!(matches!(e, Error::InvalidParameter(_)), "{e}");
    assert!(!e.to_string().contains('\n'), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The rebuilt file's name may be a symbolic link (the file it leads to is replaced, the link
/// stays); a FIFO there is refused and left as it is, not replaced by a regular file (which,
/// as root, once replaced `/dev/null` itself).
#[test]
fn a_decode_follows_links_and_refuses_special_files() {
    let (dir, content, mp) = encoded("links");
    let real = dir.join("real.bin");
    let link = dir.join("link.bin");
    std::fs::write(&real, b"old").unwrap();
    std::os::unix::fs::symlink("real.bin", &link).unwrap();
    files::decode_file(&mp, &link, false).unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(&real).unwrap(), content);
    let fifo = dir.join("out.fifo");
    mkfifo(&fifo);
    let e = files::decode_file(&mp, &fifo, false).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    assert!(!std::fs::metadata(&fifo).unwrap().is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Shards hold the file's bytes verbatim: a private file's shards, manifest, repaired shards
/// and rebuilt copy are no more readable than the file (they were created 0644 before), and
/// a file rebuilt over an existing one keeps that one's permissions.
#[test]
fn shards_and_rebuilt_files_are_no_more_readable_than_the_input() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = tmpdir("perm");
    let input = dir.join("secret");
    std::fs::write(&input, b"private key material").unwrap();
    std::fs::set_permissions(&input, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = dir.join("shards");
    let opts = EncodeOptions {
        k: 2,
        m: 1,
        block: 64,
        ..EncodeOptions::default()
    };
    files::encode_file(&input, &out, &opts).unwrap();
    let mp = files::manifest_path(&out, "secret");
    assert_eq!(mode(&mp), 0o600);
    for i in 0..3 {
        assert_eq!(
            mode(&out.join(format!("secret.{i}.shard"))),
            0o600,
            "shard {i}"
        );
    }
    std::fs::remove_file(out.join("secret.1.shard")).unwrap();
    files::decode_file(&mp, &dir.join("back"), true).unwrap();
    assert_eq!(mode(&dir.join("back")), 0o600);
    assert_eq!(mode(&out.join("secret.1.shard")), 0o600);
    let existing = dir.join("existing");
    std::fs::write(&existing, b"old").unwrap();
    std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o640)).unwrap();
    files::decode_file(&mp, &existing, false).unwrap();
    assert_eq!(std::fs::read(&existing).unwrap(), b"private key material");
    assert_eq!(mode(&existing), 0o640);
    // the owner can always read and rewrite the shards (an input without the owner's write
    // bit; one without the owner's read bit only root could encode)
    std::fs::set_permissions(&input, std::fs::Permissions::from_mode(0o444)).unwrap();
    files::encode_file(&input, &out, &opts).unwrap();
    assert_eq!(mode(&out.join("secret.0.shard")) & 0o600, 0o600);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--repair` does not replace a directory or FIFO in a shard's place: the decode stops before
/// writing anything, with a message that names the shard and what to do (it said only
/// "f.bin.4.shard: is a directory", as if the output were a directory); an output directory
/// that is a file is named as such (it said only "File exists").
#[test]
fn a_repair_that_cannot_replace_a_shard_says_which_and_why() {
    let (dir, _, mp) = encoded("norepair");
    std::fs::remove_file(dir.join("f.bin.4.shard")).unwrap();
    std::fs::create_dir(dir.join("f.bin.4.shard")).unwrap();
    let e = files::decode_file(&mp, &dir.join("back"), true)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cannot repair shard 4") && e.contains("decode without --repair"),
        "{e}"
    );
    assert!(!dir.join("back").exists());
    assert!(dir.join("f.bin.4.shard").is_dir());
    files::decode_file(&mp, &dir.join("back"), false).unwrap();
    let e = files::encode_file(
        &dir.join("back"),
        &dir.join("back"),
        &EncodeOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("the output directory is a file"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An output name in the shard directory that is a link to the input is refused: the
/// manifest (or a shard) was renamed over the input itself before.
#[test]
fn an_encode_never_writes_over_its_input() {
    let dir = tmpdir("encself");
    let input = dir.join("f");
    std::fs::write(&input, b"precious").unwrap();
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    for name in ["f.pmec", "f.1.shard"] {
        std::os::unix::fs::symlink("../f", out.join(name)).unwrap();
        let e = files::encode_file(&input, &out, &EncodeOptions::default()).unwrap_err();
        assert!(matches!(e, Error::InvalidParameter(_)), "{name}: {e}");
        assert!(e.to_string().contains("replace the input"), "{e}");
        assert_eq!(std::fs::read(&input).unwrap(), b"precious");
        std::fs::remove_file(out.join(name)).unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A repair writes a missing or corrupt shard where its name leads: a shard that is a link to
/// another shard had that shard overwritten with its bytes (decode said "repaired [0]", verify
/// then found shard 1 corrupt), and a dangling link to the output had the shard written over
/// the rebuilt file. Both refused before anything is written.
#[test]
fn a_repair_never_writes_through_a_link_over_another_shard_or_the_output() {
    let (dir, bytes, mp) = encoded("repairlink");
    let shard1 = std::fs::read(dir.join("f.bin.1.shard")).unwrap();
    std::fs::remove_file(dir.join("f.bin.0.shard")).unwrap();
    std::os::unix::fs::symlink("f.bin.1.shard", dir.join("f.bin.0.shard")).unwrap();
    let e = files::decode_file(&mp, &dir.join("back"), true)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("repairing shard 0 would write over shard 1"),
        "{e}"
    );
    assert_eq!(std::fs::read(dir.join("f.bin.1.shard")).unwrap(), shard1);
    assert!(!dir.join("back").exists());
    std::fs::remove_file(dir.join("f.bin.0.shard")).unwrap();
    let name = format!("pmec-files-repairlink-out-{}", std::process::id());
    std::os::unix::fs::symlink(format!("../{name}"), dir.join("f.bin.0.shard")).unwrap();
    let out = dir.parent().unwrap().join(name);
    let _ = std::fs::remove_file(&out);
    let e = files::decode_file(&mp, &out, true).unwrap_err().to_string();
    assert!(
        e.contains("repairing shard 0 would write over the output"),
        "{e}"
    );
    assert!(!out.exists());
    // Without --repair the same shards rebuild the file.
    files::decode_file(&mp, &out, false).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A directory as the input is named as one (`.` was refused as "not a file name a manifest can
/// hold").
#[test]
fn encoding_a_directory_says_it_is_one() {
    let dir = tmpdir("encdir");
    for input in [dir.clone(), dir.join(".")] {
        let e = files::encode_file(&input, &dir.join("out"), &EncodeOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("is a directory"), "{}: {e}", input.display());
    }
    assert!(!dir.join("out").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A manifest that names itself as a shard is malformed for verify as for decode (verify
/// called the shard corrupt and advised `--repair`, which decode then refused).
#[test]
fn verify_and_decode_agree_on_a_shard_that_is_the_manifest() {
    let (dir, _, mp) = encoded("selfshard");
    edit_manifest(&mp, |t| t.replace("f.bin.0.shard", "f.bin.pmec"));
    for e in [
        files::verify(&mp).unwrap_err(),
        files::decode_file(&mp, &dir.join("back"), true).unwrap_err(),
    ] {
        assert!(matches!(e, Error::Format(_)), "{e}");
        assert!(
            e.to_string().contains("shard 0 names the manifest itself"),
            "{e}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn encoding_again_with_fewer_shards_removes_the_shards_nothing_lists() {
    let dir = tmpdir("fewer");
    let input = dir.join("data.bin");
    let mut bytes = vec![0u8; 50_000];
    Rng(11).fill(&mut bytes);
    std::fs::write(&input, &bytes).unwrap();
    let out = dir.join("s");
    let opts = |k, m| EncodeOptions {
        k,
        m,
        block: 1024,
        ..EncodeOptions::default()
    };
    files::encode_file(&input, &out, &opts(8, 4)).unwrap();
    assert_eq!(names(&out).len(), 13);
    // A file of a shard's name the old manifest does not list is not encode's to remove.
    std::fs::write(out.join("data.bin.40.shard"), b"mine").unwrap();
    files::encode_file(&input, &out, &opts(2, 1)).unwrap();
    assert_eq!(
        names(&out),
        [
            "data.bin.0.shard",
            "data.bin.1.shard",
            "data.bin.2.shard",
            "data.bin.40.shard",
            "data.bin.pmec"
        ]
    );
    let back = dir.join("back");
    files::decode_file(&out.join("data.bin.pmec"), &back, false).unwrap();
    assert_eq!(std::fs::read(&back).unwrap(), bytes);
    let _ = std::fs::remove_dir_all(&dir);
}
