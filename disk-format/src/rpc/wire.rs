//! What travels between gateway and node: calls and answers encoded with
//! MessagePack, errors as [`WireError`], and the framing of streamed shard
//! bodies (each frame carries its own authentication tag, see
//! [`super::auth::FrameKey`]; the last one says "finish").

use bytes::{BufMut, Bytes, BytesMut};
use serde::{Deserialize, Serialize};

use super::auth::{FrameKey, FRAME_TAG};
use crate::error::DiskError;

/// Path prefix of every call; the operation's name follows. A node and a
/// gateway of different wire versions refuse each other's calls (v3: format
/// records carry their pool's set count).
pub const PATH_PREFIX: &str = "/rpc/v3/";
/// Header naming the disk (its directory on the node) a call is for.
pub const DISK: &str = "x-granary-disk";
/// Header of an answer: `ok` (the body is the value) or `err` (a [`WireError`]).
pub const RESULT: &str = "x-granary-result";
/// Most bytes one frame of a streamed body carries.
pub const MAX_FRAME: usize = 16 << 20;
/// Most bytes of a unary call's body.
pub const MAX_UNARY_BODY: usize = 64 << 20;

/// A [`DiskError`] as it crosses the wire.
#[derive(Debug, Serialize, Deserialize)]
pub enum WireError {
    /// [`DiskError::Offline`].
    Offline(String),
    /// [`DiskError::NotFound`].
    NotFound,
    /// [`DiskError::Corrupt`].
    Corrupt(String, String),
    /// [`DiskError::Full`].
    Full,
    /// [`DiskError::InvalidArgument`].
    InvalidArgument(String),
    /// [`DiskError::Format`].
    Format(String),
    /// [`DiskError::Io`].
    Io(String),
    /// [`DiskError::Meta`].
    Meta(String),
}

impl From<&DiskError> for WireError {
    fn from(e: &DiskError) -> Self {
        match e {
            DiskError::Offline(s) => WireError::Offline(s.clone()),
            DiskError::NotFound => WireError::NotFound,
            DiskError::Corrupt { what, detail } => {
                WireError::Corrupt(what.to_string(), detail.clone())
            }
            DiskError::Full => WireError::Full,
            DiskError::InvalidArgument(s) => WireError::InvalidArgument(s.clone()),
            DiskError::Format(s) => WireError::Format(s.clone()),
            DiskError::Io(e) => WireError::Io(e.to_string()),
            DiskError::Meta(s) => WireError::Meta(s.clone()),
        }
    }
}

impl From<WireError> for DiskError {
    fn from(e: WireError) -> Self {
        match e {
            WireError::Offline(s) => DiskError::Offline(s),
            WireError::NotFound => DiskError::NotFound,
            // The structure's name is static on the node's side; here it
            // travels in the detail.
            WireError::Corrupt(what, detail) => {
                DiskError::corrupt("remote data", format!("{what}: {detail}"))
            }
            WireError::Full => DiskError::Full,
            WireError::InvalidArgument(s) => DiskError::InvalidArgument(s),
            WireError::Format(s) => DiskError::Format(s),
            WireError::Io(s) => DiskError::Io(std::io::Error::other(s)),
            WireError::Meta(s) => DiskError::Meta(s),
        }
    }
}

/// Encodes a call's arguments or an answer's value.
pub fn encode<T: Serialize>(value: &T) -> Bytes {
    Bytes::from(rmp_serde::to_vec(value).expect("wire values serialise"))
}

/// Decodes what [`encode`] made.
pub fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, DiskError> {
    rmp_serde::from_slice(bytes).map_err(|e| DiskError::corrupt("rpc message", e.to_string()))
}

/// One frame of a streamed body.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A block of shard data.
    Data(Bytes),
    /// The writer finished: make the shard durable and visible.
    Finish,
}

const KIND_DATA: u8 = 1;
const KIND_FINISH: u8 = 2;
const HEADER: usize = 5 + FRAME_TAG;

/// Encodes the next frame of a stream: kind (1 byte), length (4), tag
/// ([`FRAME_TAG`] bytes, under the stream's key and the frame's place in
/// it), payload.
pub fn encode_frame(key: &mut FrameKey, frame: &Frame) -> Bytes {
    let (kind, payload): (u8, &[u8]) = match frame {
        Frame::Data(b) => (KIND_DATA, b),
        Frame::Finish => (KIND_FINISH, &[]),
    };
    let mut out = BytesMut::with_capacity(HEADER + payload.len());
    out.put_u8(kind);
    out.put_u32(payload.len() as u32);
    out.extend_from_slice(&key.tag(kind, payload));
    out.extend_from_slice(payload);
    out.freeze()
}

/// Cuts frames out of a body arriving in arbitrary chunks, checking each
/// one's tag.
pub struct FrameReader {
    key: FrameKey,
    buf: BytesMut,
}

