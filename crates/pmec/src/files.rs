//! File sharding for `pmlab ec`: split a file into k data + m parity shard files with a small
//! text manifest (sizes, code parameters, a CRC-32 per shard), rebuild it from any k intact
//! shards (reporting which were missing or corrupt, optionally rewriting them), and verify.
//!
//! Layout: the file is cut into stripes of `k * block` bytes (the last one zero-padded); shard i
//! holds block i of every stripe, so shard files are `stripes * block` bytes long. Shards are
//! named `<file name>.<index>.shard` next to `<file name>.pmec` (the manifest).

use crate::codec::Codec;
use crate::error::{invalid, Error, Result};
use crate::matrix::MatrixKind;
use crate::pool::ThreadPool;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Options for [`encode_file`].
#[derive(Debug, Clone)]
pub struct EncodeOptions {
    /// Data shards.
    pub k: usize,
    /// Parity shards.
    pub m: usize,
    /// Stripe unit in bytes (default 64 KiB).
    pub block: usize,
    /// Generator matrix.
    pub matrix: MatrixKind,
    /// Encoder threads.
    pub threads: usize,
}

impl Default for EncodeOptions {
    fn default() -> Self {
        EncodeOptions {
            k: 8,
            m: 4,
            block: 64 * 1024,
            matrix: MatrixKind::Cauchy,
            threads: 1,
        }
    }
}

/// One shard's entry in the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardInfo {
    /// Shard index (0..k data, k..k+m parity).
    pub index: usize,
    /// File name, relative to the manifest's directory.
    pub file: String,
    /// CRC-32 (IEEE) of the whole shard file.
    pub crc32: u32,
}

/// The manifest written next to the shards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// Original file name (no directory).
    pub file_name: String,
    /// Original size in bytes.
    pub file_size: u64,
    /// Data shards.
    pub k: usize,
    /// Parity shards.
    pub m: usize,
    /// Matrix kind.
    pub matrix: MatrixKind,
    /// Stripe unit.
    pub block: usize,
    /// Number of stripes (each shard is `stripes * block` bytes).
    pub stripes: u64,
    /// Per-shard names and checksums, in index order.
    pub shards: Vec<ShardInfo>,
    /// CRC-32 (IEEE) of the original file, checked after every rebuild (`None` in manifests
    /// written before it was recorded).
    pub file_crc32: Option<u32>,
}

const MAGIC: &str = "pmec-manifest 1";

/// Largest stripe unit accepted (64 MiB): a stripe of k such blocks is held in memory.
pub const MAX_BLOCK: usize = 64 << 20;
/// Largest stripe (k data and m parity blocks) accepted, 1 GiB: what one batch of encoding
/// or decoding holds in memory.
pub const MAX_STRIPE_BYTES: usize = 1 << 30;

/// Largest manifest file read (1 MiB; one of 255 shards with names of at most 255 bytes is
/// under 80 KiB).
const MAX_MANIFEST_BYTES: u64 = 1 << 20;

/// Checks a block size against k and m: positive, at most [`MAX_BLOCK`], and a stripe of
/// k + m blocks at most [`MAX_STRIPE_BYTES`] (its data and parity are in memory together).
pub(crate) fn check_block(k: usize, m: usize, block: usize) -> std::result::Result<(), String> {
    if block == 0 {
        return Err("block size must be positive".into());
    }
    if block > MAX_BLOCK {
        return Err(format!(
            "block size {block} is larger than the maximum {MAX_BLOCK} (64 MiB)"
        ));
    }
    match k.checked_add(m).and_then(|n| n.checked_mul(block)) {
        Some(s) if s <= MAX_STRIPE_BYTES => Ok(()),
        _ => Err(format!(
            "a stripe of k + m = {k} + {m} blocks of {block} bytes is larger than the maximum \
             {MAX_STRIPE_BYTES} bytes (1 GiB)"
        )),
    }
}

/// A value from a manifest as an error message shows it: at most 40 characters, control
/// characters escaped.
fn shown(v: &str) -> String {
    let cut: String = v.chars().take(40).collect();
    let more = if cut.len() < v.len() { "..." } else { "" };
    format!("{}{more}", cut.escape_debug())
}

/// Whether `name` can be a shard or file name in a manifest: a plain, non-empty name, not `.`
/// or `..`, without `/`, line breaks or NUL (the manifest is line-based).
fn plain_name(name: &str) -> bool {
    !(name.is_empty() || name == "." || name == ".." || name.contains(['/', '\n', '\r', '\0']))
}

/// Opens `path` for reading only if it is a regular file (after symbolic links): a FIFO or a
/// device would block or never end. Opened non-blocking, so a FIFO put there between the check
/// and the open does not hang either.
fn open_regular(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(f)
}

