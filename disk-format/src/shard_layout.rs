//! The bytes of one shard file, apart from the file itself: its header and
//! its tail (checksum table and footer). disk-engine writes and reads the
//! files with these.
//!
//! ```text
//! 0       4 KiB header: magic, format version, block size, shard id, index, CRC32C
//! 4096    block 0, block 1, ... (each `block_size` bytes; only the last may be shorter)
//! T       checksum table: one CRC64-NVME per block   (T = data end rounded up to 4 KiB)
//! end-40  footer: table offset, block count, data length, magic, CRC32C of table+footer
//! ```
//!
//! Header and blocks are 4 KiB-aligned and the block size is recorded in the
//! header, so the same files can be read with O_DIRECT. The table goes last
//! because the shard's length is unknown until the stream ends; a file
//! without a valid footer is incomplete and is never made visible.
//!
//! The footer's lengths are checked against each other and the file's size
//! (with checked arithmetic: a corrupt length is `Corrupt`, never an
//! overflow) before the table is read, and the table with the footer
//! against their checksum after.

use crc_fast::CrcAlgorithm;

use crate::error::DiskError;
use crate::types::ShardId;

/// Alignment of the header, of every block and of the table.
pub const BLOCK_ALIGN: usize = 4096;
/// Largest block size a shard file may declare.
pub const MAX_BLOCK_SIZE: usize = 16 << 20;
/// Bytes before the first block.
pub const HEADER_LEN: u64 = BLOCK_ALIGN as u64;
/// Bytes of the footer, the file's last.
pub const FOOTER_LEN: usize = 40;
/// Bytes of the header that hold anything (the rest of its 4 KiB is zero).
pub const HEADER_USED: usize = 64;
const HEADER_MAGIC: &[u8; 8] = b"GRNYSHRD";
const FOOTER_MAGIC: &[u8; 8] = b"GRNYTAIL";
const FORMAT_VERSION: u32 = 1;
const CHECKSUM_CRC64NVME: u8 = 1;
/// Where the footer's CRC32C sits, counted back from the tail's end (4
/// zero bytes follow it).
const TAIL_CRC_BACK: usize = 8;

/// Bitrot checksum of one block.
pub fn block_checksum(data: &[u8]) -> u64 {
    crc_fast::checksum(CrcAlgorithm::Crc64Nvme, data)
}

/// A block size this format can hold: non-zero, 4 KiB-aligned, bounded.
fn valid_block_size(bs: u32) -> bool {
    bs != 0 && (bs as usize).is_multiple_of(BLOCK_ALIGN) && bs as usize <= MAX_BLOCK_SIZE
}

/// `n` rounded up to [`BLOCK_ALIGN`] (`n` is at most a file's size).
pub fn align_up(n: u64) -> u64 {
    n.div_ceil(BLOCK_ALIGN as u64) * BLOCK_ALIGN as u64
}

/// Parsed header of a shard file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Bytes of every block but the last.
    pub block_size: u32,
    /// The shard's id (its file's name).
    pub shard_id: ShardId,
    /// The shard's index in its erasure stripe.
    pub shard_index: u32,
}

impl Header {
    /// Refuses a block size this format cannot hold.
    pub fn check_block_size(&self) -> Result<(), DiskError> {
        if valid_block_size(self.block_size) {
            return Ok(());
        }
        Err(DiskError::InvalidArgument(format!(
            "block size {} must be a non-zero multiple of {BLOCK_ALIGN} up to {MAX_BLOCK_SIZE}",
            self.block_size
        )))
    }

