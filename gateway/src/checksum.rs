//! S3 flexible checksums: CRC32, CRC32C, CRC64NVME, SHA1, SHA256
//! (<https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html>).
//! Values travel base64-encoded, big-endian for the CRCs.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use crc_fast::CrcAlgorithm;
use sha1::Sha1;
use sha2::{Digest as _, Sha256};

use s3_wire::xml::ChecksumFields;

/// A checksum algorithm S3 supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChecksumAlgorithm {
    /// CRC-32 (ISO-HDLC).
    Crc32,
    /// CRC-32C (Castagnoli).
    Crc32c,
    /// CRC-64/NVME: S3's default for new objects.
    Crc64Nvme,
    /// SHA-1.
    Sha1,
    /// SHA-256.
    Sha256,
}

/// Every algorithm, in the order S3 documents them.
pub const ALL: [ChecksumAlgorithm; 5] = [
    ChecksumAlgorithm::Crc32,
    ChecksumAlgorithm::Crc32c,
    ChecksumAlgorithm::Crc64Nvme,
    ChecksumAlgorithm::Sha1,
    ChecksumAlgorithm::Sha256,
];

impl ChecksumAlgorithm {
    /// Name as used in `x-amz-sdk-checksum-algorithm`, e.g. "CRC32C".
    pub fn name(self) -> &'static str {
        match self {
            ChecksumAlgorithm::Crc32 => "CRC32",
            ChecksumAlgorithm::Crc32c => "CRC32C",
            ChecksumAlgorithm::Crc64Nvme => "CRC64NVME",
            ChecksumAlgorithm::Sha1 => "SHA1",
            ChecksumAlgorithm::Sha256 => "SHA256",
        }
    }

    /// The header carrying a value, e.g. "x-amz-checksum-crc32c".
    pub fn header(self) -> &'static str {
        match self {
            ChecksumAlgorithm::Crc32 => "x-amz-checksum-crc32",
            ChecksumAlgorithm::Crc32c => "x-amz-checksum-crc32c",
            ChecksumAlgorithm::Crc64Nvme => "x-amz-checksum-crc64nvme",
            ChecksumAlgorithm::Sha1 => "x-amz-checksum-sha1",
            ChecksumAlgorithm::Sha256 => "x-amz-checksum-sha256",
        }
    }

    /// Parses an algorithm name (case-insensitive).
    pub fn from_name(s: &str) -> Option<ChecksumAlgorithm> {
        ALL.into_iter().find(|a| a.name().eq_ignore_ascii_case(s))
    }

    /// Parses a value header name (case-insensitive).
    pub fn from_header(s: &str) -> Option<ChecksumAlgorithm> {
        ALL.into_iter().find(|a| a.header().eq_ignore_ascii_case(s))
    }

    /// Bytes in a raw digest.
    pub fn digest_len(self) -> usize {
        match self {
            ChecksumAlgorithm::Crc32 | ChecksumAlgorithm::Crc32c => 4,
            ChecksumAlgorithm::Crc64Nvme => 8,
            ChecksumAlgorithm::Sha1 => 20,
            ChecksumAlgorithm::Sha256 => 32,
        }
    }

    /// The CRC behind the algorithm, for the CRC family.
    pub fn crc(self) -> Option<(CrcAlgorithm, usize)> {
        match self {
            ChecksumAlgorithm::Crc32 => Some((CrcAlgorithm::Crc32IsoHdlc, 4)),
            ChecksumAlgorithm::Crc32c => Some((CrcAlgorithm::Crc32Iscsi, 4)),
            ChecksumAlgorithm::Crc64Nvme => Some((CrcAlgorithm::Crc64Nvme, 8)),
            ChecksumAlgorithm::Sha1 | ChecksumAlgorithm::Sha256 => None,
        }
    }

    /// The checksum type a multipart upload gets when the client names none:
    /// FULL_OBJECT for CRC64NVME, COMPOSITE for the others.
    pub fn default_type(self) -> &'static str {
        if self == ChecksumAlgorithm::Crc64Nvme {
            FULL_OBJECT
        } else {
            COMPOSITE
        }
    }

    /// Whether a multipart upload may use `kind` with this algorithm: only
    /// CRCs combine into a full-object checksum, and CRC64NVME has no
    /// composite form.
    pub fn allows_type(self, kind: &str) -> bool {
        match kind {
            FULL_OBJECT => self.crc().is_some(),
            COMPOSITE => self != ChecksumAlgorithm::Crc64Nvme,
            _ => false,
        }
    }

    /// A fresh hasher.
    pub fn hasher(self) -> ChecksumHasher {
        match self {
            ChecksumAlgorithm::Crc32 => {
                ChecksumHasher::Crc(crc_fast::Digest::new(CrcAlgorithm::Crc32IsoHdlc), 4)
            }
            ChecksumAlgorithm::Crc32c => {
                ChecksumHasher::Crc(crc_fast::Digest::new(CrcAlgorithm::Crc32Iscsi), 4)
            }
            ChecksumAlgorithm::Crc64Nvme => {
                ChecksumHasher::Crc(crc_fast::Digest::new(CrcAlgorithm::Crc64Nvme), 8)
            }
            ChecksumAlgorithm::Sha1 => ChecksumHasher::Sha1(Sha1::new()),
            ChecksumAlgorithm::Sha256 => ChecksumHasher::Sha256(Sha256::new()),
        }
    }

    /// Decodes a base64 value and checks its length.
    pub fn decode_value(self, b64: &str) -> Option<Vec<u8>> {
        B64.decode(b64.trim())
            .ok()
            .filter(|v| v.len() == self.digest_len())
    }
}

