//! The `aws-chunked` body encoding: chunk framing, the chain of chunk
//! signatures, and trailing headers (signed or not).
//! (<https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming.html>,
//! <https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming-trailers.html>)
//!
//! The decoder is push-based and never buffers chunk data: data bytes are
//! passed on as slices of the input while their hash accumulates, and each
//! chunk's signature is checked when its closing CRLF arrives.

use bytes::{Buf, Bytes, BytesMut};
use sha2::{Digest, Sha256};

use super::sigv4::{self, EMPTY_SHA256};
use crate::error::S3Error;

/// Longest chunk header or trailer line accepted.
const MAX_LINE: usize = 4096;
/// Most trailing headers accepted.
const MAX_TRAILERS: usize = 16;

/// Verifies the chain of chunk signatures of one request.
#[derive(Clone)]
pub struct ChunkSigner {
    key: [u8; 32],
    amz_date: String,
    scope: String,
    previous: String,
}

impl std::fmt::Debug for ChunkSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkSigner")
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl ChunkSigner {
    /// Starts a chain from the request's (seed) signature.
    pub fn new(key: [u8; 32], amz_date: String, scope: String, seed: String) -> ChunkSigner {
        ChunkSigner {
            key,
            amz_date,
            scope,
            previous: seed,
        }
    }

    fn expect(&mut self, kind: &str, hash_hex: &str, provided: &str) -> Result<(), S3Error> {
        let sts = match kind {
            "PAYLOAD" => format!(
                "AWS4-HMAC-SHA256-PAYLOAD\n{}\n{}\n{}\n{EMPTY_SHA256}\n{hash_hex}",
                self.amz_date, self.scope, self.previous
            ),
            _ => format!(
                "AWS4-HMAC-SHA256-TRAILER\n{}\n{}\n{}\n{hash_hex}",
                self.amz_date, self.scope, self.previous
            ),
        };
        let ours = sigv4::sign(&self.key, &sts);
        if !sigv4::signatures_equal(&ours, provided) {
            return Err(S3Error::SignatureDoesNotMatch {
                string_to_sign: sts,
                canonical_request: String::new(),
            });
        }
        self.previous = ours;
        Ok(())
    }

    /// Checks the signature of a chunk whose data hashes to `hash_hex`.
    pub fn chunk(&mut self, hash_hex: &str, provided: &str) -> Result<(), S3Error> {
        self.expect("PAYLOAD", hash_hex, provided)
    }

    /// Checks the trailer signature over the canonical trailer block.
    pub fn trailer(&mut self, canonical: &[u8], provided: &str) -> Result<(), S3Error> {
        self.expect("TRAILER", &sigv4::sha256_hex(canonical), provided)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Header,
    Data(u64),
    DataEnd,
    Trailers,
    Done,
}

/// Decodes an `aws-chunked` body.
pub struct ChunkedDecoder {
    signer: Option<ChunkSigner>,
    state: State,
    line: BytesMut,
    hasher: Option<Sha256>,
    chunk_signature: Option<String>,
    trailers: Vec<(String, String)>,
    trailer_signature: Option<String>,
    trailer_canonical: Vec<u8>,
    decoded: u64,
}

fn framing(msg: &str) -> S3Error {
    S3Error::IncompleteBody(format!(
        "The request body is not valid aws-chunked encoding: {msg}"
    ))
}

impl ChunkedDecoder {
    /// A decoder; with a signer, every chunk (and the trailer) must be signed.
    pub fn new(signer: Option<ChunkSigner>) -> ChunkedDecoder {
        ChunkedDecoder {
            signer,
            state: State::Header,
            line: BytesMut::new(),
            hasher: None,
            chunk_signature: None,
            trailers: Vec::new(),
            trailer_signature: None,
            trailer_canonical: Vec::new(),
            decoded: 0,
        }
    }

    /// Bytes of data decoded so far.
    pub fn decoded(&self) -> u64 {
        self.decoded
    }

    /// Feeds encoded bytes; decoded data slices are appended to `out`.
    pub fn push(&mut self, mut input: Bytes, out: &mut Vec<Bytes>) -> Result<(), S3Error> {
        while !input.is_empty() {
            match self.state {
                State::Data(remaining) => {
                    let n = (remaining as usize).min(input.len());
                    let d = input.split_to(n);
                    if let Some(h) = &mut self.hasher {
                        h.update(&d);
                    }
                    self.decoded += n as u64;
                    out.push(d);
                    self.state = if remaining as usize == n {
                        State::DataEnd
                    } else {
                        State::Data(remaining - n as u64)
                    };
                }
                State::Done => {
                    if input.iter().all(|b| b.is_ascii_whitespace()) {
                        return Ok(());
                    }
                    return Err(framing("data after the final chunk"));
                }
                _ => match input.iter().position(|&b| b == b'\n') {
                    // A line's length is judged whole, however it arrived.
                    Some(i) if self.line.len() + i > MAX_LINE => {
                        return Err(framing("header line too long"));
                    }
                    Some(i) => {
                        self.line.extend_from_slice(&input[..=i]);
                        input.advance(i + 1);
                        let line = std::mem::take(&mut self.line);
                        self.on_line(&line)?;
                    }
                    None => {
                        self.line.extend_from_slice(&input);
                        input.clear();
                    }
                },
            }
            if self.line.len() > MAX_LINE {
                return Err(framing("header line too long"));
            }
        }
        Ok(())
    }

    fn on_line(&mut self, line: &[u8]) -> Result<(), S3Error> {
        let line = line
            .strip_suffix(b"\r\n")
            .ok_or_else(|| framing("line not terminated by CRLF"))?;
        match self.state {
            State::DataEnd => {
                if !line.is_empty() {
                    return Err(framing("chunk data longer than its declared size"));
                }
                let hash =
                    hex::encode(self.hasher.take().map(|h| h.finalize()).unwrap_or_default());
                self.verify_chunk(&hash)?;
                self.state = State::Header;
            }
            State::Header => {
                let text =
                    std::str::from_utf8(line).map_err(|_| framing("chunk header is not text"))?;
                let (size, ext) = text.split_once(';').unwrap_or((text, ""));
                let size =
                    u64::from_str_radix(size.trim(), 16).map_err(|_| framing("bad chunk size"))?;
                self.chunk_signature = ext
                    .trim()
                    .strip_prefix("chunk-signature=")
                    .map(str::to_string);
                if self.signer.is_some() && self.chunk_signature.is_none() {
                    return Err(framing("chunk without chunk-signature"));
                }
                if size == 0 {
                    self.verify_chunk(EMPTY_SHA256)?;
                    self.state = State::Trailers;
                } else {
                    self.hasher = self.signer.is_some().then(Sha256::new);
                    self.state = State::Data(size);
                }
            }
            State::Trailers => {
                if line.is_empty() {
                    if let Some(signer) = &mut self.signer {
                        if !self.trailers.is_empty() || self.trailer_signature.is_some() {
                            let provided = self.trailer_signature.take().ok_or_else(|| {
                                framing("signed trailer without x-amz-trailer-signature")
                            })?;
                            signer.trailer(&self.trailer_canonical, &provided)?;
                        }
                    }
                    self.state = State::Done;
                    return Ok(());
                }
                let text = std::str::from_utf8(line).map_err(|_| framing("trailer is not text"))?;
                let (name, value) = text
                    .split_once(':')
                    .ok_or_else(|| framing("bad trailer line"))?;
                let name = name.trim().to_ascii_lowercase();
                let value = value.trim().to_string();
                if name == "x-amz-trailer-signature" {
                    self.trailer_signature = Some(value);
                } else {
                    if self.trailers.len() >= MAX_TRAILERS {
                        return Err(framing("too many trailers"));
                    }
                    self.trailer_canonical
                        .extend_from_slice(format!("{name}:{value}\n").as_bytes());
                    self.trailers.push((name, value));
                }
            }
            State::Data(_) | State::Done => unreachable!("not line-oriented"),
        }
        Ok(())
    }

    fn verify_chunk(&mut self, hash_hex: &str) -> Result<(), S3Error> {
        if let Some(signer) = &mut self.signer {
            let provided = self.chunk_signature.take().unwrap_or_default();
            signer.chunk(hash_hex, &provided)?;
        }
        Ok(())
    }

    /// Ends the body: fails unless the final chunk and trailers arrived.
    /// Returns the trailing headers (lower-case names).
    pub fn finish(&mut self) -> Result<Vec<(String, String)>, S3Error> {
        if self.state != State::Done {
            return Err(S3Error::IncompleteBody(
                "The request body ended before the final aws-chunked chunk".into(),
            ));
        }
        Ok(std::mem::take(&mut self.trailers))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::sigv4::{signing_key, Scope};

    fn example_signer(seed: &str) -> ChunkSigner {
        let scope = Scope {
            date: "20130524".into(),
            region: "us-east-1".into(),
            service: "s3".into(),
        };
        ChunkSigner::new(
            signing_key("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", &scope),
            "20130524T000000Z".into(),
            scope.to_scope_string(),
            seed.into(),
        )
    }

    fn body(sigs: [&str; 3], trailer: &str) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(format!("10000;chunk-signature={}\r\n", sigs[0]).as_bytes());
        b.extend_from_slice(&[b'a'; 65536]);
        b.extend_from_slice(format!("\r\n400;chunk-signature={}\r\n", sigs[1]).as_bytes());
        b.extend_from_slice(&[b'a'; 1024]);
        b.extend_from_slice(format!("\r\n0;chunk-signature={}\r\n", sigs[2]).as_bytes());
        b.extend_from_slice(trailer.as_bytes());
        b.extend_from_slice(b"\r\n");
        b
    }

    const SIGNED: [&str; 3] = [
        "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
        "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
        "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
    ];
    const SEED: &str = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
    const TRAILER_SIGNED: [&str; 3] = [
        "b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
        "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
        "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992",
    ];
    const TRAILER_SEED: &str = "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e";
    const TRAILER: &str = "x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n";

    fn decode(d: &mut ChunkedDecoder, input: &[u8], step: usize) -> Result<Vec<u8>, S3Error> {
        let mut out = Vec::new();
        for piece in input.chunks(step) {
            let mut parts = Vec::new();
            d.push(Bytes::copy_from_slice(piece), &mut parts)?;
            for p in parts {
                out.extend_from_slice(&p);
            }
        }
        Ok(out)
    }

    #[test]
    fn aws_signed_chunk_example_decodes_in_any_split() {
        let b = body(SIGNED, "");
        assert_eq!(b.len(), 66_824, "the documented Content-Length");
        for step in [1, 7, 8192, b.len()] {
            let mut d = ChunkedDecoder::new(Some(example_signer(SEED)));
            let out = decode(&mut d, &b, step).unwrap();
            assert_eq!(out, vec![b'a'; 66_560]);
            assert!(d.finish().unwrap().is_empty());
        }
    }

    #[test]
    fn aws_signed_trailer_example() {
        let b = body(TRAILER_SIGNED, TRAILER);
        let mut d = ChunkedDecoder::new(Some(example_signer(TRAILER_SEED)));
        assert_eq!(decode(&mut d, &b, 1000).unwrap().len(), 66_560);
        assert_eq!(
            d.finish().unwrap(),
            vec![("x-amz-checksum-crc32c".to_string(), "sOO8/Q==".to_string())]
        );
        // A changed trailer value breaks the trailer signature.
        let b = body(TRAILER_SIGNED, &TRAILER.replace("sOO8", "AAA8"));
        let mut d = ChunkedDecoder::new(Some(example_signer(TRAILER_SEED)));
        assert!(matches!(
            decode(&mut d, &b, 1000),
            Err(S3Error::SignatureDoesNotMatch { .. })
        ));
    }

    #[test]
    fn tampered_data_or_signature_is_refused() {
        let mut b = body(SIGNED, "");
        b[100] = b'b';
        let mut d = ChunkedDecoder::new(Some(example_signer(SEED)));
        assert!(matches!(
            decode(&mut d, &b, 4096),
            Err(S3Error::SignatureDoesNotMatch { .. })
        ));
        let mut sigs = SIGNED;
        sigs[2] = SIGNED[1];
        let mut d = ChunkedDecoder::new(Some(example_signer(SEED)));
        assert!(matches!(
            decode(&mut d, &body(sigs, ""), 4096),
            Err(S3Error::SignatureDoesNotMatch { .. })
        ));
    }

    /// A line longer than MAX_LINE was refused when it arrived in pieces
    /// and taken when it arrived whole (found by the aws_chunked fuzz
    /// target's cut-anywhere check): it is refused both ways.
    #[test]
    fn an_overlong_line_is_refused_however_it_arrives() {
        let long = format!(
            "3\r\nabc\r\n0\r\nx-amz-checksum-crc32:{}\r\n\r\n",
            "A".repeat(MAX_LINE)
        );
        for step in [1, 100, long.len()] {
            let mut d = ChunkedDecoder::new(None);
            let r = decode(&mut d, long.as_bytes(), step).and_then(|_| d.finish().map(drop));
            assert!(
                matches!(r, Err(S3Error::IncompleteBody(_))),
                "step {step}: {r:?}"
            );
        }
    }

    #[test]
    fn unsigned_trailer_and_truncation() {
        let b = b"3\r\nabc\r\n0\r\nx-amz-checksum-crc32:NSRBwg==\r\n\r\n";
        let mut d = ChunkedDecoder::new(None);
        assert_eq!(decode(&mut d, b, 2).unwrap(), b"abc");
        assert_eq!(d.finish().unwrap()[0].1, "NSRBwg==");
        let mut d = ChunkedDecoder::new(None);
        decode(&mut d, &b[..10], 3).unwrap();
        assert!(matches!(d.finish(), Err(S3Error::IncompleteBody(_))));
        let mut d = ChunkedDecoder::new(None);
        assert!(decode(&mut d, b"zz\r\n", 10).is_err());
        let mut d = ChunkedDecoder::new(None);
        assert!(decode(&mut d, b"3\r\nabcd\r\n", 10).is_err());
    }
}