    /// The header's 4 KiB.
    pub fn encode(&self) -> Vec<u8> {
        let mut h = vec![0u8; HEADER_LEN as usize];
        h[0..8].copy_from_slice(HEADER_MAGIC);
        h[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        h[12..16].copy_from_slice(&self.block_size.to_le_bytes());
        h[16..32].copy_from_slice(self.shard_id.0.as_bytes());
        h[32..36].copy_from_slice(&self.shard_index.to_le_bytes());
        h[36] = CHECKSUM_CRC64NVME;
        let crc = crc_fast::crc32_iscsi(&h[0..60]);
        h[60..64].copy_from_slice(&crc.to_le_bytes());
        h
    }

    /// Decodes the header from the file's first [`HEADER_USED`] bytes (or
    /// more).
    pub fn decode(h: &[u8]) -> Result<Header, DiskError> {
        if h.len() < HEADER_USED {
            return Err(DiskError::corrupt("shard header", "short header"));
        }
        if &h[0..8] != HEADER_MAGIC {
            return Err(DiskError::corrupt("shard header", "wrong magic"));
        }
        let crc = u32::from_le_bytes(h[60..64].try_into().unwrap());
        if crc != crc_fast::crc32_iscsi(&h[0..60]) {
            return Err(DiskError::corrupt("shard header", "checksum mismatch"));
        }
        let version = u32::from_le_bytes(h[8..12].try_into().unwrap());
        if version != FORMAT_VERSION || h[36] != CHECKSUM_CRC64NVME {
            return Err(DiskError::corrupt(
                "shard header",
                format!("unsupported version {version}"),
            ));
        }
        if h[37..60].iter().any(|&b| b != 0) {
            return Err(DiskError::corrupt("shard header", "reserved bytes set"));
        }
        let block_size = u32::from_le_bytes(h[12..16].try_into().unwrap());
        if !valid_block_size(block_size) {
            return Err(DiskError::corrupt("shard header", "bad block size"));
        }
        Ok(Header {
            block_size,
            shard_id: ShardId(uuid::Uuid::from_bytes(h[16..32].try_into().unwrap())),
            shard_index: u32::from_le_bytes(h[32..36].try_into().unwrap()),
        })
    }
}

/// The checksum table and footer of a shard holding `data_len` bytes, and
/// the file offset they go at (the end of the data, rounded up to 4 KiB).
pub fn encode_tail(checksums: &[u64], data_len: u64) -> (u64, Vec<u8>) {
    let table_offset = align_up(HEADER_LEN + data_len);
    let mut tail = Vec::with_capacity(checksums.len() * 8 + FOOTER_LEN);
    for c in checksums {
        tail.extend_from_slice(&c.to_le_bytes());
    }
    tail.extend_from_slice(&table_offset.to_le_bytes());
    tail.extend_from_slice(&(checksums.len() as u64).to_le_bytes());
    tail.extend_from_slice(&data_len.to_le_bytes());
    tail.extend_from_slice(FOOTER_MAGIC);
    let crc = crc_fast::crc32_iscsi(&tail);
    tail.extend_from_slice(&crc.to_le_bytes());
    tail.extend_from_slice(&[0u8; 4]);
    (table_offset, tail)
}

/// A footer whose lengths agree with each other, the block size and the
/// file's size: where the tail starts and what the data holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footer {
    table_offset: u64,
    blocks: u64,
    data_len: u64,
}

impl Footer {
    /// Decodes a file's last [`FOOTER_LEN`] bytes, for a file of
    /// `file_size` bytes whose header declares `block_size` (a valid one:
    /// [`Header::decode`] checked it). Its checksum is checked with the
    /// table's, by [`decode_table`].
    pub fn decode(footer: &[u8], file_size: u64, block_size: u32) -> Result<Footer, DiskError> {
        let corrupt = |detail| Err(DiskError::corrupt("shard trailer", detail));
        if footer.len() != FOOTER_LEN {
            return corrupt("short footer");
        }
        if &footer[24..32] != FOOTER_MAGIC {
            return corrupt("wrong magic");
        }
        let word = |at: usize| u64::from_le_bytes(footer[at..at + 8].try_into().unwrap());
        let (table_offset, blocks, data_len) = (word(0), word(8), word(16));
        let data_end = HEADER_LEN
            .checked_add(data_len)
            .and_then(|end| end.checked_next_multiple_of(BLOCK_ALIGN as u64));
        let file_end = blocks
            .checked_mul(8)
            .and_then(|table| table.checked_add(table_offset))
            .and_then(|end| end.checked_add(FOOTER_LEN as u64));
        if block_size == 0
            || data_end != Some(table_offset)
            || file_end != Some(file_size)
            || blocks != data_len.div_ceil(block_size as u64)
        {
            return corrupt("inconsistent lengths");
        }
        Ok(Footer {
            table_offset,
            blocks,
            data_len,
        })
    }

    /// File offset of the checksum table (the tail's start).
    pub fn table_offset(&self) -> u64 {
        self.table_offset
    }

    /// Blocks of data (entries of the table).
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Bytes of shard data.
    pub fn data_len(&self) -> u64 {
        self.data_len
    }

    /// Bytes from the table's start to the file's end (at most the file's
    /// size: [`Footer::decode`] checked it).
    pub fn tail_len(&self) -> usize {
        self.blocks as usize * 8 + FOOTER_LEN
    }
}

