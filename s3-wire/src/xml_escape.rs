//! The one escaper of XML text in responses: markup characters as
//! entities, control characters as numeric references. Knows nothing of
//! S3's documents.

/// Appends `text` as XML character data: the five markup characters as
/// entities, and every control character as a numeric reference, so that
/// no key is changed by a parser. CR and LF come back exactly (`&#13;`,
/// `&#10;`: XML's end-of-line handling would fold a raw CR into LF, as S3
/// warns for keys). The other controls below 0x20 cannot be in an XML 1.0
/// document at all, raw or as references; they are written as references
/// (`&#0;`), which lenient parsers accept and strict ones refuse; clients
/// that list such keys ask `encoding-type=url`, as the aws CLI and boto3
/// always do.
pub fn push_escaped(out: &mut String, text: &str) {
    push_where(out, text, |b| {
        matches!(b, b'<' | b'>' | b'&' | b'"' | b'\'') || control(b)
    });
}

/// [`push_escaped`] for text whose markup characters are escaped already.
pub(crate) fn push_controls(out: &mut String, text: &str) {
    push_where(out, text, control);
}

/// A control character written as a reference (tab stays as it is).
fn control(b: u8) -> bool {
    b < 0x20 && b != b'\t'
}

/// Appends `text` with the bytes `special` picks replaced by
/// [`push_special`]. A byte scan: every byte picked is ASCII, so it never
/// occurs inside a multi-byte character and every split is at a boundary.
fn push_where(out: &mut String, text: &str, special: impl Fn(u8) -> bool) {
    let mut rest = text;
    while let Some(i) = rest.bytes().position(&special) {
        out.push_str(&rest[..i]);
        push_special(out, rest.as_bytes()[i]);
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
}

fn push_special(out: &mut String, b: u8) {
    match b {
        b'<' => out.push_str("&lt;"),
        b'>' => out.push_str("&gt;"),
        b'&' => out.push_str("&amp;"),
        b'"' => out.push_str("&quot;"),
        b'\'' => out.push_str("&apos;"),
        c => {
            use std::fmt::Write as _;
            let _ = write!(out, "&#{c};");
        }
    }
}

/// [`push_escaped`] into a new string.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_escaped(&mut out, text);
    out
}
