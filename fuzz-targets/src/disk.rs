//! What a disk stores: record and piece envelopes, the heads index and its
//! listed keys, `format.json`, and a shard file's header and tail. Every stored
//! structure that decodes encodes back to the same bytes, and every value
//! encodes to bytes that decode back to it.

use arbitrary::{Arbitrary, Unstructured};
use bytes::Bytes;
use disk_format::envelope::{decode_piece, decode_record, encode_piece, encode_record};
use disk_format::format::FormatRecord;
use disk_format::heads::{decode_listed_key, head_versions, Head};
use disk_format::keys::push_component;
use disk_format::shard_layout::{
    decode_table, encode_tail, Footer, Header, BLOCK_ALIGN, FOOTER_LEN, HEADER_LEN, HEADER_USED,
};
use disk_format::types::{Record, ShardId, Stamp, VersionId};
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

/// A shard file's header and tail. A header that decodes is what encoding
/// it writes; a footer that decodes has lengths that fit its file and
/// block size; a tail that decodes is what encoding its checksums writes
/// (but the four bytes after its CRC, which nothing reads). A drawn shard's
/// header and tail decode to what was encoded, and with one byte changed
/// are refused — or, the byte being one nothing reads, decode the same.
pub fn shard_file(data: &[u8]) {
    if let Ok(h) = Header::decode(data) {
        assert_eq!(&h.encode()[..HEADER_USED], &data[..HEADER_USED]);
    }
    let mut u = Unstructured::new(data);
    let _ = stored_tail(&mut u);
    let mut u = Unstructured::new(data);
    let _ = drawn_shard(&mut u);
}

/// A footer and tail taken as stored.
fn stored_tail(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let block_size: u32 = u.arbitrary()?;
    let file_size: u64 = u.arbitrary()?;
    let footer: [u8; FOOTER_LEN] = u.arbitrary()?;
    let Ok(f) = Footer::decode(&footer, file_size, block_size) else {
        return Ok(());
    };
    assert_eq!(f.table_offset() % BLOCK_ALIGN as u64, 0);
    assert!(f.table_offset() >= HEADER_LEN + f.data_len());
    assert!(f.table_offset() - (HEADER_LEN + f.data_len()) < BLOCK_ALIGN as u64);
    assert_eq!(f.table_offset() + f.tail_len() as u64, file_size);
    assert_eq!(f.blocks(), f.data_len().div_ceil(block_size as u64));
    let tail = u.bytes(u.len())?;
    if let Ok(checksums) = decode_table(tail, &f) {
        let (offset, again) = encode_tail(&checksums, f.data_len());
        assert_eq!(offset, f.table_offset());
        let read = tail.len() - 4;
        assert_eq!(
            &again[..read],
            &tail[..read],
            "decoded, then encoded otherwise"
        );
    }
    Ok(())
}

/// A shard drawn from the input, encoded, changed in one byte, decoded.
fn drawn_shard(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let block_size = BLOCK_ALIGN as u32 * u.int_in_range(1..=4)?;
    let blocks: u64 = u.int_in_range(0..=64)?;
    let data_len = match blocks {
        0 => 0,
        n => (n - 1) * block_size as u64 + u.int_in_range(1..=block_size as u64)?,
    };
    let checksums = (0..blocks)
        .map(|_| u.arbitrary())
        .collect::<arbitrary::Result<Vec<u64>>>()?;
    let header = Header {
        block_size,
        shard_id: ShardId(Uuid::from_bytes(u.arbitrary()?)),
        shard_index: u.arbitrary()?,
    };
    let (offset, tail) = encode_tail(&checksums, data_len);
    let size = offset + tail.len() as u64;
    let decode = |tail: &[u8]| {
        let f = Footer::decode(&tail[tail.len() - FOOTER_LEN..], size, block_size)?;
        assert_eq!(f.table_offset(), offset);
        decode_table(tail, &f)
    };
    assert_eq!(decode(&tail).expect("round trip"), checksums);
    let encoded = header.encode();
    assert_eq!(Header::decode(&encoded).expect("round trip"), header);

    let mask: u8 = u.int_in_range(1..=255)?;
    let mut changed = tail.clone();
    let at = u.choose_index(changed.len())?;
    changed[at] ^= mask;
    match decode(&changed) {
        Ok(c) => {
            assert!(
                at >= tail.len() - 4,
                "a change at {at} of the tail went unseen"
            );
            assert_eq!(c, checksums);
        }
        Err(_) => assert!(
            at < tail.len() - 4,
            "a change where nothing reads was refused"
        ),
    }
    let mut changed = encoded;
    let at = u.choose_index(changed.len())?;
    changed[at] ^= mask;
    match Header::decode(&changed) {
        Ok(h) => {
            assert!(
                at >= HEADER_USED,
                "a change at {at} of the header went unseen"
            );
            assert_eq!(h, header);
        }
        Err(_) => assert!(at < HEADER_USED, "a change where nothing reads was refused"),
    }
    Ok(())
}