impl Manifest {
    /// Bytes per shard file.
    pub fn shard_len(&self) -> u64 {
        self.stripes * self.block as u64
    }

    /// Text form.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "{MAGIC}\nfile {}\nsize {}\nk {}\nm {}\nmatrix {}\nblock {}\nstripes {}\n",
            self.file_name,
            self.file_size,
            self.k,
            self.m,
            self.matrix.name(),
            self.block,
            self.stripes
        );
        if let Some(c) = self.file_crc32 {
            s.push_str(&format!("crc32 {c:08x}\n"));
        }
        for sh in &self.shards {
            s.push_str(&format!(
                "shard {} {:08x} {}\n",
                sh.index, sh.crc32, sh.file
            ));
        }
        s
    }

    /// Parse the text form; errors name the offending line.
    pub fn parse(text: &str) -> Result<Manifest> {
        let mut lines = text.lines().enumerate();
        match lines.next() {
            Some((_, l)) if l.trim() == MAGIC => {}
            _ => {
                return Err(Error::Format(format!(
                    "not a pmec manifest (first line must be '{MAGIC}')"
                )))
            }
        }
        let bad = |n: usize, what: &str| Error::Format(format!("manifest line {}: {what}", n + 1));
        let (mut name, mut size, mut k, mut m, mut matrix, mut block, mut stripes, mut crc) =
            (None, None, None, None, None, None, None, None);
        let mut shards = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for (n, line) in lines {
            if line.trim().is_empty() {
                continue;
            }
            let (key, rest) = line
                .split_once(' ')
                .ok_or_else(|| bad(n, "expected 'key value'"))?;
            if key != "shard" {
                // A second value would silently win over the first (e.g. a second `size`).
                if seen.contains(&key) {
                    return Err(bad(n, &format!("'{key}' given twice")));
                }
                seen.push(key);
            }
            let num = |v: &str| {
                v.trim()
                    .parse::<u64>()
                    .map_err(|_| bad(n, &format!("bad number '{}'", shown(v))))
            };
            match key {
                "file" => name = Some(rest.to_string()),
                "size" => size = Some(num(rest)?),
                "k" => k = Some(num(rest)? as usize),
                "m" => m = Some(num(rest)? as usize),
                "matrix" => {
                    matrix = Some(
                        MatrixKind::parse(rest.trim()).map_err(|_| bad(n, "bad matrix kind"))?,
                    )
                }
                "block" => block = Some(num(rest)? as usize),
                "stripes" => stripes = Some(num(rest)?),
                "crc32" => {
                    crc = Some(u32::from_str_radix(rest.trim(), 16).map_err(|_| bad(n, "bad crc"))?)
                }
                "shard" => {
                    let mut it = rest.splitn(3, ' ');
                    let idx = num(it.next().unwrap_or(""))? as usize;
                    let crc = u32::from_str_radix(it.next().unwrap_or(""), 16)
                        .map_err(|_| bad(n, "bad crc"))?;
                    let file = it
                        .next()
                        .ok_or_else(|| bad(n, "missing shard file name"))?
                        .to_string();
                    if !plain_name(&file) {
                        return Err(bad(n, "shard file name must be a plain name"));
                    }
                    if shards.iter().any(|s: &ShardInfo| s.file == file) {
                        return Err(bad(n, "two shards name the same file"));
                    }
                    shards.push(ShardInfo {
                        index: idx,
                        file,
                        crc32: crc,
                    });
                }
                other => return Err(bad(n, &format!("unknown key '{}'", shown(other)))),
            }
        }
        let miss = |w: &str| Error::Format(format!("manifest lacks '{w}'"));
        let man = Manifest {
            file_name: name.ok_or_else(|| miss("file"))?,
            file_size: size.ok_or_else(|| miss("size"))?,
            k: k.ok_or_else(|| miss("k"))?,
            m: m.ok_or_else(|| miss("m"))?,
            matrix: matrix.ok_or_else(|| miss("matrix"))?,
            block: block.ok_or_else(|| miss("block"))?,
            stripes: stripes.ok_or_else(|| miss("stripes"))?,
            shards,
            file_crc32: crc,
        };
        crate::matrix::check_km(man.k, man.m).map_err(|e| Error::Format(e.to_string()))?;
        check_block(man.k, man.m, man.block).map_err(Error::Format)?;
        if !plain_name(&man.file_name) {
            return Err(Error::Format("the file name must be a plain name".into()));
        }
        if man.shards.len() != man.k + man.m {
            return Err(Error::Format(format!(
                "manifest lists {} shards, k + m = {} (indices 0..{})",
                man.shards.len(),
                man.k + man.m,
                man.k + man.m
            )));
        }
        if let Some((i, sh)) = man.shards.iter().enumerate().find(|(i, s)| s.index != *i) {
            return Err(Error::Format(format!(
                "shard {} is listed where shard {i} belongs: shard lines go in index order",
                sh.index
            )));
        }
        let need = man.file_size.div_ceil((man.k * man.block) as u64);
        if man.stripes != need {
            return Err(Error::Format(format!(
                "stripes {} inconsistent with size (expected {need})",
                man.stripes
            )));
        }
        if man.stripes.checked_mul(man.block as u64).is_none() {
            return Err(Error::Format(format!(
                "size {} gives shards longer than 2^64 bytes",
                man.file_size
            )));
        }
        Ok(man)
    }

    /// Read and parse a manifest file (a regular file of at most 1 MiB).
    pub fn load(path: &Path) -> Result<Manifest> {
        let f = open_regular(path).map_err(|e| io(path, e))?;
        let mut bytes = Vec::new();
        f.take(MAX_MANIFEST_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| io(path, e))?;
        if bytes.len() as u64 > MAX_MANIFEST_BYTES {
            return Err(Error::Format(format!(
                "{}: larger than a manifest can be ({MAX_MANIFEST_BYTES} bytes)",
                path.display()
            )));
        }
        let text = String::from_utf8(bytes).map_err(|_| {
            Error::Format(format!(
                "{}: not a pmec manifest (not UTF-8)",
                path.display()
            ))
        })?;
        Manifest::parse(&text)
    }
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::Io(format!("{}: {e}", path.display()))
}