/// The block checksums of a tail (`footer.tail_len()` bytes read at
/// `footer.table_offset()`), once the table and footer match their
/// checksum and the footer in it is the one decoded.
pub fn decode_table(tail: &[u8], footer: &Footer) -> Result<Vec<u64>, DiskError> {
    if tail.len() != footer.tail_len() {
        return Err(DiskError::corrupt("shard trailer", "short tail"));
    }
    let table_len = footer.blocks as usize * 8;
    let crc_at = tail.len() - TAIL_CRC_BACK;
    let crc = u32::from_le_bytes(tail[crc_at..crc_at + 4].try_into().unwrap());
    if crc != crc_fast::crc32_iscsi(&tail[..crc_at]) {
        return Err(DiskError::corrupt("shard trailer", "checksum mismatch"));
    }
    let words = [footer.table_offset, footer.blocks, footer.data_len];
    let same = tail[table_len..table_len + 24]
        .chunks_exact(8)
        .zip(words)
        .all(|(c, w)| c == w.to_le_bytes())
        && tail[table_len + 24..table_len + 32] == *FOOTER_MAGIC;
    if !same {
        return Err(DiskError::corrupt("shard trailer", "footer changed"));
    }
    Ok(tail[..table_len]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail_of(bs: u32, data_len: u64) -> (u64, Vec<u8>) {
        let blocks = data_len.div_ceil(bs as u64);
        let checksums: Vec<u64> = (0..blocks).map(|i| i * 31 + 7).collect();
        encode_tail(&checksums, data_len)
    }

    #[test]
    fn a_tail_decodes_to_what_was_encoded() {
        for (bs, data_len) in [(4096, 0), (4096, 1), (4096, 10_000), (1 << 20, 5 << 20)] {
            let (offset, tail) = tail_of(bs, data_len);
            let size = offset + tail.len() as u64;
            let footer = Footer::decode(&tail[tail.len() - FOOTER_LEN..], size, bs).unwrap();
            assert_eq!(
                (footer.table_offset(), footer.data_len()),
                (offset, data_len)
            );
            let checksums = decode_table(&tail, &footer).unwrap();
            assert_eq!(encode_tail(&checksums, data_len), (offset, tail));
        }
    }

    #[test]
    fn corrupt_footer_lengths_are_refused_without_overflow() {
        let (offset, tail) = tail_of(4096, 10_000);
        let size = offset + tail.len() as u64;
        let at = tail.len() - FOOTER_LEN;
        for (field, value) in [
            (16, u64::MAX),
            (16, u64::MAX - 4095),
            (8, u64::MAX),
            (0, u64::MAX),
        ] {
            let mut footer = tail[at..].to_vec();
            footer[field..field + 8].copy_from_slice(&value.to_le_bytes());
            assert!(matches!(
                Footer::decode(&footer, size, 4096),
                Err(DiskError::Corrupt { .. })
            ));
        }
    }

    #[test]
    fn a_header_round_trips() {
        let h = Header {
            block_size: 1 << 20,
            shard_id: ShardId(uuid::Uuid::from_u128(7)),
            shard_index: 3,
        };
        assert_eq!(Header::decode(&h.encode()).unwrap(), h);
        assert!(Header::decode(&h.encode()[..HEADER_USED - 1]).is_err());
        // A reserved byte set, under a checksum that covers it: refused
        // (encoding writes zeros there, so it is no header this wrote).
        let mut set = h.encode();
        set[40] = 1;
        let crc = crc_fast::crc32_iscsi(&set[0..60]);
        set[60..64].copy_from_slice(&crc.to_le_bytes());
        assert!(Header::decode(&set).is_err());
    }

    /// A tail whose footer magic differs, under a checksum that covers it,
    /// is refused (from the review of the shard_file fuzz target).
    #[test]
    fn a_tail_with_another_magic_is_refused() {
        let (offset, mut tail) = tail_of(4096, 10_000);
        let size = offset + tail.len() as u64;
        let footer = Footer::decode(&tail[tail.len() - FOOTER_LEN..], size, 4096).unwrap();
        let at = tail.len() - FOOTER_LEN + 24;
        tail[at] = b'g';
        let crc_at = tail.len() - TAIL_CRC_BACK;
        let crc = crc_fast::crc32_iscsi(&tail[..crc_at]);
        tail[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
        assert!(decode_table(&tail, &footer).is_err());
    }
}
