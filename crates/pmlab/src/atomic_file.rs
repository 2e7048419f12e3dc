//! Output files written atomically: the bytes go to a temporary file beside the target, which
//! is synced and renamed over it only when complete. A reader (or a shard merging at the same
//! moment) sees the old file or the new one, never a partial one; a writer that fails, or is
//! interrupted by SIGINT, SIGTERM or SIGHUP (`signals`), leaves no partial output behind (after
//! a SIGKILL or a crash, the temporary `NAME.tmp-HOST-PID` stays).

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
/// a shared filesystem apart.
fn temp_path(path: &Path) -> PathBuf {
    with_suffix(
        path,
        &format!(".tmp-{}-{}", host_name(), std::process::id()),
    )
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
    path: PathBuf,
    tmp: PathBuf,
    file: Option<BufWriter<File>>,
    /// Removes the temporary file if pmlab is interrupted meanwhile.
    _interrupt: crate::signals::TempGuard,
}

impl AtomicFile {
    /// Starts writing `path` (through a temporary file beside it).
    pub fn create(path: &Path) -> Result<AtomicFile, String> {
        let tmp = temp_path(path);
        let f = File::create(&tmp).map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            _interrupt: crate::signals::remove_on_interrupt(&tmp),
            tmp,
            file: Some(BufWriter::with_capacity(1 << 20, f)),
        })
    }

    /// Flushes, syncs and renames the file into place.
    pub fn commit(mut self) -> Result<(), String> {
        let w = self.file.take().expect("not yet committed");
        let result = w
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all())
            .and_then(|()| std::fs::rename(&self.tmp, &self.path));
        if result.is_err() {
            let _ = std::fs::remove_file(&self.tmp);
        }
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
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
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
}
