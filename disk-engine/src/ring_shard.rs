//! Shard files through the disk's io_uring: the writer streams blocks from
//! the registered buffer pool with several writes in flight, the reader
//! keeps recently used shard files open and reads whole aligned blocks.
//! With `direct`, files are opened with O_DIRECT, so neither path copies
//! through the page cache.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::Mutex;

use crate::disk::ShardWriter;
use crate::error::DiskError;
use crate::io::buf::{AlignedBuf, IO_ALIGN};
use crate::io::ring::{IoBuf, Pending, Ring};
use crate::messages::ShardSummary;
use crate::shard_file::ShardFileReader;
use crate::staging::Staging;
use crate::types::ShardId;
use disk_format::shard_layout::{block_checksum, encode_tail, Header, HEADER_LEN};

/// Pool-buffer writes in flight per shard writer (× 256 KiB).
const WRITES_IN_FLIGHT: usize = 8;
/// Shard files kept open per disk for reads.
const OPEN_SHARDS: usize = 256;
/// How far ahead of the data a direct-I/O shard file is allocated.
const ALLOCATE_AHEAD: u64 = 16 << 20;
/// Free space (beyond the metadata reserve) below which shard files are
/// not preallocated.
const PREALLOCATE_ONLY_ABOVE: u64 = 64 * ALLOCATE_AHEAD;
/// Largest single read submitted to the ring; longer reads are split.
const MAX_READ: usize = 1 << 30;

/// Opens a shard file for the ring: O_DIRECT when `direct`.
pub(crate) fn open_file(path: &Path, direct: bool, create: bool) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    if create {
        o.create_new(true).write(true).read(true);
    } else {
        o.read(true);
    }
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path)
}

/// Whether files under `dir` can be written and read with O_DIRECT: tries
/// it on a scratch file. Blocking.
pub(crate) fn probe_direct(dir: &Path) -> Result<(), String> {
    let path = dir.join(format!(".direct-probe-{}", uuid::Uuid::new_v4().simple()));
    let result = (|| {
        use std::os::unix::fs::FileExt;
        let f = open_file(&path, true, true)?;
        let mut buf = AlignedBuf::zeroed(IO_ALIGN);
        buf.full_mut()[0] = 1;
        f.write_at(buf.as_ref(), 0)?;
        f.read_at(buf.full_mut(), 0)?;
        Ok::<_, std::io::Error>(())
    })();
    let _ = std::fs::remove_file(&path);
    result.map_err(|e| e.to_string())
}

/// Writes one shard file through the ring.
pub(crate) struct RingShardWriter {
    ring: Arc<Ring>,
    file: Arc<File>,
    block_size: u64,
    data_len: u64,
    checksums: Vec<u64>,
    short_block_seen: bool,
    in_flight: VecDeque<(Pending, u32)>,
    failed: bool,
    /// File bytes allocated ahead of the data (direct I/O only; `None`
    /// once the filesystem refused to preallocate).
    allocated: Option<u64>,
    root: PathBuf,
    reserve: u64,
    staging: Staging,
    reads: Arc<OpenShards>,
}

impl RingShardWriter {
    /// Creates the file in `staging`'s temporary place and writes its header.
    pub async fn create(
        ring: Arc<Ring>,
        header: Header,
        direct: bool,
        root: PathBuf,
        reserve: u64,
        staging: Staging,
        reads: Arc<OpenShards>,
    ) -> Result<RingShardWriter, DiskError> {
        let tmp = staging.tmp().to_path_buf();
        let file = tokio::task::spawn_blocking(move || open_file(&tmp, direct, true))
            .await
            .map_err(|e| DiskError::Io(std::io::Error::other(e)))??;
        let mut w = RingShardWriter {
            ring,
            file: Arc::new(file),
            block_size: header.block_size as u64,
            data_len: 0,
            checksums: Vec::new(),
            short_block_seen: false,
            in_flight: VecDeque::new(),
            failed: false,
            allocated: direct.then_some(0),
            root,
            reserve,
            staging,
            reads,
        };
        let mut buf = w.ring.pool().acquire().await;
        let len = buf.fill_padded(&header.encode());
        w.submit(IoBuf::Pool(buf), len, 0).await?;
        Ok(w)
    }

    async fn submit(&mut self, buf: IoBuf, len: usize, offset: u64) -> Result<(), DiskError> {
        while self.in_flight.len() >= WRITES_IN_FLIGHT {
            self.complete_oldest().await?;
        }
        let p = self
            .ring
            .start_write(self.file.clone(), buf, len as u32, offset)
            .await;
        self.in_flight.push_back((p, len as u32));
        Ok(())
    }

    async fn complete_oldest(&mut self) -> Result<(), DiskError> {
        let Some((p, len)) = self.in_flight.pop_front() else {
            return Ok(());
        };
        match p.wait().await {
            (_, Ok(n)) if n == len => Ok(()),
            (_, Ok(n)) => {
                self.failed = true;
                Err(DiskError::Io(std::io::Error::other(format!(
                    "short write: {n} of {len} bytes"
                ))))
            }
            (_, Err(e)) => {
                self.failed = true;
                Err(e.into())
            }
        }
    }
}

