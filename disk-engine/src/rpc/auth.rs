//! Authentication of internal RPC: every request carries an HMAC-SHA256,
//! under the cluster secret, of its method, path, disk, timestamp, nonce and
//! body digest. A node refuses requests outside the clock-skew window and
//! any nonce it has already seen inside it, so a captured request cannot be
//! replayed. Answers carry an HMAC over the request's nonce, the status and
//! the body digest, so a gateway only believes its nodes.

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
/// Header carrying the SHA-256 (hex) of a unary body, or `STREAM` for a
/// framed body whose frames carry their own checksums.
pub const BODY: &str = "x-granary-body";
/// Header carrying the request's or answer's HMAC (hex).
pub const SIGNATURE: &str = "x-granary-signature";
/// Body digest value of a streamed (framed) body.
pub const STREAMED: &str = "STREAM";

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

    fn mac(&self, parts: &[&[u8]]) -> String {
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("any key length");
        for p in parts {
            m.update(&(p.len() as u32).to_be_bytes());
            m.update(p);
        }
        hex::encode(m.finalize().into_bytes())
    }

    /// The signature of a request.
    pub fn sign_request(
        &self,
        method: &str,
        path: &str,
        disk: &str,
        date: &str,
        nonce: &str,
        body: &str,
    ) -> String {
        self.mac(&[
            b"granary-rpc-request",
            method.as_bytes(),
            path.as_bytes(),
            disk.as_bytes(),
            date.as_bytes(),
            nonce.as_bytes(),
            body.as_bytes(),
        ])
    }

    /// The signature of an answer to the request with `nonce`.
    pub fn sign_answer(&self, nonce: &str, status: u16, body: &str) -> String {
        self.mac(&[
            b"granary-rpc-answer",
            nonce.as_bytes(),
            &status.to_be_bytes(),
            body.as_bytes(),
        ])
    }
}

/// Hex SHA-256 of a unary body.
pub fn body_digest(body: &[u8]) -> String {
    hex::encode(Sha256::digest(body))
}

/// A fresh random nonce.
pub fn new_nonce() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

/// The current time as the date header carries it.
pub fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Compares two hex signatures in constant time.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The nonces seen inside the skew window: two generations, each covering
/// twice the window, so a nonce is remembered at least as long as its
/// timestamp is acceptable.
pub struct NonceGuard {
    inner: Mutex<Generations>,
}

struct Generations {
    started: u64,
    current: HashSet<[u8; 16]>,
    previous: HashSet<[u8; 16]>,
}

impl Default for NonceGuard {
    fn default() -> Self {
        NonceGuard {
            inner: Mutex::new(Generations {
                started: now_millis(),
                current: HashSet::new(),
                previous: HashSet::new(),
            }),
        }
    }
}

impl NonceGuard {
    /// Checks a request's timestamp, signature and nonce (in that order, so
    /// only genuine requests occupy the nonce memory).
    #[allow(clippy::too_many_arguments)]
    pub fn check(
        &self,
        secret: &ClusterSecret,
        method: &str,
        path: &str,
        disk: &str,
        date: Option<&str>,
        nonce: Option<&str>,
        body: Option<&str>,
        signature: Option<&str>,
    ) -> Result<(), Refusal> {
        let date = date.ok_or(Refusal::Malformed(DATE))?;
        let nonce = nonce.ok_or(Refusal::Malformed(NONCE))?;
        let body = body.ok_or(Refusal::Malformed(BODY))?;
        let signature = signature.ok_or(Refusal::Malformed(SIGNATURE))?;
        let millis: u64 = date.parse().map_err(|_| Refusal::Malformed(DATE))?;
        let raw: [u8; 16] = hex::decode(nonce)
            .ok()
            .and_then(|v| v.try_into().ok())
            .ok_or(Refusal::Malformed(NONCE))?;
        let now = now_millis();
        let skew = MAX_SKEW.as_millis() as u64;
        if millis.abs_diff(now) > skew {
            return Err(Refusal::Stale);
        }
        let expected = secret.sign_request(method, path, disk, date, nonce, body);
        if !same(&expected, signature) {
            return Err(Refusal::BadSignature);
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

/// Checks an answer's signature.
pub fn answer_is_genuine(
    secret: &ClusterSecret,
    nonce: &str,
    status: u16,
    body: &str,
    signature: Option<&str>,
) -> bool {
    signature.is_some_and(|s| same(&secret.sign_answer(nonce, status, body), s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed(secret: &ClusterSecret, date: u64, nonce: &str) -> (String, String) {
        let date = date.to_string();
        let sig = secret.sign_request("POST", "/rpc/v1/get_records", "/d1", &date, nonce, "abc");
        (date, sig)
    }

    #[test]
    fn genuine_requests_pass_once_and_forgeries_never() {
        let secret = ClusterSecret::new("a-cluster-secret-of-some-length").unwrap();
        let guard = NonceGuard::default();
        let nonce = new_nonce();
        let (date, sig) = signed(&secret, now_millis(), &nonce);
        let check = |nonce: &str, date: &str, disk: &str, sig: &str| {
            guard.check(
                &secret,
                "POST",
                "/rpc/v1/get_records",
                disk,
                Some(date),
                Some(nonce),
                Some("abc"),
                Some(sig),
            )
        };
        assert_eq!(check(&nonce, &date, "/d1", &sig), Ok(()));
        assert_eq!(check(&nonce, &date, "/d1", &sig), Err(Refusal::Replayed));
        // Another disk under the same signature is a forgery.
        let n2 = new_nonce();
        let (d2, s2) = signed(&secret, now_millis(), &n2);
        assert_eq!(check(&n2, &d2, "/d2", &s2), Err(Refusal::BadSignature));
        // Another secret.
        let other = ClusterSecret::new("another-secret-entirely").unwrap();
        let n3 = new_nonce();
        let (d3, s3) = signed(&other, now_millis(), &n3);
        assert_eq!(check(&n3, &d3, "/d1", &s3), Err(Refusal::BadSignature));
        // Too old.
        let n4 = new_nonce();
        let (d4, s4) = signed(&secret, now_millis() - 2 * MAX_SKEW.as_millis() as u64, &n4);
        assert_eq!(check(&n4, &d4, "/d1", &s4), Err(Refusal::Stale));
        assert!(ClusterSecret::new("short").is_err());
        let a = secret.sign_answer(&nonce, 200, "x");
        assert!(answer_is_genuine(&secret, &nonce, 200, "x", Some(&a)));
        assert!(!answer_is_genuine(&secret, &nonce, 500, "x", Some(&a)));
    }
}
