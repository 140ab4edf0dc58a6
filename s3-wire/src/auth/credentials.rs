//! Access keys the gateway accepts. SigV4 needs each secret itself, so the
//! store holds secrets; it never logs or returns them.

use std::collections::HashMap;

/// One access key pair.
#[derive(Clone)]
pub struct AccessKey {
    /// The public access key id.
    pub access_key_id: String,
    /// The secret key.
    pub secret_key: String,
}

impl AccessKey {
    /// A fresh random key pair: an access key id of `prefix` and 18
    /// base32 characters, and a 40-character alphanumeric secret.
    pub fn generate(prefix: &str) -> AccessKey {
        use rand::distributions::{Alphanumeric, DistString};
        use rand::Rng;
        let mut rng = rand::thread_rng();
        let id: String = (0..18)
            .map(|_| b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"[rng.gen_range(0..32)] as char)
            .collect();
        AccessKey {
            access_key_id: format!("{prefix}{id}"),
            secret_key: Alphanumeric.sample_string(&mut rng, 40),
        }
    }
}

impl std::fmt::Debug for AccessKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessKey")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

/// The keys the gateway accepts.
#[derive(Clone, Debug, Default)]
pub struct Credentials {
    keys: HashMap<String, AccessKey>,
}

impl Credentials {
    /// A store holding only `root`.
    pub fn with_root(root: AccessKey) -> Credentials {
        let mut keys = HashMap::new();
        keys.insert(root.access_key_id.clone(), root);
        Credentials { keys }
    }

    /// A store holding one key pair.
    pub fn single(access_key_id: &str, secret_key: &str) -> Credentials {
        Credentials::with_root(AccessKey {
            access_key_id: access_key_id.to_string(),
            secret_key: secret_key.to_string(),
        })
    }

    /// The secret of `access_key_id`, if it exists.
    pub fn secret(&self, access_key_id: &str) -> Option<&str> {
        self.keys.get(access_key_id).map(|k| k.secret_key.as_str())
    }
}