/// Manifest path for an input file inside `out_dir`.
pub fn manifest_path(out_dir: &Path, file_name: &str) -> PathBuf {
    out_dir.join(format!("{file_name}.pmec"))
}

/// Stripes per encode/decode batch (about 8 MiB of data).
fn batch_stripes(k: usize, block: usize) -> usize {
    ((8 << 20) / (k * block)).max(1)
}

/// Split `input` into shards in `out_dir`; returns the manifest (also written to
/// `<out_dir>/<name>.pmec`).
pub fn encode_file(input: &Path, out_dir: &Path, opts: &EncodeOptions) -> Result<Manifest> {
    let codec = Codec::builder(opts.k, opts.m).matrix(opts.matrix).build()?;
    if let Err(e) = check_block(opts.k, opts.m, opts.block) {
        return invalid(&e);
    }
    let (k, m, b) = (opts.k, opts.m, opts.block);
    if input.is_dir() {
        // (`.` has no file name: it was refused as a name a manifest cannot hold)
        return Err(Error::Io("is a directory, not a regular file".into()));
    }
    let name = input
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| plain_name(n))
        .ok_or_else(|| {
            Error::InvalidParameter(format!(
                "{}: not a file name a manifest can hold (not UTF-8, or a line break in it?)",
                input.display().to_string().escape_debug()
            ))
        })?
        .to_string();
    let mut src = open_regular(input).map_err(|e| io(input, e))?;
    let meta = src.metadata().map_err(|e| io(input, e))?;
    let size = meta.len();
    // The data shards hold the file's bytes as they are: they are no more readable than it.
    let mode = shard_mode(&meta);
    if std::fs::metadata(out_dir).is_ok_and(|md| !md.is_dir()) {
        // create_dir_all says only "File exists"
        return Err(Error::Io(format!(
            "{}: the output directory is a file",
            out_dir.display()
        )));
    }
    std::fs::create_dir_all(out_dir).map_err(|e| io(out_dir, e))?;
    let stripes = size.div_ceil((k * b) as u64);
    let files: Vec<String> = (0..k + m).map(|i| format!("{name}.{i}.shard")).collect();
    // An output name that leads to the input (a symbolic link in `out_dir`) would replace it.
    for f in files.iter().chain([&format!("{name}.pmec")]) {
        if same_file(&out_dir.join(f), input) {
            return invalid(format!(
                "{}: the output would replace the input file",
                out_dir.join(f).display()
            ));
        }
    }
    // Shards and manifest are written under temporary names and renamed only once all are
    // complete: a failed encode leaves an earlier encoding of the file in `out_dir` intact.
    let mut staged = Staged::default();
    let mut writers = Vec::with_capacity(k + m);
    for f in &files {
        let p = staged.create(&out_dir.join(f), mode)?;
        writers.push(BufWriter::new(p));
    }
    let mut crcs: Vec<crc32fast::Hasher> = (0..k + m).map(|_| crc32fast::Hasher::new()).collect();
    let mut file_crc = crc32fast::Hasher::new();
    let per = batch_stripes(k, b);
    let pool = ThreadPool::new(opts.threads);
    let mut data = vec![0u8; per * k * b];
    let mut parity = vec![0u8; per * m * b];
    let mut done = 0u64;
    let mut read = 0u64;
    while done < stripes {
        let n = (stripes - done).min(per as u64) as usize;
        let want = n * k * b;
        data[..want].fill(0);
        let got = read_full(&mut src, &mut data[..want]).map_err(|e| io(input, e))?;
        read += got as u64;
        file_crc.update(&data[..got]);
        {
            let d: Vec<&[u8]> = data[..want].chunks(b).collect();
            let mut p: Vec<&mut [u8]> = parity[..n * m * b].chunks_mut(b).collect();
            pool.encode_batch(&codec, &d, &mut p)?;
        }
        for s in 0..n {
            for i in 0..k + m {
                let blk = if i < k {
                    &data[(s * k + i) * b..(s * k + i + 1) * b]
                } else {
                    &parity[(s * m + i - k) * b..(s * m + i - k + 1) * b]
                };
                crcs[i].update(blk);
                writers[i]
                    .write_all(blk)
                    .map_err(|e| io(&out_dir.join(&files[i]), e))?;
            }
        }
        done += n as u64;
    }
    if read != size {
        return Err(Error::Io(format!(
            "{}: the file shrank while it was encoded ({size} bytes at the start, {read} read)",
            input.display()
        )));
    }
    if read_full(&mut src, &mut [0u8; 1]).map_err(|e| io(input, e))? != 0 {
        return Err(Error::Io(format!(
            "{}: the file grew while it was encoded",
            input.display()
        )));
    }
    for (w, f) in writers.into_iter().zip(&files) {
        w.into_inner()
            .map_err(|e| io(&out_dir.join(f), e.into_error()))?;
    }
    let shards = crcs
        .into_iter()
        .zip(files)
        .enumerate()
        .map(|(index, (c, file))| ShardInfo {
            index,
            file,
            crc32: c.finalize(),
        })
        .collect();
    let man = Manifest {
        file_name: name.clone(),
        file_size: size,
        k,
        m,
        matrix: opts.matrix,
        block: b,
        stripes,
        shards,
        file_crc32: Some(file_crc.finalize()),
    };
    let mp = manifest_path(out_dir, &name);
    // The shards of an earlier encoding of the file that the new one does not have (it had more
    // shards): removed once the new manifest is in place, as nothing lists them then. Only
    // names encode gives shards (`NAME.I.shard`, I past the new ones), whatever the old
    // manifest says.
    let stale: Vec<String> = Manifest::load(&mp)
        .map(|old| {
            (k + m..old.shards.len())
                .map(|i| format!("{name}.{i}.shard"))
                .filter(|f| old.shards.iter().any(|s| &s.file == f))
                .filter(|f| !same_file(&out_dir.join(f), input))
                .collect()
        })
        .unwrap_or_default();
    staged
        .create(&mp, mode)?
        .write_all(man.to_text().as_bytes())
        .map_err(|e| io(&mp, e))?;
    staged.commit()?;
    for f in stale {
        let _ = std::fs::remove_file(out_dir.join(f));
    }
    Ok(man)
}