/// Incremental checksum computation.
pub enum ChecksumHasher {
    /// A CRC and its width in bytes.
    Crc(crc_fast::Digest, usize),
    /// SHA-1.
    Sha1(Sha1),
    /// SHA-256.
    Sha256(Sha256),
}

impl ChecksumHasher {
    /// Adds data.
    pub fn update(&mut self, data: &[u8]) {
        match self {
            ChecksumHasher::Crc(d, _) => d.update(data),
            ChecksumHasher::Sha1(h) => h.update(data),
            ChecksumHasher::Sha256(h) => h.update(data),
        }
    }

    /// The raw digest (big-endian for CRCs).
    pub fn finalize(self) -> Vec<u8> {
        match self {
            ChecksumHasher::Crc(d, width) => d.finalize().to_be_bytes()[8 - width..].to_vec(),
            ChecksumHasher::Sha1(h) => h.finalize().to_vec(),
            ChecksumHasher::Sha256(h) => h.finalize().to_vec(),
        }
    }
}

/// Checksum type of a whole-object checksum.
pub const FULL_OBJECT: &str = "FULL_OBJECT";
/// Checksum type of a checksum of part checksums.
pub const COMPOSITE: &str = "COMPOSITE";

/// The full-object CRC of a multipart object from its parts' CRCs (raw,
/// big-endian) and lengths, or `None` for a non-CRC algorithm.
pub fn combine_parts(alg: ChecksumAlgorithm, parts: &[(Vec<u8>, u64)]) -> Option<Vec<u8>> {
    let (crc, width) = alg.crc()?;
    let value = |raw: &[u8]| raw.iter().fold(0u64, |acc, b| (acc << 8) | *b as u64);
    let mut combined: Option<u64> = None;
    for (raw, len) in parts {
        let v = value(raw);
        combined = Some(match combined {
            None => v,
            Some(acc) => crc_fast::checksum_combine(crc, acc, v, *len),
        });
    }
    let out = combined.unwrap_or_else(|| crc_fast::checksum(crc, b""));
    Some(out.to_be_bytes()[8 - width..].to_vec())
}

/// The composite checksum of a multipart object: the algorithm over the
/// concatenated part digests, encoded, followed by `-N`.
pub fn composite(alg: ChecksumAlgorithm, parts: &[Vec<u8>]) -> String {
    let mut h = alg.hasher();
    for p in parts {
        h.update(p);
    }
    format!("{}-{}", encode(&h.finalize()), parts.len())
}

/// Base64 of a raw digest.
pub fn encode(raw: &[u8]) -> String {
    B64.encode(raw)
}

