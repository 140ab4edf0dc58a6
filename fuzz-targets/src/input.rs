//! Shapes the targets read their input as: an HTTP request written as
//! text (`METHOD URI` on the first line, then `name: value` lines), and
//! the points at which a stream is cut into pieces.

use arbitrary::Unstructured;
use http::request::Parts;

/// The request `text` describes, or `None` when its method, URI or a
/// header name cannot be one (header values are taken as bytes, so values
/// that are not text reach the parsers too).
pub fn request(text: &[u8]) -> Option<Parts> {
    let mut lines = text.split(|&b| b == b'\n');
    let first = std::str::from_utf8(lines.next()?).ok()?;
    let (method, uri) = first.trim_end_matches('\r').split_once(' ')?;
    let mut b = http::Request::builder().method(method).uri(uri);
    for line in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let at = line.iter().position(|&b| b == b':')?;
        let name = http::HeaderName::from_bytes(&line[..at]).ok()?;
        let value = line[at + 1..].strip_prefix(b" ").unwrap_or(&line[at + 1..]);
        let value = http::HeaderValue::from_bytes(value).ok()?;
        b = b.header(name, value);
    }
    Some(b.body(()).ok()?.into_parts().0)
}

/// The text form of `parts` that [`request`] reads back (for seeds).
pub fn request_text(parts: &Parts) -> Vec<u8> {
    let mut out = format!("{} {}\n", parts.method, parts.uri).into_bytes();
    for (name, value) in &parts.headers {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.push(b'\n');
    }
    out
}

/// `bytes` cut at points drawn from `u` (at least one piece; empty
/// pieces are kept, as a network may deliver them).
pub fn pieces<'a>(u: &mut Unstructured<'_>, bytes: &'a [u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let n = match u.int_in_range(0..=rest.len()) {
            Ok(n) if !u.is_empty() => n,
            _ => rest.len(),
        };
        let (a, b) = rest.split_at(n);
        out.push(a);
        rest = b;
    }
    if out.is_empty() {
        out.push(rest);
    }
    out
}
