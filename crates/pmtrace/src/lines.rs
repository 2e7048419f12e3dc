//! A line reader for the text parsers: bounded line length (no unbounded allocation on input
//! without newlines), 1-based line numbers, UTF-8 checking, `\r\n` tolerance.

use std::io::{self, BufRead};

use crate::error::{ErrorKind, Location, TraceError};

/// Longest line the text parsers accept, in bytes.
pub(crate) const MAX_LINE_BYTES: usize = 1 << 20;

pub(crate) struct LineReader<R: BufRead> {
    r: R,
    buf: Vec<u8>,
    line_no: u64,
}

impl<R: BufRead> LineReader<R> {
    pub(crate) fn new(r: R) -> Self {
        LineReader {
            r,
            buf: Vec::with_capacity(256),
            line_no: 0,
        }
    }

    /// 1-based number of the line most recently returned (0 before the first).
    pub(crate) fn line_no(&self) -> u64 {
        self.line_no
    }

    /// The next line without its terminator, with its 1-based number; `Ok(None)` at end of
    /// input.
    pub(crate) fn next_line(&mut self) -> Result<Option<(u64, &str)>, TraceError> {
        self.buf.clear();
        let mut saw_any = false;
        loop {
            let available = match self.r.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(TraceError::io(
                        "reading a line",
                        e,
                        Location::line(self.line_no + 1, ""),
                    ))
                }
            };
            if available.is_empty() {
                break;
            }
            saw_any = true;
            let (chunk, found_newline) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (&available[..i], true),
                None => (available, false),
            };
            if self.buf.len() + chunk.len() > MAX_LINE_BYTES {
                self.line_no += 1;
                let shown =
                    String::from_utf8_lossy(&self.buf[..self.buf.len().min(80)]).into_owned();
                return Err(TraceError::new(
                    ErrorKind::LineTooLong {
                        max: MAX_LINE_BYTES,
                    },
                    Location::line(self.line_no, &shown),
                ));
            }
            self.buf.extend_from_slice(chunk);
            let used = chunk.len() + usize::from(found_newline);
            self.r.consume(used);
            if found_newline {
                break;
            }
        }
        if !saw_any {
            return Ok(None);
        }
        self.line_no += 1;
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        if self.line_no == 1 && self.buf.starts_with(crate::detect::UTF8_BOM) {
            self.buf.drain(..crate::detect::UTF8_BOM.len());
        }
        if self.buf.is_ascii() {
            // SAFETY: ASCII is valid UTF-8.
            return Ok(Some((self.line_no, unsafe {
                std::str::from_utf8_unchecked(&self.buf)
            })));
        }
        match std::str::from_utf8(&self.buf) {
            Ok(s) => Ok(Some((self.line_no, s))),
            Err(_) => {
                let shown = String::from_utf8_lossy(&self.buf).into_owned();
                Err(TraceError::new(
                    ErrorKind::InvalidUtf8,
                    Location::line(self.line_no, &shown),
                ))
            }
        }
    }
}

impl<R: BufRead> LineReader<R> {
    /// Parses the next line with `parse` where it lies whole in the reader's buffer: `parse`
    /// gets the buffered bytes from the line's start and returns its value and the bytes it
    /// took, through the line's `\n`. The line then counts as read. `None` (nothing buffered,
    /// no whole line, an I/O error, or `parse` declined) reads nothing: the caller reads the
    /// line through [`next_record_line`](Self::next_record_line), which handles what the fast
    /// parsers leave to it (comments, blank lines, a line across a buffer refill, errors).
    #[inline]
    pub(crate) fn parse_buffered<T>(
        &mut self,
        parse: impl FnOnce(&[u8]) -> Option<(T, usize)>,
    ) -> Option<T> {
        // A line longer than the limit is the general reader's to refuse.
        let buffered = self.r.fill_buf().ok()?;
        let (value, used) = parse(&buffered[..buffered.len().min(MAX_LINE_BYTES + 1)])?;
        self.r.consume(used);
        self.line_no += 1;
        Some(value)
    }

    /// The line the last [`next_line`](Self::next_line) returned (after it returned one).
    pub(crate) fn current(&self) -> &str {
        // SAFETY: `next_line` validated the buffer as UTF-8 (it returns an error otherwise),
        // and nothing changed it since.
        unsafe { std::str::from_utf8_unchecked(&self.buf) }
    }

    /// The next line that is neither blank nor a whole-line `#` comment, with its 1-based
    /// number; `Ok(None)` at end of input.
    pub(crate) fn next_record_line(&mut self) -> Result<Option<(u64, &str)>, TraceError> {
        loop {
            let skip = match self.next_line()? {
                None => return Ok(None),
                Some((_, line)) => {
                    let t = line.trim_start();
                    t.is_empty() || t.starts_with('#')
                }
            };
            if !skip {
                break;
            }
        }
        // SAFETY: `next_line` has just validated the buffer as UTF-8 (it returns an error
        // otherwise), and nothing changed it since.
        let line = unsafe { std::str::from_utf8_unchecked(&self.buf) };
        Ok(Some((self.line_no, line)))
    }
}