/// What [`set_temp_file_hook`]'s hook returns for a temporary output file: kept while the file
/// exists under its temporary name, dropped once it is renamed into place or removed.
pub type TempFileGuard = Box<dyn std::any::Any>;

static TEMP_FILE_HOOK: std::sync::OnceLock<fn(&Path) -> TempFileGuard> = std::sync::OnceLock::new();

/// Registers `hook`, called with the name of each temporary output file
/// (`<name>.<pid>-<n>.pmec-tmp`)
/// when it is created, once per process (false if a hook was set already). A command-line
/// tool uses it to remove those files when it is interrupted by a signal, which skips the
/// cleanup a failed encode or decode does.
pub fn set_temp_file_hook(hook: fn(&Path) -> TempFileGuard) -> bool {
    TEMP_FILE_HOOK.set(hook).is_ok()
}

/// Output files written under temporary names (`<name>.<pid>-<n>.pmec-tmp`, created
/// exclusively: a concurrent writer of the same output, or a symbolic link planted under that
/// name, is never written through) and renamed to their own names by [`commit`](Self::commit),
/// in the order they were created; dropped uncommitted, it removes the temporary files.
#[derive(Default)]
struct Staged {
    /// (temporary name, destination, the hook's guard for the temporary name).
    files: Vec<(PathBuf, PathBuf, Option<TempFileGuard>)>,
}

