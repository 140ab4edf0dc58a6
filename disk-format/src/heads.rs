//! The heads index: per key, the versions a disk holds with their stamps and
//! listing projections, kept beside the records in the same atomic writes.
//!
//! A listing of current objects reads one small entry per key here instead
//! of every version record (a few hundred bytes each, in a table larger than
//! the block cache). The disks' entries for a key are compared by versions
//! and stamps exactly as records are; where they differ the layer above
//! reads the records.
//!
//! Value layout: format byte, then either `0` ‖ count (u8) ‖ entries
//! (version id 16 ‖ stamp mtime 8 LE ‖ write id 16 ‖ listing length u16 LE ‖
//! listing), or `1` ‖ count (u32 LE) when the key has more than
//! [`MAX_HEAD_VERSIONS`] versions; then a CRC32C (LE) of all of it.

use bytes::Bytes;
use uuid::Uuid;

use crate::error::DiskError;
use crate::types::{HeadEntry, Record, Stamp, VersionId};

const HEAD_FORMAT: u8 = 1;
const TAG_VERSIONS: u8 = 0;
const TAG_MANY: u8 = 1;
/// Versions of one key the index keeps; a key with more is listed from its
/// records (versioned keys with long histories).
pub const MAX_HEAD_VERSIONS: usize = 8;
/// Longest listing projection kept; a longer one is left out (the key is
/// then listed from its records).
const MAX_LISTING_BYTES: usize = u16::MAX as usize;

/// One key's head as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Head {
    /// Every version, in version-id order.
    Versions(Vec<HeadEntry>),
    /// Only how many versions there are.
    Many(u32),
}

impl Default for Head {
    fn default() -> Head {
        Head::Versions(Vec::new())
    }
}

/// A listing projection as heads and record envelopes keep it: whole, or
/// left out (empty) when longer than they can hold.
pub fn storable_listing(listing: &[u8]) -> &[u8] {
    match listing.len() <= MAX_LISTING_BYTES {
        true => listing,
        false => &[],
    }
}

fn entry_of(record: &Record) -> HeadEntry {
    HeadEntry {
        version: record.version,
        stamp: record.stamp,
        listing: record.listing.slice_ref(storable_listing(&record.listing)),
    }
}

impl Head {
    /// The head of a key holding exactly `records`.
    pub fn of<'a>(records: impl IntoIterator<Item = &'a Record>) -> Head {
        let mut head = Head::default();
        for r in records {
            head.put(r, true);
        }
        head
    }

    /// No version left.
    pub fn is_empty(&self) -> bool {
        matches!(self, Head::Versions(v) if v.is_empty())
    }

    /// Records that `record` is now stored; `new` says whether its version
    /// was absent before (what a count-only head cannot tell by itself).
    pub fn put(&mut self, record: &Record, new: bool) {
        match self {
            Head::Versions(entries) => {
                match entries.binary_search_by(|e| e.version.cmp(&record.version)) {
                    Ok(i) => entries[i] = entry_of(record),
                    Err(i) => entries.insert(i, entry_of(record)),
                }
                if entries.len() > MAX_HEAD_VERSIONS {
                    *self = Head::Many(entries.len() as u32);
                }
            }
            Head::Many(n) => *n += u32::from(new),
        }
    }

    /// Records that `version` was removed. A count-only head that falls to
    /// the size the index keeps asks for the key's remaining records
    /// (`remaining`) and lists them again.
    pub fn remove(
        &mut self,
        version: VersionId,
        remaining: impl FnOnce() -> Result<Vec<Record>, DiskError>,
    ) -> Result<(), DiskError> {
        match self {
            Head::Versions(entries) => entries.retain(|e| e.version != version),
            Head::Many(n) => {
                *n = n.saturating_sub(1);
                if *n as usize <= MAX_HEAD_VERSIONS {
                    *self = Head::of(&remaining()?);
                }
            }
        }
        Ok(())
    }

    /// The head as stored (format byte, entries, CRC32C).
    pub fn encode(&self) -> Vec<u8> {
        let mut v = vec![HEAD_FORMAT];
        match self {
            Head::Versions(entries) => {
                v.push(TAG_VERSIONS);
                v.push(entries.len() as u8);
                for e in entries {
                    v.extend_from_slice(&e.version.0);
                    v.extend_from_slice(&e.stamp.mtime_ns.to_le_bytes());
                    v.extend_from_slice(e.stamp.write_id.as_bytes());
                    v.extend_from_slice(&(e.listing.len() as u16).to_le_bytes());
                    v.extend_from_slice(&e.listing);
                }
            }
            Head::Many(n) => {
                v.push(TAG_MANY);
                v.extend_from_slice(&n.to_le_bytes());
            }
        }
        let crc = crc_fast::crc32_iscsi(&v);
        v.extend_from_slice(&crc.to_le_bytes());
        v
    }

    /// Decodes a stored head; listings are slices of `v` (no copies).
    pub fn decode(v: &Bytes) -> Result<Head, DiskError> {
        let mut versions = Vec::new();
        Ok(match parse(v, &mut versions)? {
            None => Head::Versions(
                versions
                    .into_iter()
                    .map(|e| HeadEntry {
                        version: e.version,
                        stamp: e.stamp,
                        listing: v.slice_ref(e.listing),
                    })
                    .collect(),
            ),
            Some(count) => Head::Many(count),
        })
    }
}