/// The part of an event line before a `#` comment (no event syntax uses `#`).
pub(crate) fn strip_comment(line: &str) -> &str {
    match line.find('#') {
        Some(i) => &line[..i],
        None => line,
    }
}

/// Splits a line into at most `N` whitespace-separated tokens; `Err(n)` if there are more.
pub(crate) fn tokens<const N: usize>(line: &str) -> Result<([&str; N], usize), usize> {
    let mut out = [""; N];
    let mut n = 0;
    for tok in line.split_ascii_whitespace() {
        if n == N {
            return Err(n + 1);
        }
        out[n] = tok;
        n += 1;
    }
    Ok((out, n))
}

/// Parses hexadecimal digits, with or without a `0x`/`0X` prefix, into a `u64` (at most 64
/// digits, of which at most 16 significant). One pass: the text parsers call it per line.
pub(crate) fn parse_hex_u64(text: &str) -> Option<u64> {
    let digits = strip_hex_prefix(text).as_bytes();
    if digits.is_empty() || digits.len() > 64 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in digits {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return None,
        };
        if v >> 60 != 0 {
            return None; // a 17th significant digit
        }
        v = v << 4 | u64::from(d);
    }
    Some(v)
}

/// Parses a number: hexadecimal with a `0x` prefix, decimal otherwise.
pub(crate) fn parse_num_u64(text: &str) -> Option<u64> {
    if text.starts_with("0x") || text.starts_with("0X") {
        return parse_hex_u64(text);
    }
    if text.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &b in text.as_bytes() {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(v)
}

/// `text` without a leading `0x`/`0X`.
pub(crate) fn strip_hex_prefix(text: &str) -> &str {
    text.strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_numbers_and_crlf() {
        let mut r = LineReader::new(&b"a\r\nb\n\nc"[..]);
        assert_eq!(r.next_line().unwrap(), Some((1, "a")));
        assert_eq!(r.next_line().unwrap(), Some((2, "b")));
        assert_eq!(r.next_line().unwrap(), Some((3, "")));
        assert_eq!(r.next_line().unwrap(), Some((4, "c")));
        assert_eq!(r.line_no(), 4);
        assert_eq!(r.next_line().unwrap(), None);
    }

    #[test]
    fn long_line_rejected() {
        let data = vec![b'x'; MAX_LINE_BYTES + 10];
        let mut r = LineReader::new(std::io::BufReader::with_capacity(1000, &data[..]));
        let e = r.next_line().unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::LineTooLong { .. }));
        assert_eq!(e.line(), Some(1));
    }

    /// The one-pass parsers against the standard library on many generated strings.
    #[test]
    fn one_pass_number_parsers_agree_with_the_standard_library() {
        let reference_hex = |t: &str| -> Option<u64> {
            let d = t
                .strip_prefix("0x")
                .or_else(|| t.strip_prefix("0X"))
                .unwrap_or(t);
            if d.is_empty() || d.len() > 64 || !d.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            let sig = d.trim_start_matches('0');
            if sig.is_empty() {
                Some(0)
            } else {
                u64::from_str_radix(sig, 16).ok()
            }
        };
        let reference_dec = |t: &str| -> Option<u64> {
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                None
            } else {
                t.parse().ok()
            }
        };
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let alphabet = b"0123456789abcdefABCDEFxXg -+";
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 24) as usize;
            let mut t: String = (0..len)
                .map(|i| alphabet[((x >> (i % 58)) as usize + i * 7) % alphabet.len()] as char)
                .collect();
            if x & 0x300 == 0 {
                t.insert_str(0, "0x");
            }
            assert_eq!(parse_hex_u64(&t), reference_hex(&t), "{t:?}");
            let num_ref = if t.starts_with("0x") || t.starts_with("0X") {
                reference_hex(&t)
            } else {
                reference_dec(&t)
            };
            assert_eq!(parse_num_u64(&t), num_ref, "{t:?}");
        }
        for t in [
            "18446744073709551615",
            "18446744073709551616",
            "0xffffffffffffffff",
        ] {
            assert_eq!(parse_num_u64(t), t.parse().ok().or(reference_hex(t)), "{t}");
        }
    }

    #[test]
    fn hex_and_numbers() {
        assert_eq!(parse_hex_u64("0x10"), Some(16));
        assert_eq!(parse_hex_u64("ff"), Some(255));
        assert_eq!(parse_hex_u64("0x0000000000000000001"), Some(1));
        assert_eq!(parse_hex_u64("0x1ffffffffffffffff"), None);
        assert_eq!(parse_hex_u64("0x"), None);
        assert_eq!(parse_hex_u64("0xg"), None);
        assert_eq!(parse_num_u64("10"), Some(10));
        assert_eq!(parse_num_u64("0x10"), Some(16));
        assert_eq!(parse_num_u64("-1"), None);
        assert_eq!(parse_num_u64("+1"), None);
    }
}
