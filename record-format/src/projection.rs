//! Listing projections: what a listing shows of a version
//! ([`ObjectSummary`]), stored beside its record and in the disks' heads
//! index ([`disk_format::types::Record::listing`]), so listing current objects
//! decodes a few dozen bytes per key instead of the record.
//!
//! Format 2 (written now) is a fixed binary layout, decoded without a
//! generic deserialiser (which cost a tenth of a listing's server time):
//!
//! ```text
//! 2 ‖ flags ‖ [version id 16] ‖ mtime u64 LE ‖ size u64 LE ‖ etag
//!   ‖ [checksum: algorithm, value, kind] ‖ [storage class]
//! ```
//!
//! Flags: 1 version id present, 2 delete marker, 4 checksum present,
//! 8 storage class present, 16 the ETag is an MD5 in lowercase hex, stored
//! as its 16 bytes. Other strings are a u16 LE length and UTF-8 bytes.
//! Format 1 (MessagePack by position) is still read. Listings read the
//! fields borrowed from the projection ([`view`]), not as an allocated
//! [`ObjectSummary`].

use std::borrow::Cow;

use bytes::Bytes;
use serde::Serialize;
use uuid::Uuid;

use crate::error::SetError;
use crate::record::{self, ChecksumValue, ObjectRecord, ObjectSummary, SummaryMeta};

const FORMAT_V1: u8 = 1;
const FORMAT_V2: u8 = 2;

const HAS_VERSION: u8 = 1;
const DELETE_MARKER: u8 = 2;
const HAS_CHECKSUM: u8 = 4;
const HAS_STORAGE_CLASS: u8 = 8;
const MD5_ETAG: u8 = 16;

/// The fields a projection holds, borrowed from a record or a summary.
#[derive(Serialize)]
struct Fields<'a> {
    version_id: Option<Uuid>,
    mtime_ns: u64,
    delete_marker: bool,
    size: u64,
    meta: MetaFields<'a>,
}

#[derive(Serialize)]
struct MetaFields<'a> {
    etag: &'a str,
    checksum: Option<&'a ChecksumValue>,
    storage_class: Option<&'a str>,
}

impl<'a> Fields<'a> {
    fn of_record(o: &'a ObjectRecord) -> Fields<'a> {
        Fields {
            version_id: o.version_id,
            mtime_ns: o.mtime_ns,
            delete_marker: o.delete_marker,
            size: o.size,
            meta: MetaFields {
                etag: &o.meta.etag,
                checksum: o.meta.checksum.as_ref(),
                storage_class: o.meta.storage_class.as_deref(),
            },
        }
    }

    fn of_summary(s: &'a ObjectSummary) -> Fields<'a> {
        Fields {
            version_id: s.version_id,
            mtime_ns: s.mtime_ns,
            delete_marker: s.delete_marker,
            size: s.size,
            meta: MetaFields {
                etag: &s.meta.etag,
                checksum: s.meta.checksum.as_ref(),
                storage_class: s.meta.storage_class.as_deref(),
            },
        }
    }
}

/// The projection of an object version.
pub fn encode(object: &ObjectRecord) -> Bytes {
    write(&Fields::of_record(object))
}

/// The projection of a stored object-version body, for records written
/// before projections existed (the disks' heads index is built with it);
/// `None` for a body that is not an object version.
pub fn listing_of_body(body: &[u8]) -> Option<Bytes> {
    let summary: ObjectSummary = record::decode(body).ok()?;
    Some(of_summary(&summary))
}

/// A projection's fields, borrowed from it (format 2) or decoded (format
/// 1), for listings that render them without allocating per key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SummaryView<'a> {
    /// `None` for the null version.
    pub version_id: Option<Uuid>,
    /// Modification time, ns since the epoch.
    pub mtime_ns: u64,
    /// True for a delete marker.
    pub delete_marker: bool,
    /// Total bytes.
    pub size: u64,
    /// Entity tag.
    pub etag: Etag<'a>,
    /// Algorithm, value and kind.
    pub checksum: Option<(Cow<'a, str>, Cow<'a, str>, Cow<'a, str>)>,
    /// Storage class name, when not the default.
    pub storage_class: Option<Cow<'a, str>>,
}

/// An entity tag (without quotes): an MD5 as its bytes (shown in lowercase
/// hex), or any other text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Etag<'a> {
    /// An MD5 in lowercase hex, as its 16 bytes.
    Md5([u8; 16]),
    /// Any other entity tag.
    Text(Cow<'a, str>),
}

impl Etag<'_> {
    /// The ETag as text, written into `buf` for an MD5.
    pub fn as_str<'b>(&'b self, buf: &'b mut [u8; 32]) -> &'b str {
        match self {
            Etag::Md5(raw) => {
                // Into a buffer first: `hex::encode` builds its string a
                // char at a time, a twentieth of a listing's server time.
                let _ = hex::encode_to_slice(raw, buf);
                std::str::from_utf8(buf).unwrap_or_default()
            }
            Etag::Text(t) => t,
        }
    }
}

impl SummaryView<'_> {
    /// The summary these fields make.
    pub fn to_summary(&self) -> ObjectSummary {
        ObjectSummary {
            version_id: self.version_id,
            mtime_ns: self.mtime_ns,
            delete_marker: self.delete_marker,
            size: self.size,
            meta: SummaryMeta {
                etag: self.etag.as_str(&mut [0; 32]).to_owned(),
                checksum: self.checksum.as_ref().map(|(a, v, k)| ChecksumValue {
                    algorithm: a.to_string(),
                    value: v.to_string(),
                    kind: k.to_string(),
                }),
                storage_class: self.storage_class.as_ref().map(|c| c.to_string()),
            },
        }
    }
}