/// The XML fields (`ChecksumCRC32`, ...) of a stored checksum (with its
/// type when `with_type`).
pub fn checksum_fields(c: Option<&placement::ChecksumValue>, with_type: bool) -> ChecksumFields {
    let mut f = ChecksumFields::default();
    let Some(c) = c else { return f };
    let slot = match c.algorithm.as_str() {
        "CRC32" => &mut f.crc32,
        "CRC32C" => &mut f.crc32c,
        "CRC64NVME" => &mut f.crc64nvme,
        "SHA1" => &mut f.sha1,
        "SHA256" => &mut f.sha256,
        _ => return f,
    };
    *slot = Some(c.value.clone());
    if with_type {
        f.kind = Some(c.kind.clone());
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(a: ChecksumAlgorithm, data: &[u8]) -> String {
        let mut h = a.hasher();
        h.update(data);
        encode(&h.finalize())
    }

    #[test]
    fn known_values() {
        // "abc" under CRC32 is 0x352441C2, as in AWS's trailer examples.
        assert_eq!(of(ChecksumAlgorithm::Crc32, b"abc"), "NSRBwg==");
        // 66,560 × 'a' under CRC32C, from AWS's signed-trailer example.
        assert_eq!(of(ChecksumAlgorithm::Crc32c, &[b'a'; 66_560]), "sOO8/Q==");
        // Check values of the CRC catalogue ("123456789").
        assert_eq!(
            of(ChecksumAlgorithm::Crc32c, b"123456789"),
            encode(&0xE3069283u32.to_be_bytes())
        );
        assert_eq!(
            of(ChecksumAlgorithm::Crc64Nvme, b"123456789"),
            encode(&0xAE8B14860A799888u64.to_be_bytes())
        );
        assert_eq!(
            of(ChecksumAlgorithm::Sha256, b""),
            encode(
                &hex::decode("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
                    .unwrap()
            )
        );
        assert_eq!(
            of(ChecksumAlgorithm::Sha1, b"abc"),
            "qZk+NkcGgWq6PiVxeFDCbJzQ2J0="
        );
    }

    #[test]
    fn multipart_forms() {
        let data = Pattern::new();
        let (a, b) = data.split_at(70_000);
        let digest = |alg: ChecksumAlgorithm, d: &[u8]| {
            let mut h = alg.hasher();
            h.update(d);
            h.finalize()
        };
        for alg in [
            ChecksumAlgorithm::Crc32,
            ChecksumAlgorithm::Crc32c,
            ChecksumAlgorithm::Crc64Nvme,
        ] {
            let parts = vec![
                (digest(alg, a), a.len() as u64),
                (digest(alg, b), b.len() as u64),
            ];
            assert_eq!(
                combine_parts(alg, &parts).unwrap(),
                digest(alg, &data),
                "{alg:?}"
            );
        }
        assert!(combine_parts(ChecksumAlgorithm::Sha256, &[]).is_none());
        let c = composite(
            ChecksumAlgorithm::Sha256,
            &[
                digest(ChecksumAlgorithm::Sha256, a),
                digest(ChecksumAlgorithm::Sha256, b),
            ],
        );
        assert!(c.ends_with("-2"));
        assert!(!ChecksumAlgorithm::Crc64Nvme.allows_type(COMPOSITE));
        assert!(!ChecksumAlgorithm::Sha1.allows_type(FULL_OBJECT));
    }

    struct Pattern;
    impl Pattern {
        #[allow(clippy::new_ret_no_self)]
        fn new() -> Vec<u8> {
            (0..200_000u32).map(|i| (i * 7 % 253) as u8).collect()
        }
    }

    #[test]
    fn names_and_headers() {
        assert_eq!(
            ChecksumAlgorithm::from_name("crc64nvme"),
            Some(ChecksumAlgorithm::Crc64Nvme)
        );
        assert_eq!(
            ChecksumAlgorithm::from_header("X-Amz-Checksum-Sha1"),
            Some(ChecksumAlgorithm::Sha1)
        );
        assert!(ChecksumAlgorithm::Crc32.decode_value("NSRBwg==").is_some());
        assert!(ChecksumAlgorithm::Crc32.decode_value("NSRB").is_none());
    }
}
