//! Output files written atomically: the bytes go to a temporary file beside the target, which
//! is synced and renamed over it only when complete. A reader (or a shard merging at the same
//! moment) sees the old file or the new one, never a partial one; a writer that fails, or is
//! interrupted by SIGINT, SIGTERM or SIGHUP (`signals`), leaves no partial output behind (after
//! a SIGKILL or a crash, the temporary `NAME.tmp-HOST-PID-STAMP` stays).
//!
//! Only regular files are replaced that way. A symbolic link is followed: the file it leads to
//! is replaced, the link stays. A target that is not a regular file (`/dev/null`, a FIFO, a
//! terminal) or is reached through `/dev` or `/proc` (`/dev/stdout`, `/dev/fd/N`) is written
//! through as it is, appended to: renaming over it replaced `/dev/null` itself with a regular
//! file when pmlab ran as root.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// `path` with `suffix` appended to its file name.
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Checks before any long work that output `path` (given as `flag`) can be created: its
/// directory must exist.
pub fn check_parent_dir(flag: &str, path: &Path) -> Result<(), String> {
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(d) if !d.is_dir() => Err(format!(
            "{flag} {}: no directory {}",
            path.display(),
            d.display()
        )),
        _ => Ok(()),
    }
}

/// Checks before any work that output `out` (given as `flag`) is none of the `inputs` (the same
/// file under any name: a symbolic link, a hard link, `./x` for `x`). The output is renamed
/// over its target when complete, so naming an input there (`pmlab sim --trace t.pmt --json
/// t.pmt`) replaced the input with the output once the run had read it.
pub fn check_not_input(flag: &str, out: &Path, inputs: &[&Path]) -> Result<(), String> {
    match input_named_by(out, inputs) {
        Some(i) => Err(format!(
            "{flag} {}: is the input {} (the output would replace it)",
            out.display(),
            i.display()
        )),
        None => Ok(()),
    }
}

/// The input among `inputs` that output `out` would replace (see [`check_not_input`]).
pub fn input_named_by<'a>(out: &Path, inputs: &[&'a Path]) -> Option<&'a Path> {
    use std::os::unix::fs::MetadataExt;
    // An output that does not exist yet is no existing input; one that is not a regular file
    // (`/dev/stdout`, a FIFO) is written through, not replaced.
    let o = std::fs::metadata(out).ok().filter(|m| m.is_file())?;
    let same =
        |i: &&&Path| std::fs::metadata(i).is_ok_and(|m| m.dev() == o.dev() && m.ino() == o.ino());
    inputs.iter().find(same).copied()
}

/// This machine's name (for host timing and temporary file names).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| {
            h.trim().replace(
                |c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '.',
                "_",
            )
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into())
}

/// The temporary name beside `path`: host name and pid keep writers on different machines of
/// a shared filesystem apart, and the process's start time (ns) containers that share a host
/// name and number their processes alike (each its pid 1, say).
fn temp_path(path: &Path) -> PathBuf {
    static STAMP: std::sync::OnceLock<u128> = std::sync::OnceLock::new();
    let stamp = STAMP.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    });
    with_suffix(
        path,
        &format!(".tmp-{}-{}-{stamp:x}", host_name(), std::process::id()),
    )
}

/// Where an output named `path` goes (see the module docs).
enum Target {
    /// Replace this regular file (which may not exist yet) through a temporary file beside it.
    Replace(PathBuf),
    /// Write through to the named device, FIFO or descriptor.
    Through,
}

/// Whether `p` lies under `/dev` or `/proc` once its directory's links are resolved (where no
/// file can be created beside it).
pub fn in_device_tree(p: &Path) -> bool {
    let dir = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::canonicalize(dir)
        .map(|d| d.starts_with("/dev") || d.starts_with("/proc"))
        .unwrap_or(false)
}

fn target(path: &Path) -> Target {
    if in_device_tree(path) {
        return Target::Through;
    }
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() && !m.is_dir() => Target::Through,
        _ => match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(path) {
                Ok(real) if in_device_tree(&real) => Target::Through,
                Ok(real) => Target::Replace(real),
                // A dangling link: its target is created, the link kept.
                Err(_) => std::fs::read_link(path)
                    .map(|t| match path.parent() {
                        Some(d) if t.is_relative() => Target::Replace(d.join(t)),
                        _ => Target::Replace(t),
                    })
                    .unwrap_or_else(|_| Target::Replace(path.to_path_buf())),
            },
            _ => Target::Replace(path.to_path_buf()),
        },
    }
}

/// Writes `text` to `path` atomically; errors name the path.
pub fn write_atomic(path: &Path, text: &str) -> Result<(), String> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(text.as_bytes())
        .map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
    f.commit()
}

