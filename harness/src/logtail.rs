//! A rolling tail of a worker's log: the last bytes, cut on a UTF-8 boundary, with a
//! truncation marker. Its memory stays bounded however much is logged.

use std::collections::VecDeque;

/// The default capacity: the last 8 KiB.
pub(crate) const DEFAULT_TAIL_BYTES: usize = 8 * 1024;

/// The marker put in front of a tail that lost its beginning.
pub(crate) const TRUNCATION_MARKER: &str = "[… earlier log truncated …]\n";

/// The last `capacity` bytes written, and how many were dropped before them.
#[derive(Clone, Debug)]
pub(crate) struct LogTail {
    buf: VecDeque<u8>,
    capacity: usize,
    dropped: u64,
}

impl Default for LogTail {
    fn default() -> Self {
        LogTail::new(DEFAULT_TAIL_BYTES)
    }
}

impl LogTail {
    /// A tail that keeps the last `capacity` bytes.
    pub(crate) fn new(capacity: usize) -> Self {
        LogTail {
            buf: VecDeque::with_capacity(capacity.min(DEFAULT_TAIL_BYTES)),
            capacity,
            dropped: 0,
        }
    }

    /// Appends bytes, dropping the oldest beyond the capacity.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        let keep = &bytes[bytes.len().saturating_sub(self.capacity)..];
        self.dropped += (bytes.len() - keep.len()) as u64;
        let overflow = (self.buf.len() + keep.len()).saturating_sub(self.capacity);
        self.buf.drain(..overflow);
        self.dropped += overflow as u64;
        self.buf.extend(keep);
    }

    /// Appends one line.
    pub(crate) fn line(&mut self, line: &str) {
        self.push(line.as_bytes());
        self.push(b"\n");
    }

    /// The tail as text: starts on a UTF-8 boundary (a character cut in half at the front is
    /// dropped), prefixed by [`TRUNCATION_MARKER`] when anything was dropped.
    pub(crate) fn text(&self) -> String {
        let (a, b) = self.buf.as_slices();
        let mut bytes = Vec::with_capacity(a.len() + b.len());
        bytes.extend_from_slice(a);
        bytes.extend_from_slice(b);
        let mut start = 0;
        // Skip continuation bytes (0b10xx_xxxx) of a character whose head was dropped.
        while start < bytes.len() && start < 4 && (bytes[start] & 0xC0) == 0x80 {
            start += 1;
        }
        let body = String::from_utf8_lossy(&bytes[start..]).into_owned();
        if self.dropped > 0 || start > 0 {
            format!("{TRUNCATION_MARKER}{body}")
        } else {
            body
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_everything_below_the_capacity() {
        let mut tail = LogTail::new(64);
        tail.line("hello");
        assert_eq!(tail.text(), "hello\n");
        assert_eq!(tail.dropped, 0);
    }

    #[test]
    fn keeps_only_the_last_bytes_and_marks_the_truncation() {
        let mut tail = LogTail::new(8);
        tail.push(b"0123456789abcdef");
        assert_eq!(tail.buf.len(), 8);
        assert_eq!(tail.text(), format!("{TRUNCATION_MARKER}89abcdef"));
        tail.push(b"XY");
        assert_eq!(tail.text(), format!("{TRUNCATION_MARKER}abcdefXY"));
        assert_eq!(tail.dropped, 10);
    }

    #[test]
    fn cuts_on_a_utf8_boundary() {
        let mut tail = LogTail::new(5);
        tail.push("aé€".as_bytes()); // 1 + 2 + 3 bytes: the first byte of 'é'... is dropped
        let text = tail.text();
        assert!(text.starts_with(TRUNCATION_MARKER));
        assert!(text.ends_with('€'));
        assert!(
            !text.contains('\u{FFFD}'),
            "no replacement character: {text:?}"
        );
    }

    #[test]
    fn memory_stays_bounded_however_much_is_logged() {
        let mut tail = LogTail::new(DEFAULT_TAIL_BYTES);
        let line = "x".repeat(1000);
        for _ in 0..10_000 {
            tail.line(&line);
        }
        assert_eq!(tail.buf.len(), DEFAULT_TAIL_BYTES);
        assert!(tail.buf.capacity() <= 2 * DEFAULT_TAIL_BYTES);
    }
}
