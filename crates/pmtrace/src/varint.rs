//! LEB128 varints and zigzag mapping used by the `.pmt` record encoding.
//!
//! Encoders write into a caller-provided array (no allocation); decoders read from a slice with
//! every access bounds-checked and reject over-long encodings, so untrusted input cannot panic
//! or overflow them.

/// Longest LEB128 encoding of a `u64`.
pub(crate) const MAX_VARINT_BYTES: usize = 10;

/// Maps a signed delta to an unsigned value with small magnitudes near zero.
#[inline]
pub(crate) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline]
pub(crate) fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Writes `v` at `buf[pos..]`, returning the new position. `buf` must have
/// [`MAX_VARINT_BYTES`] free bytes at `pos` (callers size their scratch buffers for this).
#[inline]
pub(crate) fn put(buf: &mut [u8], mut pos: usize, mut v: u64) -> usize {
    while v >= 0x80 {
        buf[pos] = (v as u8) | 0x80;
        v >>= 7;
        pos += 1;
    }
    buf[pos] = v as u8;
    pos + 1
}

/// Why a varint could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VarintError {
    /// The slice ended inside the varint.
    Truncated,
    /// More than 10 bytes, or a 10th byte with bits beyond 64.
    Overlong,
}

/// Reads a varint at `buf[*pos..]`, advancing `pos`.
#[inline]
pub(crate) fn get(buf: &[u8], pos: &mut usize) -> Result<u64, VarintError> {
    // Fast path: one byte.
    let first = match buf.get(*pos) {
        Some(&b) => b,
        None => return Err(VarintError::Truncated),
    };
    if first < 0x80 {
        *pos += 1;
        return Ok(first as u64);
    }
    let mut result = (first & 0x7f) as u64;
    let mut shift = 7u32;
    let mut i = *pos + 1;
    loop {
        let b = match buf.get(i) {
            Some(&b) => b,
            None => return Err(VarintError::Truncated),
        };
        i += 1;
        if shift == 63 {
            // 10th byte: only the lowest bit fits in a u64, and it must end the varint.
            if b > 1 {
                return Err(VarintError::Overlong);
            }
            result |= (b as u64) << 63;
            *pos = i;
            return Ok(result);
        }
        result |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            *pos = i;
            return Ok(result);
        }
        shift += 7;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_edges() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            u32::MAX as u64,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut buf = [0u8; MAX_VARINT_BYTES];
            let n = put(&mut buf, 0, v);
            let mut pos = 0;
            assert_eq!(get(&buf[..n], &mut pos), Ok(v));
            assert_eq!(pos, n);
            // Every proper prefix is truncated.
            for cut in 0..n {
                let mut pos = 0;
                assert_eq!(get(&buf[..cut], &mut pos), Err(VarintError::Truncated));
            }
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }

    #[test]
    fn overlong_rejected() {
        let buf = [0xffu8; 11];
        let mut pos = 0;
        assert_eq!(get(&buf, &mut pos), Err(VarintError::Overlong));
        let mut buf = [0x80u8; 10];
        buf[9] = 0x02;
        let mut pos = 0;
        assert_eq!(get(&buf, &mut pos), Err(VarintError::Overlong));
    }
}