/// One version as a stored head lists it, borrowed from the head's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadVersion<'a> {
    /// Which version of the key this is.
    pub version: VersionId,
    /// The stamp of the write of it this disk holds.
    pub stamp: Stamp,
    /// The record's listing projection (empty if it has none).
    pub listing: &'a [u8],
}

/// Decodes a stored head into `out` (cleared first), in version-id order;
/// false when the key has more versions than the index keeps (read its
/// records). Listings are read a key at a time into one reused vector,
/// with no allocation or reference count per key.
pub fn head_versions<'a>(
    head: &'a [u8],
    out: &mut Vec<HeadVersion<'a>>,
) -> Result<bool, DiskError> {
    Ok(parse(head, out)?.is_none())
}

/// Decodes a stored head: its versions into `out` (cleared first), or the
/// count of a head that keeps only how many versions there are.
fn parse<'a>(head: &'a [u8], out: &mut Vec<HeadVersion<'a>>) -> Result<Option<u32>, DiskError> {
    out.clear();
    let bad = |why: &str| DiskError::corrupt("head", why);
    let (data, crc) = head
        .split_last_chunk::<4>()
        .ok_or_else(|| bad("too short"))?;
    if crc_fast::crc32_iscsi(data) != u32::from_le_bytes(*crc) {
        return Err(bad("checksum mismatch"));
    }
    let mut r = Reader(data);
    if r.take(1)?[0] != HEAD_FORMAT {
        return Err(bad("unknown format"));
    }
    match r.take(1)?[0] {
        TAG_MANY => Ok(Some(u32::from_le_bytes(r.array()?))),
        TAG_VERSIONS => {
            let n = r.take(1)?[0] as usize;
            for _ in 0..n {
                let version = VersionId(r.array()?);
                let mtime_ns = u64::from_le_bytes(r.array()?);
                let write_id = Uuid::from_bytes(r.array()?);
                let len = u16::from_le_bytes(r.array()?) as usize;
                out.push(HeadVersion {
                    version,
                    stamp: Stamp { mtime_ns, write_id },
                    listing: r.take(len)?,
                });
            }
            Ok(None)
        }
        _ => Err(bad("unknown kind")),
    }
}

/// The key of a heads listing entry (see [`crate::messages::HeadPage`]), decoded;
/// `None` if it is not a valid encoding.
pub fn decode_listed_key(encoded: &[u8]) -> Option<Vec<u8>> {
    let mut key = Vec::with_capacity(encoded.len());
    decode_listed_key_into(encoded, &mut key).then_some(key)
}

/// [`decode_listed_key`] appended to `out` (no allocation when it has
/// room); false if `encoded` is not a valid encoding.
pub fn decode_listed_key_into(encoded: &[u8], out: &mut Vec<u8>) -> bool {
    matches!(crate::keys::decode_component(encoded, out), Some([]))
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DiskError> {
        if self.0.len() < n {
            return Err(DiskError::corrupt("head", "truncated"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DiskError> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(v: u8, t: u64, listing: &str) -> Record {
        Record {
            version: VersionId([v; 16]),
            stamp: Stamp {
                mtime_ns: t,
                write_id: Uuid::from_u128(t as u128),
            },
            body: Bytes::from_static(b"body"),
            listing: Bytes::from(listing.to_string()),
        }
    }

    #[test]
    fn heads_follow_puts_and_removes_and_round_trip() {
        let mut h = Head::default();
        h.put(&rec(2, 1, "b"), true);
        h.put(&rec(1, 1, "a"), true);
        h.put(&rec(2, 5, "b2"), false);
        let Head::Versions(e) = &h else { panic!() };
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].version, VersionId([1; 16]));
        assert_eq!(e[1].listing, "b2");
        assert_eq!(Head::decode(&Bytes::from(h.encode())).unwrap(), h);
        h.remove(VersionId([1; 16]), || unreachable!()).unwrap();
        h.remove(VersionId([2; 16]), || unreachable!()).unwrap();
        assert!(h.is_empty());
    }

    #[test]
    fn a_long_history_is_counted_and_listed_again_when_it_shrinks() {
        let records: Vec<Record> = (0..=MAX_HEAD_VERSIONS as u8)
            .map(|v| rec(v, 1, "x"))
            .collect();
        let mut h = Head::of(&records);
        assert_eq!(h, Head::Many(MAX_HEAD_VERSIONS as u32 + 1));
        h.put(&rec(0, 9, "again"), false);
        assert_eq!(h, Head::Many(MAX_HEAD_VERSIONS as u32 + 1));
        assert_eq!(Head::decode(&Bytes::from(h.encode())).unwrap(), h);
        h.remove(VersionId([0; 16]), || Ok(records[1..].to_vec()))
            .unwrap();
        assert_eq!(h, Head::of(&records[1..]));
    }

    #[test]
    fn damage_is_reported() {
        let mut h = Head::default();
        h.put(&rec(1, 1, "a"), true);
        let mut v = h.encode();
        v[5] ^= 1;
        assert!(Head::decode(&Bytes::from(v.clone())).is_err());
        assert!(Head::decode(&Bytes::copy_from_slice(&v[..3])).is_err());
    }
}