impl FrameReader {
    /// A reader of the stream whose frames are signed under `key`.
    pub fn new(key: FrameKey) -> FrameReader {
        FrameReader {
            key,
            buf: BytesMut::new(),
        }
    }

    /// Adds received bytes.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete frame, if one has arrived; an error for a frame
    /// that is malformed or whose tag is wrong (altered, out of place, or
    /// from another stream).
    pub fn next_frame(&mut self) -> Result<Option<Frame>, DiskError> {
        if self.buf.len() < HEADER {
            return Ok(None);
        }
        let kind = self.buf[0];
        let len = u32::from_be_bytes(self.buf[1..5].try_into().unwrap()) as usize;
        if len > MAX_FRAME {
            return Err(DiskError::corrupt(
                "rpc frame",
                format!("{len} bytes is too long"),
            ));
        }
        if self.buf.len() < HEADER + len {
            self.buf.reserve(HEADER + len - self.buf.len());
            return Ok(None);
        }
        let head = self.buf.split_to(HEADER);
        let payload = self.buf.split_to(len).freeze();
        if !self.key.verify(kind, &payload, &head[5..]) {
            return Err(DiskError::corrupt(
                "rpc frame",
                "authentication tag mismatch (altered or out of place)",
            ));
        }
        match kind {
            KIND_DATA => Ok(Some(Frame::Data(payload))),
            KIND_FINISH if len == 0 => Ok(Some(Frame::Finish)),
            _ => Err(DiskError::corrupt(
                "rpc frame",
                format!("unknown kind {kind}"),
            )),
        }
    }

    /// Bytes received but not yet part of a complete frame.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::rpc::auth::ClusterSecret;

    fn secret() -> ClusterSecret {
        ClusterSecret::new("a-cluster-secret-of-some-length").unwrap()
    }

    #[test]
    fn frames_survive_any_chunking_and_damage_is_caught() {
        let nonce = "00112233445566778899aabbccddeeff";
        let frames = [
            Frame::Data(Bytes::from(vec![7u8; 5000])),
            Frame::Data(Bytes::from_static(b"x")),
            Frame::Finish,
        ];
        let mut key = secret().frame_key(nonce);
        let wire: Vec<u8> = frames
            .iter()
            .flat_map(|f| encode_frame(&mut key, f).to_vec())
            .collect();
        for chunk in [1, 3, 9, 4096, wire.len()] {
            let mut r = FrameReader::new(secret().frame_key(nonce));
            let mut got = Vec::new();
            for c in wire.chunks(chunk) {
                r.push(c);
                while let Some(f) = r.next_frame().unwrap() {
                    got.push(f);
                }
            }
            assert_eq!(got, frames);
            assert_eq!(r.pending(), 0);
        }
        let mut bad = wire.clone();
        bad[100] ^= 1;
        let mut r = FrameReader::new(secret().frame_key(nonce));
        r.push(&bad);
        assert!(r.next_frame().is_err());
        // The frames of another stream (another nonce) do not pass.
        let mut r = FrameReader::new(secret().frame_key("ffeeddccbbaa99887766554433221100"));
        r.push(&wire);
        assert!(r.next_frame().is_err());
    }

    /// What an on-path attacker can do to a frame that carries only a
    /// checksum: rewrite the payload and recompute the checksum. The tag
    /// needs the cluster secret.
    #[test]
    fn a_rewritten_shard_frame_with_a_recomputed_checksum_is_refused() {
        let nonce = "00112233445566778899aabbccddeeff";
        let mut key = secret().frame_key(nonce);
        let genuine = encode_frame(&mut key, &Frame::Data(Bytes::from(vec![0xAA; 4096])));
        let mut forged = genuine.to_vec();
        for b in &mut forged[HEADER..] {
            *b = 0xBB;
        }
        // The attacker's best guess at a tag without the secret: the tag
        // of its own payload under another key.
        let mut guess = ClusterSecret::new("the-attacker-does-not-know-it")
            .unwrap()
            .frame_key(nonce);
        let retagged = encode_frame(&mut guess, &Frame::Data(Bytes::from(vec![0xBB; 4096])));
        for attempt in [forged, retagged.to_vec()] {
            let mut r = FrameReader::new(secret().frame_key(nonce));
            r.push(&attempt);
            assert!(r.next_frame().is_err());
        }
        let mut r = FrameReader::new(secret().frame_key(nonce));
        r.push(&genuine);
        assert_eq!(
            r.next_frame().unwrap(),
            Some(Frame::Data(Bytes::from(vec![0xAA; 4096])))
        );
    }

    #[test]
    fn errors_keep_their_kind_across_the_wire() {
        let e: DiskError = decode::<WireError>(&encode(&WireError::from(&DiskError::Full)))
            .unwrap()
            .into();
        assert!(matches!(e, DiskError::Full));
        let e: DiskError = WireError::from(&DiskError::corrupt("shard block", "crc")).into();
        assert!(e.to_string().contains("shard block: crc"));
        assert!(!e.is_disk_failure());
    }
}
