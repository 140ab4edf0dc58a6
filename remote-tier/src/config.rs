//! What a remote tier is configured with: the endpoint, bucket and prefix
//! its objects live under, and the key that reaches them.

use serde::{Deserialize, Serialize};

/// Where a remote tier keeps its objects, and the key to reach them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteTierConfig {
    /// Endpoint URL, e.g. `https://s3.example.com:9000`.
    pub endpoint: String,
    /// Bucket on the endpoint (it must exist).
    pub bucket: String,
    /// Key prefix inside the bucket.
    #[serde(default)]
    pub prefix: String,
    /// Region to sign for.
    #[serde(default = "default_region")]
    pub region: String,
    /// Access key id.
    pub access_key: String,
    /// Secret key (kept encrypted at rest by the gateway).
    pub secret_key: String,
    /// Objects larger than this many MiB are uploaded in parts of this
    /// size (S3 takes at most 5 GiB in one PUT; parts are at least 5 MiB).
    #[serde(default = "default_part_mib")]
    pub part_size_mib: u64,
}

fn default_part_mib() -> u64 {
    64
}

fn default_region() -> String {
    "us-east-1".into()
}

impl RemoteTierConfig {
    /// Checks the configuration; the error says what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        let url = reqwest::Url::parse(&self.endpoint)
            .map_err(|e| format!("endpoint {:?} is not a URL: {e}", self.endpoint))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(format!(
                "endpoint {:?} is not an http(s) URL",
                self.endpoint
            ));
        }
        if self.bucket.is_empty() || self.bucket.contains('/') {
            return Err("give the endpoint's bucket name".into());
        }
        if self.access_key.is_empty() || self.secret_key.is_empty() {
            return Err("give the endpoint's access key and secret key".into());
        }
        if !(5..=5 << 10).contains(&self.part_size_mib) {
            return Err("the part size is 5 to 5120 MiB".into());
        }
        Ok(())
    }
}
