//! Authentication of internal RPC. Every request carries an HMAC-SHA256,
//! under the cluster secret, of its method, path, the node session it is
//! meant for, the disk (its directory and, once formatted, its id), a
//! timestamp, a nonce and the body's digest. A node
//!
//! - refuses requests outside the clock-skew window and any nonce it has
//!   already seen inside it, so a captured request cannot be repeated;
//! - refuses requests for another session: each run of a node draws a
//!   random session id, which a gateway learns with a signed `hello` call,
//!   so a captured request is refused by every other node and by the same
//!   node after a restart, whatever the clocks say;
//! - refuses requests for a disk id its directory does not hold.
//!
//! Answers carry an HMAC over the request's nonce, the status, the result
//! and the SHA-256 of the body, so a gateway only believes its nodes and
//! no answer can be altered on the way. Streamed shard bodies are cut into
//! frames that each carry an HMAC under a key drawn from the call's nonce,
//! with a running sequence number: a frame cannot be altered, dropped,
//! reordered or moved into another stream.

use std::collections::HashSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use parking_lot::Mutex;
use sha2::{Digest, Sha256};

/// Most a request's timestamp may differ from the node's clock.
pub const MAX_SKEW: Duration = Duration::from_secs(60);

/// Shortest cluster secret accepted.
pub const MIN_SECRET_LEN: usize = 16;

/// Header carrying the request's time (milliseconds since the epoch).
pub const DATE: &str = "x-granary-date";
/// Header carrying the request's nonce (32 hex digits).
pub const NONCE: &str = "x-granary-nonce";
/// Header carrying the node session the request is for (empty for `hello`).
pub const SESSION: &str = "x-granary-session";
/// Header carrying the id of the disk the request is for (empty for calls
/// on a directory that may not be formatted: `hello`, `probe`, `format`).
pub const DISK_ID: &str = "x-granary-disk-id";
/// Header carrying the SHA-256 (hex) of a unary body, or `STREAM:` and the
/// digest of the arguments for a framed body.
pub const BODY: &str = "x-granary-body";
/// Header carrying the request's or answer's HMAC (hex).
pub const SIGNATURE: &str = "x-granary-signature";
/// Header of a refusal (status 401) saying why, as [`Refusal::code`].
pub const REFUSAL: &str = "x-granary-refusal";
/// Body digest prefix of a streamed (framed) body.
pub const STREAMED: &str = "STREAM";

type HmacSha256 = Hmac<Sha256>;

/// The shared secret of a cluster's nodes and gateways.
#[derive(Clone)]
pub struct ClusterSecret(Vec<u8>);

impl std::fmt::Debug for ClusterSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterSecret(..)")
    }
}

/// Why a request was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A header is missing or malformed.
    Malformed(&'static str),
    /// The timestamp is outside the skew window.
    Stale,
    /// The signature does not match.
    BadSignature,
    /// The nonce was used before.
    Replayed,
    /// The request was signed for another node session (another node, or
    /// this one before a restart).
    OtherSession,
    /// The directory does not hold the disk the request was signed for.
    OtherDisk,
}

impl Refusal {
    /// The refusal as the [`REFUSAL`] header carries it.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::Malformed(_) => "malformed",
            Refusal::Stale => "stale",
            Refusal::BadSignature => "signature",
            Refusal::Replayed => "replayed",
            Refusal::OtherSession => "session",
            Refusal::OtherDisk => "disk",
        }
    }
}

/// What a request's signature covers.
#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    /// HTTP method.
    pub method: &'a str,
    /// Path (the operation).
    pub path: &'a str,
    /// The node session the call is for.
    pub session: &'a str,
    /// The disk's directory on the node.
    pub disk: &'a str,
    /// The disk's id, or empty.
    pub disk_id: &'a str,
    /// Milliseconds since the epoch, as sent.
    pub date: &'a str,
    /// The nonce, as sent.
    pub nonce: &'a str,
    /// The body digest, as sent.
    pub body: &'a str,
}

/// What an answer's signature covers.
#[derive(Clone, Copy, Debug)]
pub struct Answer<'a> {
    /// The nonce of the request answered.
    pub nonce: &'a str,
    /// HTTP status.
    pub status: u16,
    /// `ok` or `err`.
    pub result: &'a str,
    /// SHA-256 (hex) of the answer's body.
    pub body: &'a str,
}

impl ClusterSecret {
    /// A secret from its text; at least [`MIN_SECRET_LEN`] bytes.
    pub fn new(text: &str) -> Result<ClusterSecret, String> {
        let t = text.trim();
        if t.len() < MIN_SECRET_LEN {
            return Err(format!(
                "the cluster secret needs at least {MIN_SECRET_LEN} characters"
            ));
        }
        Ok(ClusterSecret(t.as_bytes().to_vec()))
    }