/// The fields of a projection of either format.
pub fn view(bytes: &[u8]) -> Result<SummaryView<'_>, SetError> {
    match bytes.split_first() {
        Some((&FORMAT_V2, rest)) => {
            view_v2(rest).ok_or_else(|| SetError::Corrupt("a listing projection is damaged".into()))
        }
        Some((&FORMAT_V1, rest)) => {
            let s: ObjectSummary =
                rmp_serde::from_slice(rest).map_err(|e| SetError::Corrupt(e.to_string()))?;
            Ok(SummaryView {
                version_id: s.version_id,
                mtime_ns: s.mtime_ns,
                delete_marker: s.delete_marker,
                size: s.size,
                etag: Etag::Text(Cow::Owned(s.meta.etag)),
                checksum: s.meta.checksum.map(|c| {
                    (
                        Cow::Owned(c.algorithm),
                        Cow::Owned(c.value),
                        Cow::Owned(c.kind),
                    )
                }),
                storage_class: s.meta.storage_class.map(Cow::Owned),
            })
        }
        Some((v, _)) => Err(SetError::Corrupt(format!("unknown listing format {v}"))),
        None => Err(SetError::Corrupt("empty listing".into())),
    }
}

/// The projection of `summary`.
pub fn of_summary(summary: &ObjectSummary) -> Bytes {
    write(&Fields::of_summary(summary))
}

/// Format 2, or format 1 for a string too long for a u16 length (no
/// gateway writes one; the projection still says what the record says).
fn write(f: &Fields<'_>) -> Bytes {
    let strings = [f.meta.etag, f.meta.storage_class.unwrap_or("")]
        .into_iter()
        .chain(
            f.meta
                .checksum
                .iter()
                .flat_map(|c| [c.algorithm.as_str(), c.value.as_str(), c.kind.as_str()]),
        );
    if strings.into_iter().any(|s| s.len() > u16::MAX as usize) {
        let mut out = vec![FORMAT_V1];
        rmp_serde::encode::write(&mut out, f).expect("summaries serialise");
        return Bytes::from(out);
    }
    let md5 = md5_bytes(f.meta.etag);
    let flags = [
        (f.version_id.is_some(), HAS_VERSION),
        (f.delete_marker, DELETE_MARKER),
        (f.meta.checksum.is_some(), HAS_CHECKSUM),
        (f.meta.storage_class.is_some(), HAS_STORAGE_CLASS),
        (md5.is_some(), MD5_ETAG),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .fold(0, |acc, (_, bit)| acc | bit);
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&[FORMAT_V2, flags]);
    if let Some(v) = f.version_id {
        out.extend_from_slice(v.as_bytes());
    }
    out.extend_from_slice(&f.mtime_ns.to_le_bytes());
    out.extend_from_slice(&f.size.to_le_bytes());
    match md5 {
        Some(raw) => out.extend_from_slice(&raw),
        None => put_str(&mut out, f.meta.etag),
    }
    if let Some(c) = f.meta.checksum {
        put_str(&mut out, &c.algorithm);
        put_str(&mut out, &c.value);
        put_str(&mut out, &c.kind);
    }
    if let Some(sc) = f.meta.storage_class {
        put_str(&mut out, sc);
    }
    Bytes::from(out)
}