/// The regular file an output named `dest` is: a symbolic link is followed (the file it leads
/// to is replaced, the link stays; a dangling link's target is created). A device, FIFO or
/// anything under `/dev` or `/proc` is refused: renaming a staged file over it would replace it
/// with a regular file (as root, `/dev/null` itself).
fn output_file(dest: &Path) -> Result<PathBuf> {
    let refuse = |p: &Path| {
        Err(Error::Io(format!(
            "{}: not a regular file (outputs are staged in a temporary file and renamed over \
             their names)",
            p.display()
        )))
    };
    let real = match std::fs::symlink_metadata(dest) {
        Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(dest) {
            Ok(real) => real,
            Err(_) => match std::fs::read_link(dest) {
                Ok(t) if t.is_relative() => dest.parent().unwrap_or(Path::new("")).join(t),
                Ok(t) => t,
                Err(e) => return Err(io(dest, e)),
            },
        },
        _ => dest.to_path_buf(),
    };
    let dir = real
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let special_dir = std::fs::canonicalize(dir)
        .map(|d| d.starts_with("/dev") || d.starts_with("/proc"))
        .unwrap_or(false);
    match std::fs::metadata(&real) {
        Ok(m) if !m.is_file() && !m.is_dir() => refuse(dest),
        _ if special_dir => refuse(dest),
        _ => Ok(real),
    }
}

impl Staged {
    /// Creates the temporary file for `dest` (whose parent must be a directory) with
    /// permission bits `mode` (less the umask).
    fn create(&mut self, dest: &Path, mode: u32) -> Result<File> {
        use std::os::unix::fs::OpenOptionsExt;
        static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let dest = &output_file(dest)?;
        if dest.is_dir() {
            return Err(Error::Io(format!("{}: is a directory", dest.display())));
        }
        // (by the file, not the name: a dangling link `a/../x` and `x` are one destination)
        if self
            .files
            .iter()
            .any(|(_, d, _)| d == dest || same_file(d, dest))
        {
            return Err(Error::InvalidParameter(format!(
                "{}: written twice by one command",
                dest.display()
            )));
        }
        let mut tmp = dest.as_os_str().to_owned();
        let n = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tmp.push(format!(".{}-{n}.pmec-tmp", std::process::id()));
        let tmp = PathBuf::from(tmp);
        // Registered before it exists: an interrupt in between finds no file to remove.
        let guard = TEMP_FILE_HOOK.get().map(|h| h(&tmp));
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)
            .map_err(|e| io(dest, e))?;
        self.files.push((tmp, dest.to_path_buf(), guard));
        Ok(f)
    }

    /// Makes every temporary file durable, then renames each to its destination (and makes
    /// the renames durable).
    fn commit(mut self) -> Result<()> {
        for (tmp, _, _) in &self.files {
            File::open(tmp)
                .and_then(|f| f.sync_all())
                .map_err(|e| io(tmp, e))?;
        }
        let mut dirs: Vec<PathBuf> = self
            .files
            .iter()
            .filter_map(|(_, d, _)| d.parent().map(|p| p.to_path_buf()))
            .collect();
        dirs.sort();
        dirs.dedup();
        while !self.files.is_empty() {
            let (tmp, dest, _guard) = self.files.remove(0);
            if let Err(e) = std::fs::rename(&tmp, &dest) {
                let _ = std::fs::remove_file(&tmp);
                return Err(io(&dest, e)); // the drop removes the rest
            }
        }
        for d in dirs {
            let d = if d.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                d
            };
            // Best effort: not every filesystem syncs a directory opened for reading.
            let _ = File::open(&d).and_then(|f| f.sync_all());
        }
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        for (tmp, _, _) in &self.files {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// A file's permission bits (set-id and sticky bits dropped).
fn file_mode(md: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    md.permissions().mode() & 0o777
}

/// The permission bits of shards and a manifest written for a file with metadata `md`: its
/// read and write bits (a shard is never executable), and always the owner's, who must read
/// them back and repair them (a file of another owner may be readable by group or others only).
fn shard_mode(md: &std::fs::Metadata) -> u32 {
    file_mode(md) & 0o666 | 0o600
}

/// Read as much as possible (short only at end of file).
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// State of each shard as found on disk.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShardCheck {
    /// Shards whose file is absent.
    pub missing: Vec<usize>,
    /// Shards present but with the wrong size or checksum.
    pub corrupt: Vec<usize>,
}

impl ShardCheck {
    /// Missing or corrupt, sorted.
    pub fn bad(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.missing.iter().chain(&self.corrupt).copied().collect();
        v.sort_unstable();
        v
    }
}

/// Check every shard's presence, size and CRC. A shard that cannot be read (not a regular
/// file, no permission, a symbolic link loop, an I/O error) counts as corrupt: the others can
/// rebuild it.
pub fn check_shards(manifest: &Manifest, dir: &Path) -> Result<ShardCheck> {
    let mut c = ShardCheck::default();
    let mut buf = vec![0u8; 1 << 20];
    for sh in &manifest.shards {
        let p = dir.join(&sh.file);
        let f = match open_regular(&p) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                c.missing.push(sh.index);
                continue;
            }
            Err(_) => {
                c.corrupt.push(sh.index);
                continue;
            }
        };
        if !shard_intact(f, manifest.shard_len(), sh.crc32, &mut buf) {
            c.corrupt.push(sh.index);
        }
    }
    Ok(c)
}