    fn mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut m = HmacSha256::new_from_slice(&self.0).expect("any key length");
        for p in parts {
            m.update(&(p.len() as u32).to_be_bytes());
            m.update(p);
        }
        m.finalize().into_bytes().into()
    }

    /// The signature of a request.
    pub fn sign_request(&self, c: &Call<'_>) -> String {
        hex::encode(self.mac(&[
            b"granary-rpc-request-v2",
            c.method.as_bytes(),
            c.path.as_bytes(),
            c.session.as_bytes(),
            c.disk.as_bytes(),
            c.disk_id.as_bytes(),
            c.date.as_bytes(),
            c.nonce.as_bytes(),
            c.body.as_bytes(),
        ]))
    }

    /// The signature of an answer.
    pub fn sign_answer(&self, a: &Answer<'_>) -> String {
        hex::encode(self.mac(&[
            b"granary-rpc-answer-v2",
            a.nonce.as_bytes(),
            &a.status.to_be_bytes(),
            a.result.as_bytes(),
            a.body.as_bytes(),
        ]))
    }

    /// The key of the frames of the streamed call with `nonce`.
    pub fn frame_key(&self, nonce: &str) -> FrameKey {
        let key = self.mac(&[b"granary-rpc-frames-v2", nonce.as_bytes()]);
        FrameKey {
            mac: HmacSha256::new_from_slice(&key).expect("any key length"),
            seq: 0,
        }
    }
}

/// Length of a frame's tag.
pub const FRAME_TAG: usize = 32;

/// Signs or checks the frames of one stream, in order.
#[derive(Clone)]
pub struct FrameKey {
    mac: HmacSha256,
    seq: u64,
}

impl FrameKey {
    /// The tag of the next frame (and counts it).
    pub fn tag(&mut self, kind: u8, payload: &[u8]) -> [u8; FRAME_TAG] {
        let mut m = self.mac.clone();
        m.update(&self.seq.to_be_bytes());
        m.update(&[kind]);
        m.update(payload);
        self.seq += 1;
        m.finalize().into_bytes().into()
    }

    /// Whether `tag` is that of the next frame (which is then counted).
    pub fn verify(&mut self, kind: u8, payload: &[u8], tag: &[u8]) -> bool {
        same(&self.tag(kind, payload), tag)
    }
}

/// Hex SHA-256 of a body.
pub fn body_digest(body: &[u8]) -> String {
    hex::encode(Sha256::digest(body))
}

/// A fresh random nonce (also a node's session id).
pub fn new_nonce() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

/// The current time as the date header carries it.
pub fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Compares two byte strings in constant time (for a given length).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The gate of a node's calls: its session id and the nonces seen inside
/// the skew window (two generations, each covering twice the window, so a
/// nonce is remembered at least as long as its timestamp is acceptable).
pub struct CallGuard {
    session: String,
    inner: Mutex<Generations>,
}

struct Generations {
    started: u64,
    current: HashSet<[u8; 16]>,
    previous: HashSet<[u8; 16]>,
}

impl CallGuard {
    /// A gate with a fresh session id.
    pub fn new() -> CallGuard {
        CallGuard {
            session: new_nonce(),
            inner: Mutex::new(Generations {
                started: now_millis(),
                current: HashSet::new(),
                previous: HashSet::new(),
            }),
        }
    }

    /// This run's session id.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Checks a request's timestamp, signature, session and nonce (in that
    /// order, so only genuine requests occupy the nonce memory). A request
    /// without a session is only accepted for `sessionless` paths.
    pub fn check(
        &self,
        secret: &ClusterSecret,
        call: &Call<'_>,
        signature: &str,
        sessionless: bool,
    ) -> Result<(), Refusal> {
        let millis: u64 = call.date.parse().map_err(|_| Refusal::Malformed(DATE))?;
        let raw: [u8; 16] = hex::decode(call.nonce)
            .ok()
            .and_then(|v| v.try_into().ok())
            .ok_or(Refusal::Malformed(NONCE))?;
        let now = now_millis();
        let skew = MAX_SKEW.as_millis() as u64;
        if millis.abs_diff(now) > skew {
            return Err(Refusal::Stale);
        }
        if !same(secret.sign_request(call).as_bytes(), signature.as_bytes()) {
            return Err(Refusal::BadSignature);
        }
        let session_ok = if call.session.is_empty() {
            sessionless
        } else {
            same(call.session.as_bytes(), self.session.as_bytes())
        };
        if !session_ok {
            return Err(Refusal::OtherSession);
        }
        let mut g = self.inner.lock();
        if now.saturating_sub(g.started) > 2 * skew {
            let current = std::mem::take(&mut g.current);
            g.previous = current;
            g.started = now;
        }
        if g.previous.contains(&raw) || !g.current.insert(raw) {
            return Err(Refusal::Replayed);
        }
        Ok(())
    }
}

