//! Identities and access: the root key, users with their own access keys
//! (secrets encrypted at rest, kept in the store's system namespace), and
//! the policy decision for every request — root may do anything; users and
//! anonymous callers only what a bucket policy or their own policy allows,
//! with an explicit Deny winning.

pub mod secrets;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use placement::Store;
use serde::{Deserialize, Serialize};

use s3_wire::auth::credentials::AccessKey;
use s3_wire::error::{S3Error, S3Result};
use s3_wire::iam_policy::{self as policy, Access, Decision, Policy, Who};
use secrets::MasterKey;

/// How long a user lookup is trusted without reading the store again.
const USER_CACHE_TTL: Duration = Duration::from_secs(2);
/// Users remembered at most; the cache is cleared when full.
const USER_CACHE_ENTRIES: usize = 10_000;
/// Where users are stored among the system documents.
pub(crate) const USER_PREFIX: &str = "users/";

/// A user as stored (the secret sealed under the master key).
#[derive(Clone, Serialize, Deserialize)]
struct UserDoc {
    access_key: String,
    name: String,
    secret: String,
    created_ns: u64,
    #[serde(default)]
    policy: Option<String>,
}

/// A user as the gateway uses it.
#[derive(Clone, Debug)]
pub struct User {
    /// Access key id.
    pub access_key: String,
    /// User name (what policies name).
    pub name: String,
    /// Identity policy, if any.
    pub policy: Option<Policy>,
}

/// What a user listing shows (never the secret).
#[derive(Clone, Debug, Serialize)]
pub struct UserInfo {
    /// Access key id.
    #[serde(rename = "accessKey")]
    pub access_key: String,
    /// User name.
    pub name: String,
    /// Creation time, ns since the epoch.
    #[serde(rename = "createdNs")]
    pub created_ns: u64,
    /// Identity policy document, if any.
    pub policy: Option<String>,
}

/// Who sent a request.
#[derive(Clone, Debug)]
pub enum Principal {
    /// The root key: not subject to policies.
    Root,
    /// A user.
    User(Arc<User>),
    /// No signature.
    Anonymous,
}

impl Principal {
    fn who(&self) -> Option<Who<'_>> {
        match self {
            Principal::Root => None,
            Principal::User(u) => Some(Who::User {
                name: &u.name,
                access_key: &u.access_key,
            }),
            Principal::Anonymous => Some(Who::Anonymous),
        }
    }
}

/// Why a user could not be managed.
#[derive(Debug, thiserror::Error)]
pub enum IamError {
    /// The name is not a valid user name.
    #[error("invalid user name: use 1 to 64 of A-Z a-z 0-9 + = , . @ _ -")]
    InvalidName,
    /// A user of that name exists.
    #[error("a user named {0} already exists")]
    NameTaken(String),
    /// No such access key.
    #[error("no user has that access key")]
    NoSuchUser,
    /// The policy document is invalid.
    #[error("invalid policy: {0}")]
    InvalidPolicy(String),
    /// The store failed.
    #[error("store: {0}")]
    Store(#[from] placement::Error),
}

/// A known user: their secret and who they are.
type Known = (String, Arc<User>);

/// The root key and the users.
pub struct Identities {
    root: AccessKey,
    store: Arc<Store>,
    master: MasterKey,
    cache: Mutex<HashMap<String, (Option<Known>, Instant)>>,
    /// Parsed bucket policies, by bucket, with the document they came from.
    bucket_policies: Mutex<HashMap<String, (String, Arc<Policy>)>>,
}

fn now_ns() -> u64 {
    crate::headers::now_ns()
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+=,.@_-".contains(c))
}

impl Identities {
    /// Identities with `root` as the root key; users live in `store`, their
    /// secrets sealed with `master`.
    pub fn new(root: AccessKey, store: Arc<Store>, master: MasterKey) -> Identities {
        Identities {
            root,
            store,
            master,
            cache: Mutex::default(),
            bucket_policies: Mutex::default(),
        }
    }

    /// Encrypts a secret that is not a user's (a remote tier's key) for
    /// storage; `context` binds it to its owner.
    pub fn seal(&self, context: &str, secret: &str) -> String {
        self.master.seal(context, secret)
    }

    /// Decrypts what [`Identities::seal`] produced for the same context.
    pub fn open(&self, context: &str, sealed: &str) -> Option<String> {
        self.master.open(context, sealed).ok()
    }

    /// `bucket`'s policy parsed from its stored document `doc`, parsed once
    /// per document rather than once per request.
    pub fn bucket_policy(&self, bucket: &str, doc: &str) -> S3Result<Arc<Policy>> {
        if let Some((cached, p)) = self.bucket_policies.lock().get(bucket) {
            if cached == doc {
                return Ok(p.clone());
            }
        }
        let p = Arc::new(
            Policy::load(doc, Some(bucket))
                .map_err(|e| S3Error::Internal(format!("stored bucket policy: {e}")))?,
        );
        let mut cache = self.bucket_policies.lock();
        if cache.len() >= USER_CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(bucket.to_string(), (doc.to_string(), p.clone()));
        Ok(p)
    }

    /// The root access key id.
    pub fn root_access_key(&self) -> &str {
        &self.root.access_key_id
    }