/// A file being written atomically: [`commit`](Self::commit) puts it in place; dropping it
/// uncommitted removes the temporary file.
pub struct AtomicFile {
    /// The name given (for messages).
    path: PathBuf,
    /// The regular file to replace and its temporary file; `None` when written through.
    replace: Option<(PathBuf, PathBuf)>,
    file: Option<BufWriter<File>>,
    /// Removes the temporary file if pmlab is interrupted meanwhile.
    _interrupt: Option<crate::signals::TempGuard>,
}

impl AtomicFile {
    /// Starts writing `path` (through a temporary file beside the regular file it names).
    pub fn create(path: &Path) -> Result<AtomicFile, String> {
        let err = |e: std::io::Error| format!("{}: cannot write: {e}", path.display());
        let (replace, f, guard) = match target(path) {
            // Found now, not when the finished file is renamed over it (after the work).
            Target::Replace(real) if real.is_dir() => {
                return Err(format!("{}: cannot write: is a directory", path.display()))
            }
            Target::Replace(real) => {
                let tmp = temp_path(&real);
                let f = File::create(&tmp).map_err(err)?;
                let guard = crate::signals::remove_on_interrupt(&tmp);
                (Some((real, tmp)), f, Some(guard))
            }
            Target::Through => {
                let f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(path)
                    .map_err(err)?;
                (None, f, None)
            }
        };
        Ok(AtomicFile {
            path: path.to_path_buf(),
            replace,
            file: Some(BufWriter::with_capacity(1 << 20, f)),
            _interrupt: guard,
        })
    }

    /// Flushes, syncs and renames the file into place (only flushes one written through).
    pub fn commit(mut self) -> Result<(), String> {
        let w = self.file.take().expect("not yet committed");
        let result = match &self.replace {
            Some((real, tmp)) => {
                let r = w
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .and_then(|f| f.sync_all())
                    .and_then(|()| std::fs::rename(tmp, real));
                if r.is_err() {
                    let _ = std::fs::remove_file(tmp);
                }
                r
            }
            None => w.into_inner().map(drop).map_err(|e| e.into_error()),
        };
        result.map_err(|e| format!("{}: cannot write: {e}", self.path.display()))
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.as_mut().expect("not yet committed").write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().expect("not yet committed").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let (Some(_), Some((_, tmp))) = (self.file.take(), &self.replace) {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_replaces_and_drop_leaves_the_old_file() {
        let dir = std::env::temp_dir().join(format!("pmlab-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("out.txt");
        write_atomic(&p, "old").unwrap();
        {
            let mut f = AtomicFile::create(&p).unwrap();
            f.write_all(b"partial").unwrap();
            // Dropped without commit: an interrupted writer.
        }
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        let mut f = AtomicFile::create(&p).unwrap();
        f.write_all(b"new").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A directory is refused when the file is created, not when it is renamed into place
    /// (after all the work of writing it).
    #[test]
    fn a_directory_is_refused_at_create() {
        let dir = std::env::temp_dir().join(format!("pmlab-atomic-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("out.csv")).unwrap();
        let e = AtomicFile::create(&dir.join("out.csv")).err().unwrap();
        assert!(e.contains("is a directory"), "{e}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A link is followed (its file replaced, the link kept, a dangling one's target created);
    /// a FIFO is written through, not replaced by a regular file (as `/dev/null` once was).
    #[test]
    fn links_are_followed_and_fifos_written_through() {
        let dir = std::env::temp_dir().join(format!("pmlab-atomic-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let real = dir.join("real.json");
        let link = dir.join("link.json");
        std::fs::write(&real, "old").unwrap();
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        write_atomic(&link, "new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        let dangling = dir.join("dangling.json");
        std::os::unix::fs::symlink("made.json", &dangling).unwrap();
        write_atomic(&dangling, "made").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("made.json")).unwrap(),
            "made"
        );
        let fifo = dir.join("fifo");
        let ok = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            let reader = {
                let fifo = fifo.clone();
                std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
            };
            write_atomic(&fifo, "through").unwrap();
            // (Checked before joining: a FIFO replaced by a file leaves the reader blocked.)
            assert!(
                !std::fs::metadata(&fifo).unwrap().is_file(),
                "FIFO replaced"
            );
            assert_eq!(reader.join().unwrap(), "through");
        }
        // Devices are decided on, not written here (a regression would replace /dev/null).
        assert!(matches!(target(Path::new("/dev/null")), Target::Through));
        assert!(matches!(target(Path::new("/dev/stdout")), Target::Through));
        assert!(matches!(target(&real), Target::Replace(_)));
        let left = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(
            left,
            if ok { 5 } else { 4 },
            "no temporary file is left behind"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