impl Default for CallGuard {
    fn default() -> Self {
        CallGuard::new()
    }
}

/// Checks an answer's signature.
pub fn answer_is_genuine(
    secret: &ClusterSecret,
    answer: &Answer<'_>,
    signature: Option<&str>,
) -> bool {
    signature.is_some_and(|s| same(secret.sign_answer(answer).as_bytes(), s.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call<'a>(session: &'a str, disk_id: &'a str, date: &'a str, nonce: &'a str) -> Call<'a> {
        Call {
            method: "POST",
            path: "/rpc/v3/get_records",
            session,
            disk: "/d1",
            disk_id,
            date,
            nonce,
            body: "abc",
        }
    }

    #[test]
    fn genuine_requests_pass_once_and_forgeries_never() {
        let secret = ClusterSecret::new("a-cluster-secret-of-some-length").unwrap();
        let guard = CallGuard::new();
        let s = guard.session().to_string();
        let now = now_millis().to_string();
        let check = |c: &Call<'_>, sig: &str| guard.check(&secret, c, sig, false);
        let n1 = new_nonce();
        let c1 = call(&s, "id1", &now, &n1);
        let sig1 = secret.sign_request(&c1);
        assert_eq!(check(&c1, &sig1), Ok(()));
        assert_eq!(check(&c1, &sig1), Err(Refusal::Replayed));
        // Another disk, id or session under the same signature: forgeries.
        let n2 = new_nonce();
        let c2 = call(&s, "id1", &now, &n2);
        let sig2 = secret.sign_request(&c2);
        for forged in [
            Call { disk: "/d2", ..c2 },
            call(&s, "id2", &now, &n2),
            Call {
                session: "0000",
                ..c2
            },
        ] {
            assert_eq!(check(&forged, &sig2), Err(Refusal::BadSignature));
        }
        // Signed for another session (another node, or before a restart).
        let other = CallGuard::new();
        assert_eq!(
            other.check(&secret, &c2, &sig2, false),
            Err(Refusal::OtherSession)
        );
        // Without a session: only where the path allows it.
        let n3 = new_nonce();
        let c3 = call("", "", &now, &n3);
        let sig3 = secret.sign_request(&c3);
        assert_eq!(check(&c3, &sig3), Err(Refusal::OtherSession));
        assert_eq!(guard.check(&secret, &c3, &sig3, true), Ok(()));
        // Another secret.
        let stranger = ClusterSecret::new("another-secret-entirely").unwrap();
        let n4 = new_nonce();
        let c4 = call(&s, "id1", &now, &n4);
        assert_eq!(
            check(&c4, &stranger.sign_request(&c4)),
            Err(Refusal::BadSignature)
        );
        // Too old.
        let old = (now_millis() - 2 * MAX_SKEW.as_millis() as u64).to_string();
        let n5 = new_nonce();
        let c5 = call(&s, "id1", &old, &n5);
        assert_eq!(check(&c5, &secret.sign_request(&c5)), Err(Refusal::Stale));
        assert!(ClusterSecret::new("short").is_err());
        let a = Answer {
            nonce: &n1,
            status: 200,
            result: "ok",
            body: "x",
        };
        let sig = secret.sign_answer(&a);
        assert!(answer_is_genuine(&secret, &a, Some(&sig)));
        assert!(!answer_is_genuine(
            &secret,
            &Answer { status: 500, ..a },
            Some(&sig)
        ));
        assert!(!answer_is_genuine(
            &secret,
            &Answer { body: "y", ..a },
            Some(&sig)
        ));
    }

    #[test]
    fn frames_are_bound_to_their_stream_and_place() {
        let secret = ClusterSecret::new("a-cluster-secret-of-some-length").unwrap();
        let n = new_nonce();
        let mut w = secret.frame_key(&n);
        let t0 = w.tag(1, b"block zero");
        let t1 = w.tag(1, b"block one");
        let mut r = secret.frame_key(&n);
        assert!(r.verify(1, b"block zero", &t0));
        assert!(r.verify(1, b"block one", &t1));
        // Reordered, altered, or from another stream.
        let mut r = secret.frame_key(&n);
        assert!(!r.verify(1, b"block one", &t1));
        let mut r = secret.frame_key(&n);
        assert!(!r.verify(1, b"block zerO", &t0));
        let mut r = secret.frame_key(&new_nonce());
        assert!(!r.verify(1, b"block zero", &t0));
        let mut r = secret.frame_key(&n);
        assert!(!r.verify(2, b"block zero", &t0));
    }
}
