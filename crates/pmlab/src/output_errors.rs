//! Standard output that cannot be written (a full disk behind `> /dev/full`) is one line on
//! standard error and exit status 1, not a panic. (A reader that closed the pipe ends pmlab on
//! SIGPIPE: `signals`.)

/// Sets it up; called first thing in `main`.
pub fn install() {
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
