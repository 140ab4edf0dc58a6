//! What a disk's metadata store holds: record and piece envelopes, the
//! heads index and its listed keys, and `format.json`. Every stored
//! structure that decodes encodes back to the same bytes, and every value
//! encodes to bytes that decode back to it.

use arbitrary::{Arbitrary, Unstructured};
use bytes::Bytes;
use disk_format::envelope::{decode_piece, decode_record, encode_piece, encode_record};
use disk_format::format::FormatRecord;
use disk_format::heads::{decode_listed_key, head_versions, Head};
use disk_format::keys::push_component;
use disk_format::types::{Record, Stamp, VersionId};
use uuid::Uuid;

/// A record drawn from the fuzzer's bytes.
fn record(u: &mut Unstructured<'_>) -> arbitrary::Result<Record> {
    Ok(Record {
        version: VersionId(u.arbitrary()?),
        stamp: Stamp {
            mtime_ns: u.arbitrary()?,
            write_id: Uuid::from_bytes(u.arbitrary()?),
        },
        body: Bytes::from(Vec::<u8>::arbitrary(u)?),
        listing: Bytes::from(Vec::<u8>::arbitrary(u)?),
    })
}

/// Record envelopes: a stored record that decodes (in the current
/// envelope) is what encoding it writes; a drawn record round-trips.
pub fn record_envelope(data: &[u8]) {
    if let Ok(r) = decode_record(data) {
        if data.get(2) == Some(&2) {
            assert_eq!(encode_record(&r), data, "decoded, then encoded otherwise");
        }
    }
    let mut u = Unstructured::new(data);
    let Ok(r) = record(&mut u) else { return };
    assert_eq!(decode_record(&encode_record(&r)).expect("round trip"), r);
}

/// Packed pieces: the same two properties.
pub fn piece(data: &[u8]) {
    if let Ok(p) = decode_piece(data) {
        assert_eq!(encode_piece(&p), data);
    }
    assert_eq!(decode_piece(&encode_piece(data)).expect("round trip"), data);
}

/// Heads: a stored head that decodes encodes back to itself and lists the
/// same versions through both decoders; heads of drawn records
/// round-trip; a listed key that decodes encodes back to itself.
pub fn heads(data: &[u8]) {
    let stored = Bytes::copy_from_slice(data);
    let mut versions = Vec::new();
    match (Head::decode(&stored), head_versions(data, &mut versions)) {
        (Ok(h), Ok(all)) => {
            assert_eq!(h.encode(), data, "decoded, then encoded otherwise");
            match &h {
                Head::Versions(entries) => {
                    assert!(all);
                    assert_eq!(entries.len(), versions.len());
                    for (e, v) in entries.iter().zip(&versions) {
                        assert_eq!((e.version, e.stamp), (v.version, v.stamp));
                        assert_eq!(&e.listing[..], v.listing);
                    }
                }
                Head::Many(_) => assert!(!all),
            }
        }
        (Err(_), Err(_)) => {}
        (a, b) => panic!("the two head decoders disagree: {a:?} / {b:?}"),
    }
    if let Some(key) = decode_listed_key(data) {
        let mut again = Vec::new();
        push_component(&mut again, &key);
        assert_eq!(again, data, "a listed key decoded, then encoded otherwise");
    }
    let mut u = Unstructured::new(data);
    let mut records = Vec::new();
    while let Ok(r) = record(&mut u) {
        if u.is_empty() || records.len() >= 12 {
            break;
        }
        records.push(r);
    }
    let head = Head::of(&records);
    let encoded = Bytes::from(head.encode());
    assert_eq!(Head::decode(&encoded).expect("round trip"), head);
}

/// `format.json`: a record that decodes encodes to one that decodes to
/// it again.
pub fn format_record(data: &[u8]) {
    if let Ok(f) = FormatRecord::decode(data) {
        assert_eq!(FormatRecord::decode(&f.encode()).expect("round trip"), f);
    }
}