/// Whether the open shard file `f` is `len` bytes long with CRC-32 `crc` (false on a read
/// error).
fn shard_intact(f: File, len: u64, crc: u32, buf: &mut [u8]) -> bool {
    if f.metadata().map(|m| m.len()).ok() != Some(len) {
        return false;
    }
    let mut h = crc32fast::Hasher::new();
    let mut f = f.take(len);
    let mut seen = 0u64;
    loop {
        match f.read(buf) {
            Ok(0) => break,
            Ok(n) => {
                h.update(&buf[..n]);
                seen += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    seen == len && h.finalize() == crc
}

/// Whether `a` and `b` name the same file: the same inode where both exist, else the same
/// name in the same directory.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        return x.dev() == y.dev() && x.ino() == y.ino();
    }
    let dir = |p: &Path| {
        let d = p.parent().filter(|d| !d.as_os_str().is_empty());
        d.unwrap_or(Path::new(".")).canonicalize().ok()
    };
    a.file_name() == b.file_name() && dir(a).is_some() && dir(a) == dir(b)
}

/// What [`decode_file`] found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeReport {
    /// Shard states found.
    pub check: ShardCheck,
    /// Shards read to rebuild the file.
    pub used: Vec<usize>,
    /// Shards rewritten on disk (only with `repair`).
    pub repaired: Vec<usize>,
    /// Bytes written to the output.
    pub bytes: u64,
}

/// A manifest whose shard entry names the manifest itself (under any name) is malformed.
fn no_shard_is_the_manifest(man: &Manifest, dir: &Path, manifest_path: &Path) -> Result<()> {
    match man
        .shards
        .iter()
        .find(|sh| same_file(&dir.join(&sh.file), manifest_path))
    {
        Some(sh) => Err(Error::Format(format!(
            "shard {} names the manifest itself",
            sh.index
        ))),
        None => Ok(()),
    }
}

