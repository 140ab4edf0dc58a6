//! The `Range` request header, as S3 applies it: one byte range; a header
//! S3 would ignore (wrong unit, several ranges, bad syntax) is ignored.
//! (<https://www.rfc-editor.org/rfc/rfc9110#name-range>)

use std::ops::Range;

use crate::error::{S3Error, S3Result};

/// A parsed byte range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteRange {
    /// `bytes=first-` or `bytes=first-last`.
    From {
        /// First byte.
        first: u64,
        /// Last byte (inclusive), if given.
        last: Option<u64>,
    },
    /// `bytes=-n`: the last n bytes.
    Suffix(u64),
}

/// Parses a `Range` header; `None` means "ignore the header".
pub fn parse(header: &str) -> Option<ByteRange> {
    let spec = header.trim().strip_prefix("bytes=")?.trim();
    if spec.contains(',') {
        return None;
    }
    let (a, b) = spec.split_once('-')?;
    let (a, b) = (a.trim(), b.trim());
    if a.is_empty() {
        return Some(ByteRange::Suffix(b.parse().ok()?));
    }
    let first = a.parse().ok()?;
    let last = if b.is_empty() {
        None
    } else {
        Some(b.parse().ok()?)
    };
    if last.is_some_and(|l| l < first) {
        return None;
    }
    Some(ByteRange::From { first, last })
}

impl ByteRange {
    /// The half-open range of an object of `size` bytes, or InvalidRange.
    pub fn resolve(self, size: u64) -> S3Result<Range<u64>> {
        match self {
            ByteRange::From { first, last } => {
                if first >= size {
                    return Err(S3Error::InvalidRange(size));
                }
                let end = last.map_or(size, |l| l.saturating_add(1).min(size));
                Ok(first..end)
            }
            ByteRange::Suffix(n) => {
                if n == 0 || size == 0 {
                    return Err(S3Error::InvalidRange(size));
                }
                Ok(size - n.min(size)..size)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn shapes() {
        assert_eq!(parse("bytes=0-9").unwrap().resolve(100).unwrap(), 0..10);
        assert_eq!(parse("bytes=90-").unwrap().resolve(100).unwrap(), 90..100);
        assert_eq!(parse("bytes=-10").unwrap().resolve(100).unwrap(), 90..100);
        assert_eq!(parse("bytes=-1000").unwrap().resolve(100).unwrap(), 0..100);
        assert_eq!(
            parse("bytes=50-5000").unwrap().resolve(100).unwrap(),
            50..100
        );
        assert!(matches!(
            parse("bytes=100-").unwrap().resolve(100),
            Err(S3Error::InvalidRange(100))
        ));
        assert!(matches!(
            parse("bytes=-0").unwrap().resolve(100),
            Err(S3Error::InvalidRange(_))
        ));
        assert!(matches!(
            parse("bytes=0-").unwrap().resolve(0),
            Err(S3Error::InvalidRange(0))
        ));
        for ignored in [
            "items=0-1",
            "bytes=0-1,3-4",
            "bytes=5-1",
            "bytes=a-b",
            "bytes=",
            "bytes=-",
        ] {
            assert_eq!(parse(ignored), None, "{ignored}");
        }
        assert_eq!(
            parse("bytes=18446744073709551615-")
                .unwrap()
                .resolve(10)
                .ok(),
            None
        );
    }

    proptest! {
        #[test]
        fn resolved_ranges_lie_within_the_object(first in 0u64..2000, len in 0u64..2000, size in 0u64..2000, suffix in any::<bool>()) {
            let r = if suffix { ByteRange::Suffix(len) } else { ByteRange::From { first, last: Some(first + len) } };
            if let Ok(range) = r.resolve(size) {
                prop_assert!(range.start < range.end && range.end <= size);
            }
        }

        #[test]
        fn parser_never_panics(s in "\\PC{0,40}") {
            let _ = parse(&s);
        }
    }
}