    /// The secret and principal of an access key, if it exists.
    pub async fn lookup(&self, access_key: &str) -> S3Result<Option<(String, Principal)>> {
        if access_key == self.root.access_key_id {
            return Ok(Some((self.root.secret_key.clone(), Principal::Root)));
        }
        if let Some((hit, at)) = self.cache.lock().get(access_key) {
            if at.elapsed() < USER_CACHE_TTL {
                return Ok(hit.clone().map(|(s, u)| (s, Principal::User(u))));
            }
        }
        let doc = self
            .store
            .get_system_doc(&format!("{USER_PREFIX}{access_key}"))
            .await
            .map_err(S3Error::from)?;
        let found = match doc {
            None => None,
            Some(bytes) => {
                let d: UserDoc = serde_json::from_slice(&bytes)
                    .map_err(|e| S3Error::Internal(format!("user record: {e}")))?;
                let secret = self
                    .master
                    .open(&d.access_key, &d.secret)
                    .map_err(|e| S3Error::Internal(e.to_string()))?;
                let policy = d
                    .policy
                    .as_deref()
                    .map(|p| Policy::load(p, None))
                    .transpose()
                    .map_err(|e| S3Error::Internal(format!("stored user policy: {e}")))?;
                Some((
                    secret,
                    Arc::new(User {
                        access_key: d.access_key,
                        name: d.name,
                        policy,
                    }),
                ))
            }
        };
        let mut cache = self.cache.lock();
        if cache.len() >= USER_CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(access_key.to_string(), (found.clone(), Instant::now()));
        Ok(found.map(|(s, u)| (s, Principal::User(u))))
    }

    /// Creates a user with a new key pair; returns (access key, secret).
    pub async fn create_user(
        &self,
        name: &str,
        policy: Option<String>,
    ) -> Result<(String, String), IamError> {
        if !valid_name(name) {
            return Err(IamError::InvalidName);
        }
        if let Some(p) = &policy {
            Policy::parse(p, None).map_err(IamError::InvalidPolicy)?;
        }
        if self.list_users().await?.iter().any(|u| u.name == name) {
            return Err(IamError::NameTaken(name.to_string()));
        }
        let AccessKey {
            access_key_id: access_key,
            secret_key: secret,
        } = AccessKey::generate("GK");
        let doc = UserDoc {
            access_key: access_key.clone(),
            name: name.to_string(),
            secret: self.master.seal(&access_key, &secret),
            created_ns: now_ns(),
            policy,
        };
        let value = serde_json::to_vec(&doc).expect("user record serialises");
        self.store
            .update_system_doc(&format!("{USER_PREFIX}{access_key}"), |_| Ok(Some(value)))
            .await?;
        self.cache.lock().remove(&access_key);
        Ok((access_key, secret))
    }

    /// Every user (without secrets).
    pub async fn list_users(&self) -> Result<Vec<UserInfo>, IamError> {
        self.store
            .list_system_docs(USER_PREFIX)
            .await?
            .into_iter()
            .map(|(_, bytes)| {
                let d: UserDoc = serde_json::from_slice(&bytes)
                    .map_err(|e| IamError::Store(placement::Error::Corrupt(e.to_string())))?;
                Ok(UserInfo {
                    access_key: d.access_key,
                    name: d.name,
                    created_ns: d.created_ns,
                    policy: d.policy,
                })
            })
            .collect()
    }

    /// Deletes a user; their key stops working at once on this gateway.
    pub async fn delete_user(&self, access_key: &str) -> Result<(), IamError> {
        let mut found = false;
        self.store
            .update_system_doc(&format!("{USER_PREFIX}{access_key}"), |cur| {
                found = cur.is_some();
                Ok(None)
            })
            .await?;
        self.cache.lock().remove(access_key);
        if found {
            Ok(())
        } else {
            Err(IamError::NoSuchUser)
        }
    }

    /// Replaces (or with `None` removes) a user's identity policy.
    pub async fn set_policy(
        &self,
        access_key: &str,
        policy: Option<String>,
    ) -> Result<(), IamError> {
        if let Some(p) = &policy {
            Policy::parse(p, None).map_err(IamError::InvalidPolicy)?;
        }
        let mut missing = false;
        self.store
            .update_system_doc(&format!("{USER_PREFIX}{access_key}"), |cur| {
                let Some(cur) = cur else {
                    missing = true;
                    return Ok(None);
                };
                let mut d: UserDoc = serde_json::from_slice(&cur)
                    .map_err(|e| placement::Error::Corrupt(e.to_string()))?;
                d.policy = policy;
                Ok(Some(
                    serde_json::to_vec(&d).expect("user record serialises"),
                ))
            })
            .await?;
        self.cache.lock().remove(access_key);
        if missing {
            Err(IamError::NoSuchUser)
        } else {
            Ok(())
        }
    }
}

/// Decides one access: root always; otherwise an explicit Deny in the
/// bucket policy or the user's policy refuses, an Allow in either grants,
/// and anything else is refused.
pub fn authorize(
    principal: &Principal,
    bucket_policy: Option<&Policy>,
    action: &str,
    resource: &str,
    values: &policy::ConditionValues,
) -> S3Result<()> {
    let Some(who) = principal.who() else {
        return Ok(());
    };
    let access = Access {
        action,
        resource,
        who,
        values,
    };
    let user_policy = match principal {
        Principal::User(u) => u.policy.as_ref(),
        _ => None,
    };
    let decisions = [bucket_policy, user_policy]
        .map(|p| p.map_or(Decision::NotApplicable, |p| p.evaluate(&access)));
    if decisions.contains(&Decision::Deny) || !decisions.contains(&Decision::Allow) {
        return Err(S3Error::AccessDenied("Access Denied".into()));
    }
    Ok(())
}
