//! Standard output that cannot be written ends pmlab as Unix tools end: closed by a reader
//! (`pmlab trace stats x.pmt | head`) it ends quietly on SIGPIPE; any other failure (a full disk
//! behind `> /dev/full`) is one line on standard error and exit status 1, not a panic.

/// Sets both up; called first thing in `main`.
pub fn install() {
    default_sigpipe();
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        // `println!`'s own message when the write fails.
        if let Some(err) = msg.strip_prefix("failed printing to stdout: ") {
            eprintln!("pmlab: cannot write to standard output: {err}");
            std::process::exit(1);
        }
        default(info);
    }));
}

/// Restores the default action of SIGPIPE, which Rust's runtime ignores (so that a write to a
/// closed pipe would fail and panic in `println!` instead).
#[cfg(target_os = "linux")]
fn default_sigpipe() {
    extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
    }
    const SIGPIPE: i32 = 13;
    const SIG_DFL: usize = 0;
    // SAFETY: signal(2) from the C library pmlab links anyway, called before any other thread
    // exists, with the default disposition (no handler code runs in Rust).
    unsafe {
        signal(SIGPIPE, SIG_DFL);
    }
}

#[cfg(not(target_os = "linux"))]
fn default_sigpipe() {}
