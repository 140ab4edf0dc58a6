//! The node RPC: the frames of streamed shard bodies, and the
//! MessagePack of every call's arguments and every answer.

use arbitrary::{Arbitrary, Unstructured};
use bytes::Bytes;
use disk_format::format::{DirState, FormatRecord};
use disk_format::messages::{
    DiskHealth, HeadPage, PutRecordOutcome, RecordListOptions, RecordPage, RecordPut, ShardSummary,
    UploadListStart,
};
use disk_format::rpc::auth::{ClusterSecret, FrameKey};
use disk_format::rpc::wire::{self, encode_frame, Frame, FrameReader, WireError};
use disk_format::types::{
    PartEntry, Record, ScannedRecord, ScannedUpload, ShardFile, ShardId, Stamp, UploadEntry,
    VersionId,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use uuid::Uuid;

use crate::input::pieces;

const NONCE: &str = "00112233445566778899aabbccddeeff";

/// The key the targets' streams are signed under.
pub fn stream_key() -> FrameKey {
    ClusterSecret::new("a-cluster-secret-for-the-fuzz-targets")
        .expect("long enough")
        .frame_key(NONCE)
}

/// What a reader cuts out of `pieces`, up to its first error.
fn read_frames(pieces: &[&[u8]]) -> (Vec<Frame>, Option<String>, usize) {
    let mut r = FrameReader::new(stream_key());
    let mut got = Vec::new();
    for p in pieces {
        r.push(p);
        loop {
            match r.next_frame() {
                Ok(Some(f)) => got.push(f),
                Ok(None) => break,
                Err(e) => return (got, Some(e.to_string()), r.pending()),
            }
        }
    }
    let pending = r.pending();
    (got, None, pending)
}

/// Frames drawn from the fuzzer's bytes.
#[derive(Arbitrary, Debug)]
struct Stream {
    data: Vec<Vec<u8>>,
    finish: bool,
}

/// Shard-stream frames: any bytes give the same frames and the same
/// error whole or cut anywhere; frames written under the stream's key
/// are read back exactly, cut anywhere.
pub fn rpc_frames(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        let (cuts, body) = rest.split_at(rest.len().min(16));
        let mut u = Unstructured::new(cuts);
        let (whole, cut) = (read_frames(&[body]), read_frames(&pieces(&mut u, body)));
        assert_eq!(whole.0, cut.0);
        assert_eq!(whole.1, cut.1);
        return;
    }
    let mut u = Unstructured::new(rest);
    let Ok(s) = Stream::arbitrary(&mut u) else {
        return;
    };
    let mut frames: Vec<Frame> = s
        .data
        .into_iter()
        .map(|d| Frame::Data(Bytes::from(d)))
        .collect();
    if s.finish {
        frames.push(Frame::Finish);
    }
    let mut k = stream_key();
    let wire: Vec<u8> = frames
        .iter()
        .flat_map(|f| encode_frame(&mut k, f).to_vec())
        .collect();
    let (got, err, pending) = read_frames(&pieces(&mut u, &wire));
    assert_eq!(err, None);
    assert_eq!(got, frames);
    assert_eq!(pending, 0);
}

/// A message that decodes encodes to bytes that decode to a value
/// encoding the same way (MessagePack's encoding of a value is unique).
fn message<T: Serialize + DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    let v: T = wire::decode(bytes).ok()?;
    let once = wire::encode(&v);
    let again: T = wire::decode(&once).expect("an encoded message decodes");
    assert_eq!(
        wire::encode(&again),
        once,
        "a message decodes to another value"
    );
    Some(v)
}

/// Every call's arguments and every answer a node or a gateway decodes
/// (the first byte picks which), and the heads page's entries.
pub fn rpc_messages(data: &[u8]) {
    let Some((&which, b)) = data.split_first() else {
        return;
    };
    match which % 24 {
        0 => drop(message::<(ShardId, u64, u64)>(b)),
        1 => drop(message::<(Bytes, Bytes)>(b)),
        2 => drop(message::<(Bytes, Bytes, RecordPut)>(b)),
        3 => drop(message::<(Bytes, Bytes, VersionId, Option<Stamp>)>(b)),
        4 => drop(message::<(Bytes, Vec<(Vec<u8>, VersionId)>)>(b)),
        5 => drop(message::<(Bytes, RecordListOptions)>(b)),
        6 => drop(message::<(Bytes, UploadEntry)>(b)),
        7 => drop(message::<(Bytes, Bytes, Uuid)>(b)),
        8 => drop(message::<(Bytes, Bytes, UploadListStart, usize)>(b)),
        9 => drop(message::<(Bytes, Bytes, Uuid, PartEntry, Vec<Uuid>)>(b)),
        10 => drop(message::<(Vec<Uuid>, Uuid)>(b)),
        11 => drop(message::<(Option<ShardId>, usize)>(b)),
        12 => drop(message::<(Option<Vec<u8>>, usize)>(b)),
        13 => drop(message::<(Uuid, u32, usize)>(b)),
        14 => drop(message::<(Vec<Vec<u8>>, Uuid, u64)>(b)),
        15 => drop(message::<RecordPage>(b)),
        16 => {
            if let Some(page) = message::<HeadPage>(b) {
                for i in 0..page.spans.len() {
                    let _ = page.entry(i);
                }
            }
        }
        17 => drop(message::<PutRecordOutcome>(b)),
        18 => drop(message::<Vec<Record>>(b)),
        19 => drop(message::<DiskHealth>(b)),
        20 => drop(message::<WireError>(b)),
        21 => drop(message::<(ShardSummary, DirState, Option<FormatRecord>)>(b)),
        22 => drop(message::<(Vec<ShardFile>, Vec<ScannedRecord>)>(b)),
        _ => drop(message::<Vec<ScannedUpload>>(b)),
    }
}