/// The 16 bytes of an ETag that is exactly an MD5 in lowercase hex (the
/// form whose hex encoding gives the ETag back).
fn md5_bytes(etag: &str) -> Option<[u8; 16]> {
    let lower = etag
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let mut raw = [0; 16];
    (lower && hex::decode_to_slice(etag, &mut raw).is_ok()).then_some(raw)
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u16).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// Reads format 2 fields off the front of a slice.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_le_bytes)
    }
}

/// The length-prefixed strings that end a format 2 projection. Their
/// lengths are below 128 in practice, so the bytes are valid UTF-8 as a
/// whole: checked once, each string is then a slice of them (checking
/// every string on its own cost a tenth of a listing's server time).
struct Strings<'a> {
    bytes: &'a [u8],
    text: Option<&'a str>,
    at: usize,
}

impl<'a> Strings<'a> {
    fn new(bytes: &'a [u8]) -> Strings<'a> {
        Strings {
            bytes,
            text: std::str::from_utf8(bytes).ok(),
            at: 0,
        }
    }

    fn next(&mut self) -> Option<Cow<'a, str>> {
        let len = self.bytes.get(self.at..self.at + 2)?;
        let from = self.at + 2;
        let to = from + u16::from_le_bytes([len[0], len[1]]) as usize;
        let bytes: &'a [u8] = self.bytes.get(from..to)?;
        self.at = to;
        let text = match self.text.and_then(|t| t.get(from..to)) {
            Some(t) => t,
            None => std::str::from_utf8(bytes).ok()?,
        };
        Some(Cow::Borrowed(text))
    }

    fn done(&self) -> bool {
        self.at == self.bytes.len()
    }
}

/// The fixed fields that start format 2: flags, version id, time, size.
fn header(r: &mut Reader<'_>) -> Option<(u8, Option<Uuid>, u64, u64)> {
    let [flags] = r.array()?;
    let version_id = match flags & HAS_VERSION {
        0 => None,
        _ => Some(Uuid::from_bytes(r.array()?)),
    };
    Some((flags, version_id, r.u64()?, r.u64()?))
}

/// What orders a projection's version among the key's others (its time
/// and version id) and whether it is a delete marker, read without the
/// rest of it.
pub fn order_of(bytes: &[u8]) -> Result<(u64, Option<Uuid>, bool), SetError> {
    match bytes.split_first() {
        Some((&FORMAT_V2, rest)) => header(&mut Reader(rest))
            .map(|(flags, id, mtime, _)| (mtime, id, flags & DELETE_MARKER != 0))
            .ok_or_else(|| SetError::Corrupt("a listing projection is damaged".into())),
        _ => view(bytes).map(|v| (v.mtime_ns, v.version_id, v.delete_marker)),
    }
}

