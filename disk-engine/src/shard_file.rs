//! One shard file's blocking writer and reader. The bytes of its header,
//! checksum table and footer are `disk_format::shard_layout`'s; this file
//! puts them on disk, reads them back and verifies blocks as they are
//! read (aligned, so the same files can be read with O_DIRECT).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use std::sync::Arc;

use bytes::Bytes;

use crate::error::DiskError;
use crate::io::buf::AlignedBuf;
use crate::types::ShardId;
use disk_format::shard_layout::{
    align_up, block_checksum, decode_table, encode_tail, Footer, Header, BLOCK_ALIGN, FOOTER_LEN,
    HEADER_LEN, HEADER_USED,
};

/// Parsed trailer: where the data ends and each block's checksum.
#[derive(Clone, Debug)]
pub(crate) struct Trailer {
    pub data_len: u64,
    pub checksums: Vec<u64>,
}

/// Writes one shard file block by block. Blocking.
pub(crate) struct ShardFileWriter {
    file: File,
    block_size: u64,
    data_len: u64,
    checksums: Vec<u64>,
    short_block_seen: bool,
}

impl ShardFileWriter {
    /// Creates the file (which must not exist) and writes its header.
    pub fn create(file: File, header: &Header) -> Result<Self, DiskError> {
        header.check_block_size()?;
        file.write_all_at(&header.encode(), 0)?;
        Ok(ShardFileWriter {
            file,
            block_size: header.block_size as u64,
            data_len: 0,
            checksums: Vec::new(),
            short_block_seen: false,
        })
    }

    /// Appends one block. Every block but the last must be exactly
    /// `block_size` long.
    pub fn append_block(&mut self, block: &[u8]) -> Result<(), DiskError> {
        if block.is_empty() || block.len() as u64 > self.block_size {
            return Err(DiskError::InvalidArgument(format!(
                "block of {} bytes in a shard of {}-byte blocks",
                block.len(),
                self.block_size
            )));
        }
        if self.short_block_seen {
            return Err(DiskError::InvalidArgument(
                "block appended after a short (final) block".into(),
            ));
        }
        self.file.write_all_at(block, HEADER_LEN + self.data_len)?;
        self.checksums.push(block_checksum(block));
        self.data_len += block.len() as u64;
        self.short_block_seen = (block.len() as u64) < self.block_size;
        Ok(())
    }

    /// Bytes of shard data appended so far.
    pub fn data_len(&self) -> u64 {
        self.data_len
    }

    /// Writes the checksum table and footer; with `fsync`, makes the file
    /// durable.
    pub fn finish(self, fsync: bool) -> Result<(File, u64), DiskError> {
        let (table_offset, tail) = encode_tail(&self.checksums, self.data_len);
        self.file.write_all_at(&tail, table_offset)?;
        if fsync {
            self.file.sync_data()?;
        }
        Ok((self.file, self.data_len))
    }
}

/// Reads `len` bytes at `offset` with an aligned read covering them, so the
/// same call works on files opened with O_DIRECT. Blocking.
fn read_exact_aligned(file: &File, offset: u64, len: usize) -> Result<Vec<u8>, DiskError> {
    let start = offset - offset % BLOCK_ALIGN as u64;
    let lead = (offset - start) as usize;
    let mut buf = AlignedBuf::zeroed(lead + len);
    let want = buf.capacity();
    let got = read_full(file, buf.full_mut(), start)?;
    if got < lead + len {
        return Err(DiskError::corrupt("shard file", "truncated"));
    }
    debug_assert!(got <= want);
    Ok(buf.full_mut()[lead..lead + len].to_vec())
}

