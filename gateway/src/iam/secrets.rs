//! Encryption of user secrets at rest. SigV4 needs each secret itself, so
//! secrets are stored encrypted with AES-256-GCM under the deployment's
//! master key, bound to their access key (as associated data).

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use rand::RngCore;

/// The key user secrets are encrypted with.
#[derive(Clone)]
pub struct MasterKey(Aes256Gcm);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(..)")
    }
}

/// Why a sealed secret could not be opened.
#[derive(Debug, thiserror::Error)]
#[error("cannot decrypt a stored secret (wrong master key or damaged record)")]
pub struct OpenError;

impl MasterKey {
    /// A master key from 32 raw bytes.
    pub fn from_bytes(key: &[u8; 32]) -> MasterKey {
        MasterKey(Aes256Gcm::new(key.into()))
    }

    /// Encrypts `secret` for `access_key`: base64(nonce ‖ ciphertext).
    pub fn seal(&self, access_key: &str, secret: &str) -> String {
        let mut nonce = [0u8; 12];
        rand::thread_rng().fill_bytes(&mut nonce);
        let ct = self
            .0
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: secret.as_bytes(),
                    aad: access_key.as_bytes(),
                },
            )
            .expect("AES-GCM encryption does not fail");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&ct);
        B64.encode(out)
    }

    /// Decrypts what [`MasterKey::seal`] produced for the same access key.
    pub fn open(&self, access_key: &str, sealed: &str) -> Result<String, OpenError> {
        let raw = B64.decode(sealed).map_err(|_| OpenError)?;
        if raw.len() < 12 + 16 {
            return Err(OpenError);
        }
        let (nonce, ct) = raw.split_at(12);
        let pt = self
            .0
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: ct,
                    aad: access_key.as_bytes(),
                },
            )
            .map_err(|_| OpenError)?;
        String::from_utf8(pt).map_err(|_| OpenError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_open_and_tamper() {
        let k = MasterKey::from_bytes(&[7; 32]);
        let sealed = k.seal("AK1", "s3cret");
        assert!(!sealed.contains("s3cret"));
        assert_eq!(k.open("AK1", &sealed).unwrap(), "s3cret");
        assert!(k.open("AK2", &sealed).is_err(), "bound to its access key");
        assert!(MasterKey::from_bytes(&[8; 32])
            .open("AK1", &sealed)
            .is_err());
        assert_ne!(sealed, k.seal("AK1", "s3cret"), "fresh nonce each time");
    }
}
