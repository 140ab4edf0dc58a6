//! The envelopes of what a disk's metadata store holds: a version record
//! (magic, format, version id, stamp, listing projection, body, CRC32C) and
//! a packed piece (CRC32C, data). Decoders check lengths and checksums and
//! answer `Corrupt`, never panic.

use bytes::Bytes;
use uuid::Uuid;

use crate::error::DiskError;
use crate::heads::storable_listing;
use crate::types::{Record, Stamp, VersionId};

/// The first bytes of every stored record.
const RECORD_MAGIC: [u8; 2] = *b"GR";
/// Envelope without a listing projection (records written before heads).
pub const RECORD_V1: u8 = 1;
/// Envelope with the record's listing projection before its body.
const RECORD_V2: u8 = 2;
/// magic + version + version id + mtime + write id + crc
const RECORD_OVERHEAD: usize = 2 + 1 + 16 + 8 + 16 + 4;

/// A record as stored: its envelope, listing projection and body.
pub fn encode_record(r: &Record) -> Vec<u8> {
    let listing = storable_listing(&r.listing);
    let mut v = Vec::with_capacity(RECORD_OVERHEAD + 2 + listing.len() + r.body.len());
    v.extend_from_slice(&RECORD_MAGIC);
    v.push(RECORD_V2);
    v.extend_from_slice(&r.version.0);
    v.extend_from_slice(&r.stamp.mtime_ns.to_le_bytes());
    v.extend_from_slice(r.stamp.write_id.as_bytes());
    v.extend_from_slice(&(listing.len() as u16).to_le_bytes());
    v.extend_from_slice(listing);
    v.extend_from_slice(&r.body);
    let crc = crc_fast::crc32_iscsi(&v);
    v.extend_from_slice(&crc.to_le_bytes());
    v
}

/// Checks and decodes a stored record (see [`encode_record`]).
pub fn decode_record(v: &[u8]) -> Result<Record, DiskError> {
    let (record, listing, body) = decode_envelope(v)?;
    Ok(Record {
        body: Bytes::copy_from_slice(body),
        listing: Bytes::copy_from_slice(listing),
        ..record
    })
}

/// Checks a stored record and splits it into its header (with an empty
/// body and listing) and the listing's and body's bytes, so a caller can
/// place them where it likes.
pub fn decode_envelope(v: &[u8]) -> Result<(Record, &[u8], &[u8]), DiskError> {
    if v.len() < RECORD_OVERHEAD {
        return Err(DiskError::corrupt("record", "too short"));
    }
    let (data, crc) = v.split_at(v.len() - 4);
    if crc_fast::crc32_iscsi(data) != u32::from_le_bytes(crc.try_into().unwrap()) {
        return Err(DiskError::corrupt("record", "checksum mismatch"));
    }
    if data[0..2] != RECORD_MAGIC || !matches!(data[2], RECORD_V1 | RECORD_V2) {
        return Err(DiskError::corrupt("record", "unknown magic or version"));
    }
    let record = Record {
        version: VersionId(data[3..19].try_into().unwrap()),
        stamp: Stamp {
            mtime_ns: u64::from_le_bytes(data[19..27].try_into().unwrap()),
            write_id: Uuid::from_bytes(data[27..43].try_into().unwrap()),
        },
        body: Bytes::new(),
        listing: Bytes::new(),
    };
    let rest = &data[43..];
    if data[2] == RECORD_V1 {
        return Ok((record, &[], rest));
    }
    let Some((len, rest)) = rest.split_first_chunk::<2>() else {
        return Err(DiskError::corrupt("record", "no listing length"));
    };
    let len = u16::from_le_bytes(*len) as usize;
    if rest.len() < len {
        return Err(DiskError::corrupt("record", "listing overruns the record"));
    }
    let (listing, body) = rest.split_at(len);
    Ok((record, listing, body))
}

/// A packed piece as stored: its CRC32C, then its bytes.
pub fn encode_piece(data: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(4 + data.len());
    v.extend_from_slice(&crc_fast::crc32_iscsi(data).to_le_bytes());
    v.extend_from_slice(data);
    v
}

/// Checks and decodes a stored piece (see [`encode_piece`]).
pub fn decode_piece(v: &[u8]) -> Result<Bytes, DiskError> {
    let Some((crc, data)) = v.split_first_chunk::<4>() else {
        return Err(DiskError::corrupt("piece", "too short"));
    };
    if crc_fast::crc32_iscsi(data) != u32::from_le_bytes(*crc) {
        return Err(DiskError::corrupt("piece", "checksum mismatch"));
    }
    Ok(Bytes::copy_from_slice(data))
}