/// Reads until `buf` is full or the file ends; returns the bytes read.
fn read_full(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Where in the file a data read goes: whole, aligned blocks covering the
/// requested bytes, so they can be verified and read with O_DIRECT.
pub(crate) struct ReadSpan {
    /// File offset of the first covered block.
    pub file_offset: u64,
    /// Aligned bytes to read.
    pub read_len: usize,
    /// Bytes of shard data the read holds (the rest is padding or table).
    data_len: usize,
    first_block: u64,
    /// The requested bytes within the read.
    want: std::ops::Range<usize>,
}

/// An open, validated shard file ready for reads; the data may be read
/// here (blocking) or through a ring with [`ShardFileReader::span`] and
/// [`ShardFileReader::verify`].
pub(crate) struct ShardFileReader {
    file: Arc<File>,
    header: Header,
    trailer: Trailer,
}

impl ShardFileReader {
    /// Opens a complete shard file, checking header and trailer.
    pub fn open(file: File) -> Result<Self, DiskError> {
        let size = file.metadata()?.len();
        if size < HEADER_LEN + FOOTER_LEN as u64 {
            return Err(DiskError::corrupt("shard file", "too short"));
        }
        let head = read_exact_aligned(&file, 0, HEADER_USED)?;
        let header = Header::decode(&head)?;
        let footer = read_exact_aligned(&file, size - FOOTER_LEN as u64, FOOTER_LEN)?;
        let footer = Footer::decode(&footer, size, header.block_size)?;
        let tail = read_exact_aligned(&file, footer.table_offset(), footer.tail_len())?;
        let checksums = decode_table(&tail, &footer)?;
        Ok(ShardFileReader {
            file: Arc::new(file),
            header,
            trailer: Trailer {
                data_len: footer.data_len(),
                checksums,
            },
        })
    }

    /// [`ShardFileReader::open`], and the header must name shard `id`.
    pub fn open_shard(file: File, id: ShardId) -> Result<Self, DiskError> {
        let r = ShardFileReader::open(file)?;
        if r.header.shard_id != id {
            return Err(DiskError::corrupt(
                "shard header",
                "holds another shard's id",
            ));
        }
        Ok(r)
    }

    #[cfg(test)]
    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn data_len(&self) -> u64 {
        self.trailer.data_len
    }

    /// The open file.
    pub fn file(&self) -> &Arc<File> {
        &self.file
    }

    /// The aligned read that covers `len` bytes of shard data at `offset`.
    pub fn span(&self, offset: u64, len: u64) -> Result<ReadSpan, DiskError> {
        let end = offset
            .checked_add(len)
            .filter(|&e| e <= self.trailer.data_len)
            .ok_or_else(|| {
                DiskError::InvalidArgument(format!(
                    "read {offset}+{len} past shard end {}",
                    self.trailer.data_len
                ))
            })?;
        let bs = self.header.block_size as u64;
        let first = offset / bs;
        let last = end.saturating_sub(1) / bs;
        let span_start = first * bs;
        let span_end = if len == 0 {
            span_start
        } else {
            ((last + 1) * bs).min(self.trailer.data_len)
        };
        let a = (offset - span_start) as usize;
        Ok(ReadSpan {
            file_offset: HEADER_LEN + span_start,
            read_len: align_up(span_end - span_start) as usize,
            data_len: (span_end - span_start) as usize,
            first_block: first,
            want: a..a + len as usize,
        })
    }

    /// Checks the blocks a span's read brought in (`got` bytes of `buf`)
    /// and returns the requested bytes without copying. Returns `Corrupt`
    /// naming the first bad block; never returns unverified bytes.
    pub fn verify(&self, span: &ReadSpan, buf: AlignedBuf, got: usize) -> Result<Bytes, DiskError> {
        if got < span.data_len {
            return Err(DiskError::corrupt("shard file", "truncated"));
        }
        let bs = self.header.block_size as usize;
        let data = &buf.as_ref()[..span.data_len];
        for (i, block) in data.chunks(bs).enumerate() {
            let n = span.first_block as usize + i;
            if block_checksum(block) != self.trailer.checksums[n] {
                return Err(DiskError::corrupt(
                    "shard block",
                    format!(
                        "block {n} of shard {} fails its checksum",
                        self.header.shard_id
                    ),
                ));
            }
        }
        Ok(Bytes::from_owner(buf).slice(span.want.clone()))
    }

    /// Reads `len` bytes of shard data at `offset`, verifying the checksum of
    /// every block the range touches. Blocking.
    pub fn read(&self, offset: u64, len: u64) -> Result<Bytes, DiskError> {
        let span = self.span(offset, len)?;
        if len == 0 {
            return Ok(Bytes::new());
        }
        let mut buf = AlignedBuf::zeroed(span.read_len);
        let got = read_full(&self.file, buf.full_mut(), span.file_offset)?;
        self.verify(&span, buf, got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    fn write(path: &std::path::Path, bs: u32, data: &[u8]) {
        let f = OpenOptions::new()
            .create_new(true)
            .write(true)
            .read(true)
            .open(path)
            .unwrap();
        let mut w = ShardFileWriter::create(
            f,
            &Header {
                block_size: bs,
                shard_id: ShardId(uuid::Uuid::nil()),
                shard_index: 3,
            },
        )
        .unwrap();
        for c in data.chunks(bs as usize) {
            w.append_block(c).unwrap();
        }
        w.finish(true).unwrap();
    }

    #[test]
    fn round_trip_every_range_shape() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s");
        let data: Vec<u8> = (0..(3 * 4096 + 17)).map(|i| (i * 7 % 251) as u8).collect();
        write(&p, 4096, &data);
        let r = ShardFileReader::open(File::open(&p).unwrap()).unwrap();
        assert_eq!(r.data_len(), data.len() as u64);
        assert_eq!(r.header().shard_index, 3);
        for (off, len) in [
            (0, data.len()),
            (0, 1),
            (4095, 2),
            (8192, 4113),
            (12288, 17),
            (5, 0),
        ] {
            let got = r.read(off as u64, len as u64).unwrap();
            assert_eq!(&got[..], &data[off..off + len], "{off}+{len}");
        }
        assert!(matches!(
            r.read(0, data.len() as u64 + 1),
            Err(DiskError::InvalidArgument(_))
        ));
    }

    #[test]
    fn flipped_byte_is_detected_in_its_block_only() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s");
        let data = vec![9u8; 4 * 4096];
        write(&p, 4096, &data);
        let f = OpenOptions::new().write(true).open(&p).unwrap();
        f.write_all_at(&[8], HEADER_LEN + 2 * 4096 + 100).unwrap();
        let r = ShardFileReader::open(File::open(&p).unwrap()).unwrap();
        assert!(r.read(0, 8192).is_ok());
        assert!(matches!(r.read(8192, 10), Err(DiskError::Corrupt { .. })));
        assert!(matches!(
            r.read(0, 4 * 4096),
            Err(DiskError::Corrupt { .. })
        ));
    }

    #[test]
    fn truncated_or_unfinished_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s");
        write(&p, 4096, &[1u8; 10000]);
        let len = std::fs::metadata(&p).unwrap().len();
        let f = OpenOptions::new().write(true).open(&p).unwrap();
        f.set_len(len - 3).unwrap();
        assert!(ShardFileReader::open(File::open(&p).unwrap()).is_err());
    }

    /// A footer whose lengths are corrupt (here a data length near the
    /// top of u64, so the table's offset would overflow) is refused as
    /// corrupt before its checksum is looked at, never a panic.
    #[test]
    fn a_footer_with_overflowing_lengths_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s");
        write(&p, 4096, &[1u8; 10000]);
        let len = std::fs::metadata(&p).unwrap().len();
        let f = OpenOptions::new().write(true).open(&p).unwrap();
        for data_len in [u64::MAX, u64::MAX - 4095, u64::MAX - 4096 - 100] {
            let at = len - FOOTER_LEN as u64 + 16;
            f.write_all_at(&data_len.to_le_bytes(), at).unwrap();
            assert!(matches!(
                ShardFileReader::open(File::open(&p).unwrap()),
                Err(DiskError::Corrupt { .. })
            ));
        }
    }

    #[test]
    fn only_the_last_block_may_be_short() {
        let dir = tempfile::tempdir().unwrap();
        let f = File::create(dir.path().join("s")).unwrap();
        let mut w = ShardFileWriter::create(
            f,
            &Header {
                block_size: 4096,
                shard_id: ShardId(uuid::Uuid::nil()),
                shard_index: 0,
            },
        )
        .unwrap();
        w.append_block(&[1; 100]).unwrap();
        assert!(w.append_block(&[1; 100]).is_err());
    }
}