/// Rebuild the original file at `output` from the shards next to `manifest_path`, using any k
/// intact shards. With `repair`, missing/corrupt shard files are rewritten too.
pub fn decode_file(manifest_path: &Path, output: &Path, repair: bool) -> Result<DecodeReport> {
    let man = Manifest::load(manifest_path)?;
    let dir = manifest_path.parent().unwrap_or(Path::new("."));
    // The output must not replace what the decode reads (or a repair writes), neither by its
    // name nor by the file a symbolic link there leads to (which may not exist yet: a dangling
    // link to a missing shard made a repair write the shard over the rebuilt file).
    let out_real = output_file(output)?;
    let is_output = |p: &Path| same_file(output, p) || same_file(&out_real, p);
    if is_output(manifest_path) {
        return invalid(format!(
            "{}: the output would replace the manifest",
            output.display()
        ));
    }
    for sh in &man.shards {
        let p = dir.join(&sh.file);
        if is_output(&p) {
            return invalid(format!(
                "{}: the output would replace shard {}",
                output.display(),
                sh.index
            ));
        }
    }
    no_shard_is_the_manifest(&man, dir, manifest_path)?;
    let check = check_shards(&man, dir)?;
    let bad = check.bad();
    if repair {
        // A repaired shard is written where its name leads: through a symbolic link to another
        // shard, that shard was overwritten with this one's bytes (and verify then found it
        // corrupt, and a second repair moved the damage back).
        for &i in &bad {
            let p = dir.join(&man.shards[i].file);
            let dest = output_file(&p)?;
            let other = man.shards.iter().find(|sh| {
                sh.index != i && {
                    let q = dir.join(&sh.file);
                    same_file(&dest, &q) || same_file(&p, &q)
                }
            });
            if let Some(sh) = other {
                return invalid(format!(
                    "{}: repairing shard {i} would write over shard {} (its name leads to {})",
                    manifest_path.display(),
                    sh.index,
                    dest.display()
                ));
            }
            if same_file(&dest, manifest_path) {
                return invalid(format!(
                    "{}: repairing shard {i} would write over the manifest",
                    manifest_path.display()
                ));
            }
            if is_output(&dest) {
                return invalid(format!(
                    "{}: repairing shard {i} would write over the output {} (its name leads there)",
                    manifest_path.display(),
                    output.display()
                ));
            }
        }
    }
    let (k, m, b) = (man.k, man.m, man.block);
    if bad.len() > m {
        return Err(Error::TooManyBadShards {
            missing: check.missing.clone(),
            corrupt: check.corrupt.clone(),
            max: m,
        });
    }
    let codec = Codec::builder(k, m).matrix(man.matrix).build()?;
    let decoder = if bad.is_empty() {
        None
    } else {
        Some(codec.decoder(&bad)?)
    };
    let used: Vec<usize> = match &decoder {
        Some(d) => d.survivors().to_vec(),
        None => (0..k).collect(),
    };
    let mut readers = Vec::new();
    for &i in &used {
        let p = dir.join(&man.shards[i].file);
        readers.push(BufReader::new(open_regular(&p).map_err(|e| io(&p, e))?));
    }
    // The output and repaired shards are written under temporary names, checked, then renamed.
    let mut staged = Staged::default();
    // The manifest has the input's permission bits (see `encode_file`): the rebuilt file and
    // shards get them, and a file rebuilt over an existing one keeps that one's.
    let mode = shard_mode(&std::fs::metadata(manifest_path).map_err(|e| io(manifest_path, e))?);
    let existing = std::fs::metadata(output).ok().filter(|md| md.is_file());
    let out_file = staged.create(output, existing.as_ref().map_or(mode, file_mode))?;
    if let Some(md) = &existing {
        use std::os::unix::fs::PermissionsExt;
        out_file
            .set_permissions(std::fs::Permissions::from_mode(file_mode(md)))
            .map_err(|e| io(output, e))?;
    }
    let mut out = BufWriter::new(out_file);
    let mut file_crc = crc32fast::Hasher::new();
    let mut rebuilt_crc: Vec<crc32fast::Hasher> =
        bad.iter().map(|_| crc32fast::Hasher::new()).collect();
    let mut rewriters = Vec::new();
    if repair {
        for &i in &bad {
            let p = dir.join(&man.shards[i].file);
            // A directory, FIFO or device in a shard's place is rebuilt from the others, but
            // not replaced: say so, and what to do, rather than only that it is a directory.
            let w = staged.create(&p, mode).map_err(|e| match e {
                Error::Io(s) => Error::Io(format!(
                    "cannot repair shard {i} ({s}): --repair replaces only a missing shard or a \
                     regular file; move it away, or decode without --repair"
                )),
                e => e,
            })?;
            rewriters.push((i, BufWriter::new(w)));
        }
    }
    let per = batch_stripes(k, b);
    let mut src = vec![0u8; per * k * b];
    let mut rebuilt = vec![0u8; per * bad.len() * b];
    let mut remaining = man.file_size;
    let mut done = 0u64;
    while done < man.stripes {
        let n = (man.stripes - done).min(per as u64) as usize;
        // survivors: shard-major reads into stripe-major buffer
        for (r, rd) in readers.iter_mut().enumerate() {
            for s in 0..n {
                let off = (s * k + r) * b;
                rd.read_exact(&mut src[off..off + b])
                    .map_err(|e| Error::Io(format!("shard {}: {e}", used[r])))?;
            }
        }
        if let Some(dec) = &decoder {
            let srcs: Vec<*const u8> = (0..n * k).map(|i| src[i * b..].as_ptr()).collect();
            let e = bad.len();
            let base = rebuilt.as_mut_ptr();
            // SAFETY: pointers to distinct `b`-byte blocks inside `rebuilt` (n*e of them).
            let dsts: Vec<*mut u8> = (0..n * e).map(|i| unsafe { base.add(i * b) }).collect();
            // SAFETY: sources are blocks of `src`, destinations blocks of `rebuilt`.
            unsafe { dec.decode_raw(b, &srcs, &dsts, 1) };
        }
        for s in 0..n {
            for i in 0..k {
                let blk = if let Some(r) = used.iter().position(|&u| u == i) {
                    &src[(s * k + r) * b..(s * k + r + 1) * b]
                } else {
                    let e = bad
                        .iter()
                        .position(|&x| x == i)
                        .expect("data shard is used or rebuilt");
                    &rebuilt[(s * bad.len() + e) * b..(s * bad.len() + e + 1) * b]
                };
                let take = remaining.min(b as u64) as usize;
                if !padding_is_zero(&blk[take..]) {
                    return Err(Error::Format(PADDING_NOT_ZERO.into()));
                }
                file_crc.update(&blk[..take]);
                out.write_all(&blk[..take]).map_err(|e| io(output, e))?;
                remaining -= take as u64;
            }
            for (e, h) in rebuilt_crc.iter_mut().enumerate() {
                h.update(&rebuilt[(s * bad.len() + e) * b..(s * bad.len() + e + 1) * b]);
            }
            for (e, (i, w)) in rewriters.iter_mut().enumerate() {
                let blk = &rebuilt[(s * bad.len() + e) * b..(s * bad.len() + e + 1) * b];
                w.write_all(blk)
                    .map_err(|er| io(&dir.join(&man.shards[*i].file), er))?;
            }
        }
        done += n as u64;
    }
    // A rebuilt shard that differs from the one encoded, or a file that differs from the one
    // encoded, means the manifest or the intact shards were altered (e.g. a wrong matrix or
    // size): no output then.
    for (h, &i) in rebuilt_crc.into_iter().zip(&bad) {
        if h.finalize() != man.shards[i].crc32 {
            return Err(Error::Format(format!(
                "shard {i} rebuilt from the others does not match its checksum in the manifest: \
                 the manifest or the shards were altered"
            )));
        }
    }
    if let Some(c) = man.file_crc32 {
        if file_crc.finalize() != c {
            return Err(Error::Format(
                "the rebuilt file does not match the manifest's crc32: the manifest or the \
                 shards were altered"
                    .into(),
            ));
        }
    }
    out.into_inner().map_err(|e| io(output, e.into_error()))?;
    let mut repaired = Vec::new();
    for (i, w) in rewriters {
        w.into_inner()
            .map_err(|e| io(&dir.join(&man.shards[i].file), e.into_error()))?;
        repaired.push(i);
    }
    staged.commit()?;
    Ok(DecodeReport {
        check,
        used,
        repaired,
        bytes: man.file_size,
    })
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// Shard states.
    pub check: ShardCheck,
    /// Whether the file can be rebuilt (at most m shards bad).
    pub recoverable: bool,
    /// With all shards intact: whether parity matches data (re-encoded stripe by stripe).
    pub parity_consistent: Option<bool>,
    /// With all shards intact: whether the data shards hold the file that was encoded (by the
    /// file's CRC-32 in the manifest, and the zero padding past its size; `None` for a manifest
    /// without the CRC whose padding is zero).
    pub file_matches: Option<bool>,
}