#[async_trait]
impl ShardWriter for RingShardWriter {
    async fn append(&mut self, block: Bytes) -> Result<(), DiskError> {
        if self.failed {
            return Err(DiskError::InvalidArgument(
                "shard writer used after a failed append".into(),
            ));
        }
        if block.is_empty() || block.len() as u64 > self.block_size || self.short_block_seen {
            return Err(DiskError::InvalidArgument(format!(
                "block of {} bytes in a shard of {}-byte blocks (after a short block: {})",
                block.len(),
                self.block_size,
                self.short_block_seen
            )));
        }
        let free = crate::io::room_for_data(&self.root, self.reserve, block.len() as u64)
            .inspect_err(|e| self.failed |= matches!(e, DiskError::Full))?;
        self.checksums.push(block_checksum(&block));
        let mut offset = HEADER_LEN + self.data_len;
        // statvfs above and fallocate here are metadata calls of a few
        // microseconds, once per block and once per 16 MiB: made inline
        // rather than paying a blocking-pool round trip for each.
        if let Some(allocated) = self.allocated {
            let end = offset + block.len() as u64;
            // Only with room to spare: near a full disk, preallocation
            // would eat the free space other shards' writes are checked
            // against, so appends extend the file there as before.
            let roomy = free > self.reserve + PREALLOCATE_ONLY_ABOVE;
            if end > allocated && roomy {
                let upto = end.next_multiple_of(ALLOCATE_AHEAD);
                match crate::io::allocate(&self.file, allocated, upto - allocated) {
                    Ok(()) => self.allocated = Some(upto),
                    Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
                        self.failed = true;
                        return Err(DiskError::Full);
                    }
                    // Not supported here: plain extending writes.
                    Err(_) => self.allocated = None,
                }
            }
        }
        for chunk in block.chunks(self.ring.pool().buf_size()) {
            let mut buf = self.ring.pool().acquire().await;
            let len = buf.fill_padded(chunk);
            self.submit(IoBuf::Pool(buf), len, offset).await?;
            offset += chunk.len() as u64;
        }
        self.data_len += block.len() as u64;
        self.short_block_seen = (block.len() as u64) < self.block_size;
        Ok(())
    }

    async fn finish(mut self: Box<Self>) -> Result<ShardSummary, DiskError> {
        if self.failed {
            return Err(DiskError::InvalidArgument(
                "shard writer used after a failed append".into(),
            ));
        }
        let (table_offset, tail) = encode_tail(&self.checksums, self.data_len);
        let mut buf = AlignedBuf::zeroed(tail.len());
        buf.full_mut()[..tail.len()].copy_from_slice(&tail);
        let padded = buf.capacity();
        self.submit(IoBuf::Heap(buf), padded, table_offset).await?;
        while !self.in_flight.is_empty() {
            self.complete_oldest().await?;
        }
        let file = self.file.clone();
        let size = table_offset + tail.len() as u64;
        let mut staging = self.staging.take();
        let id = staging.id();
        tokio::task::spawn_blocking(move || {
            // The tail was written padded to the alignment; cut it to size.
            file.set_len(size)?;
            staging.publish(&file)
        })
        .await
        .map_err(|e| DiskError::Io(std::io::Error::other(e)))??;
        // A repair may have rewritten a shard that readers hold open.
        self.reads.forget(id);
        Ok(ShardSummary { len: self.data_len })
    }
}

/// An open shard file and where it lives (to notice deletion or
/// replacement behind the cache's back).
struct OpenShard {
    reader: ShardFileReader,
    inode: u64,
}

/// Shard files recently read, kept open (bounded, least recently used
/// closed first).
pub(crate) struct OpenShards {
    files: Mutex<lru::LruCache<ShardId, Arc<OpenShard>>>,
}

impl OpenShards {
    pub fn new() -> OpenShards {
        OpenShards {
            files: Mutex::new(lru::LruCache::new(
                std::num::NonZeroUsize::new(OPEN_SHARDS).expect("non-zero"),
            )),
        }
    }

    /// Drops a shard from the cache (deleted or rewritten).
    pub fn forget(&self, id: ShardId) {
        self.files.lock().pop(&id);
    }

    async fn open(
        &self,
        id: ShardId,
        path: PathBuf,
        direct: bool,
    ) -> Result<Arc<OpenShard>, DiskError> {
        let cached = self.files.lock().get(&id).cloned();
        let p = path.clone();
        let (cached, opened) = tokio::task::spawn_blocking(move || {
            // The path must still name the file we hold open; otherwise the
            // shard was deleted or replaced and the cached handle is stale.
            let inode = std::fs::metadata(&p)?.ino();
            if let Some(c) = cached.filter(|c| c.inode == inode) {
                return Ok::<_, DiskError>((Some(c), None));
            }
            let reader = ShardFileReader::open_shard(open_file(&p, direct, false)?, id)?;
            Ok((None, Some(Arc::new(OpenShard { reader, inode }))))
        })
        .await
        .map_err(|e| DiskError::Io(std::io::Error::other(e)))?
        .inspect_err(|_| self.forget(id))?;
        if let Some(c) = cached {
            return Ok(c);
        }
        let o = opened.expect("opened when not cached");
        self.files.lock().put(id, o.clone());
        Ok(o)
    }

    /// Reads `len` bytes of shard data at `offset` through the ring,
    /// verifying every block the range touches.
    pub async fn read(
        &self,
        ring: &Ring,
        id: ShardId,
        path: PathBuf,
        direct: bool,
        offset: u64,
        len: u64,
    ) -> Result<Bytes, DiskError> {
        let shard = self.open(id, path, direct).await?;
        let r = &shard.reader;
        let span = r.span(offset, len)?;
        if len == 0 {
            return Ok(Bytes::new());
        }
        let mut buf = AlignedBuf::zeroed(span.read_len);
        let mut got = 0usize;
        // One read normally; more only if the kernel returns a short one
        // or the span exceeds what one request may carry.
        while got < span.read_len {
            let part = (span.read_len - got).min(MAX_READ);
            let (b, n) = ring
                .read(
                    r.file().clone(),
                    buf,
                    got,
                    part as u32,
                    span.file_offset + got as u64,
                )
                .await;
            buf = b;
            let n = n? as usize;
            got += n;
            if n == 0 {
                break;
            }
        }
        r.verify(&span, buf, got)
    }
}