fn view_v2(bytes: &[u8]) -> Option<SummaryView<'_>> {
    let mut r = Reader(bytes);
    let (flags, version_id, mtime_ns, size) = header(&mut r)?;
    let md5 = match flags & MD5_ETAG {
        0 => None,
        _ => Some(r.array()?),
    };
    let mut strings = Strings::new(r.0);
    let etag = match md5 {
        Some(raw) => Etag::Md5(raw),
        None => Etag::Text(strings.next()?),
    };
    let checksum = match flags & HAS_CHECKSUM {
        0 => None,
        _ => Some((strings.next()?, strings.next()?, strings.next()?)),
    };
    let storage_class = match flags & HAS_STORAGE_CLASS {
        0 => None,
        _ => Some(strings.next()?),
    };
    strings.done().then_some(SummaryView {
        version_id,
        mtime_ns,
        delete_marker: flags & DELETE_MARKER != 0,
        size,
        etag,
        checksum,
        storage_class,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::ErasureLayout;
    use crate::record::{encode as encode_record, ObjectMeta};

    fn decode(bytes: &[u8]) -> Result<ObjectSummary, SetError> {
        view(bytes).map(|v| v.to_summary())
    }

    fn object(etag: &str) -> ObjectRecord {
        let mut meta = ObjectMeta {
            etag: etag.into(),
            storage_class: Some("GLACIER".into()),
            checksum: Some(ChecksumValue {
                algorithm: "CRC64NVME".into(),
                value: "AAAAAAAAAAA=".into(),
                kind: "FULL_OBJECT".into(),
            }),
            ..Default::default()
        };
        meta.user.push(("a".into(), "b".into()));
        let layout = ErasureLayout {
            data: 2,
            parity: 2,
            block_size: 1 << 20,
            rotation: 0,
        };
        let mut object = ObjectRecord::new_version(layout, vec![], false, meta, vec![], None);
        object.version_id = Some(Uuid::now_v7());
        object.mtime_ns = 77;
        object.size = 5;
        object
    }

    fn summary(object: &ObjectRecord) -> ObjectSummary {
        record::decode(&encode_record(object)).unwrap()
    }

    #[test]
    fn a_projection_decodes_to_the_summary_of_the_record() {
        for etag in [
            "0123456789abcdef0123456789abcdef",
            "0123456789ABCDEF0123456789abcdef",
            "0123456789abcdef0123456789abcdef-3",
            "",
            "\"odd\" <etag>",
        ] {
            let mut object = object(etag);
            assert_eq!(decode(&encode(&object)).unwrap(), summary(&object));
            object.meta.checksum = None;
            object.meta.storage_class = None;
            object.version_id = None;
            object.delete_marker = true;
            assert_eq!(decode(&encode(&object)).unwrap(), summary(&object));
            assert_eq!(
                listing_of_body(&encode_record(&object)).unwrap(),
                encode(&object)
            );
        }
    }

    #[test]
    fn long_and_non_ascii_strings_decode_whichever_way_they_are_checked() {
        // Lengths of 128 and more put bytes above 127 between the strings,
        // so the strings are then checked one by one.
        for len in [1, 127, 128, 200, 1000] {
            let mut object = object(&"é".repeat(len / 2 + 1));
            object.meta.storage_class = Some("ü".repeat(len));
            if let Some(c) = object.meta.checksum.as_mut() {
                c.value = "v".repeat(len);
            }
            assert_eq!(decode(&encode(&object)).unwrap(), summary(&object), "{len}");
        }
        let mut bad = encode(&object("x")).to_vec();
        let at = bad.len() - 1;
        bad[at] = 0xFF;
        assert!(decode(&bad).is_err(), "not UTF-8");
    }

    #[test]
    fn an_md5_etag_is_stored_as_its_bytes() {
        let md5 = encode(&object("0123456789abcdef0123456789abcdef"));
        let other = encode(&object("0123456789abcdef0123456789abcdef-3"));
        assert_eq!(other.len() - md5.len(), 34 + 2 - 16);
    }

    #[test]
    fn format_1_projections_are_still_read() {
        let object = object("0123456789abcdef0123456789abcdef");
        let mut v1 = vec![FORMAT_V1];
        rmp_serde::encode::write(&mut v1, &Fields::of_record(&object)).unwrap();
        assert_eq!(decode(&v1).unwrap(), summary(&object));
        let mut long = object.clone();
        long.meta.storage_class = Some("x".repeat(70_000));
        assert_eq!(encode(&long)[0], FORMAT_V1);
        assert_eq!(decode(&encode(&long)).unwrap(), summary(&long));
    }

    #[test]
    fn damaged_projections_are_refused() {
        let good = encode(&object("0123456789abcdef0123456789abcdef"));
        for cut in 0..good.len() {
            assert!(decode(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = good.to_vec();
        longer.push(0);
        assert!(decode(&longer).is_err());
        assert!(decode(&[9, 1]).is_err());
        // Not a version record (a bucket record, say): no projection.
        assert!(listing_of_body(&encode_record(&"enabled")).is_none());
    }
}