/// Encoding pads the last stripe with zeros: a byte past the file's size that is not zero
/// means the manifest's size was made smaller. For a manifest without the file's CRC-32 (from
/// before it was recorded) this is the only check of the size, and a partial one: a size made
/// smaller over zero bytes, or larger within the same stripe count, still decodes.
fn padding_is_zero(pad: &[u8]) -> bool {
    pad.iter().all(|&x| x == 0)
}

const PADDING_NOT_ZERO: &str = "the last stripe holds data past the manifest's size: the manifest \
     or the shards were altered";

/// Check shards against the manifest, and parity against data when all are intact.
pub fn verify(manifest_path: &Path) -> Result<VerifyReport> {
    let man = Manifest::load(manifest_path)?;
    let dir = manifest_path.parent().unwrap_or(Path::new("."));
    // (verify called such a shard corrupt and advised a repair, which decode refuses)
    no_shard_is_the_manifest(&man, dir, manifest_path)?;
    let check = check_shards(&man, dir)?;
    let recoverable = check.bad().len() <= man.m;
    let (mut parity_consistent, mut file_matches) = (None, None);
    if check.bad().is_empty() {
        let codec = Codec::builder(man.k, man.m).matrix(man.matrix).build()?;
        let mut files = Vec::new();
        let mut paths = Vec::new();
        for sh in &man.shards {
            let p = dir.join(&sh.file);
            files.push(BufReader::new(open_regular(&p).map_err(|e| io(&p, e))?));
            paths.push(p);
        }
        let n = man.k + man.m;
        let mut bufs = vec![vec![0u8; man.block]; n];
        let mut ok = true;
        let mut file_crc = crc32fast::Hasher::new();
        let mut remaining = man.file_size;
        let mut padding_zero = true;
        for s in 0..man.stripes {
            for ((f, buf), p) in files.iter_mut().zip(bufs.iter_mut()).zip(&paths) {
                f.seek(SeekFrom::Start(s * man.block as u64))
                    .map_err(|e| io(p, e))?;
                f.read_exact(buf).map_err(|e| io(p, e))?;
            }
            for b in &bufs[..man.k] {
                let take = remaining.min(man.block as u64) as usize;
                padding_zero &= padding_is_zero(&b[take..]);
                file_crc.update(&b[..take]);
                remaining -= take as u64;
            }
            let v: Vec<&[u8]> = bufs.iter().map(|b| b.as_slice()).collect();
            ok &= codec.verify(&v)?;
        }
        parity_consistent = Some(ok);
        file_matches = match man.file_crc32 {
            Some(c) => Some(padding_zero && c == file_crc.finalize()),
            // A manifest written before the file's CRC was recorded: the padding still shows a
            // size made smaller.
            None => (!padding_zero).then_some(false),
        };
    }
    Ok(VerifyReport {
        check,
        recoverable,
        parity_consistent,
        file_matches,
    })
}

/// Read just the manifest (e.g. to print it).
pub fn read_manifest(path: &Path) -> Result<Manifest> {
    Manifest::load(path)
}
