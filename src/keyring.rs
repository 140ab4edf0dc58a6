//! The keys `granary server` keeps for itself — the master key users'
//! secrets are sealed under, and generated root credentials — stored so
//! that they survive the loss of any disks the data survives, and are
//! never readable from the disks alone.
//!
//! Every formatted data directory holds a *keyring*: those keys sealed
//! (AES-256-GCM, bound to the deployment id) under the operator's *unseal
//! key*, which lives outside every data directory: `GRANARY_UNSEAL_KEY`,
//! or a key file (`--unseal-key-file`, by default `granary-unseal.key`
//! beside the first data directory), generated on the first start. Any one
//! disk's keyring opens with it, so the keys outlive every loss the data
//! outlives (one directory of the set is enough), and a replaced disk gets
//! its copy at the next start. A stolen disk — or all of them — reveals
//! nothing without the unseal key. A keyring is never replaced by new
//! keys: once any disk of the deployment holds one, or the deployment
//! exists, keys that cannot be opened stop the start with the reason.
//!
//! Keys given in the environment (`GRANARY_ROOT_USER` /
//! `GRANARY_ROOT_PASSWORD`, `GRANARY_MASTER_KEY`) win and are not stored.
//! Older data directories kept both in plaintext files in the first
//! directory; they are sealed into keyrings and the files removed.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use gateway::{AccessKey, MasterKey};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// File of a data directory holding its keyring.
pub const KEYRING_FILE: &str = "keyring.json";
/// Name of the unseal key file created beside the first data directory.
pub const UNSEAL_KEY_FILE: &str = "granary-unseal.key";
/// Plaintext files of older versions (in the first data directory).
const LEGACY_ROOT_FILE: &str = "root-credentials";
const LEGACY_MASTER_FILE: &str = "master-key";
const KEYRING_VERSION: u32 = 1;

/// What a keyring seals.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Secrets {
    /// Base64 of the 32-byte master key.
    master_key: Option<String>,
    /// Generated root credentials.
    root: Option<(String, String)>,
}

/// A keyring as stored in a data directory.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredKeyring {
    version: u32,
    deployment: Uuid,
    /// Which unseal key sealed it (see [`UnsealKey::id`]).
    unseal_key_id: String,
    /// The sealed [`Secrets`].
    sealed: String,
}

/// The operator's key keyrings are sealed under.
pub struct UnsealKey {
    raw: [u8; 32],
}

impl UnsealKey {
    fn parse(text: &str, from: &str) -> anyhow::Result<UnsealKey> {
        Ok(UnsealKey {
            raw: key_bytes(text, from)?,
        })
    }

    fn generate() -> UnsealKey {
        let mut raw = [0u8; 32];
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut raw);
        UnsealKey { raw }
    }

    /// A short public name of the key, stored beside what it seals so a
    /// wrong key is told from a damaged keyring.
    fn id(&self) -> String {
        use sha2::Digest as _;
        let digest = sha2::Sha256::new()
            .chain_update(b"granary unseal key id\0")
            .chain_update(self.raw)
            .finalize();
        hex::encode(&digest[..8])
    }

    fn aad(deployment: Uuid) -> String {
        format!("granary keyring v{KEYRING_VERSION} {deployment}")
    }

    fn seal(&self, deployment: Uuid, secrets: &Secrets) -> StoredKeyring {
        let json = serde_json::to_string(secrets).expect("secrets serialize");
        StoredKeyring {
            version: KEYRING_VERSION,
            deployment,
            unseal_key_id: self.id(),
            sealed: MasterKey::from_bytes(&self.raw).seal(&Self::aad(deployment), &json),
        }
    }

    fn open(&self, ring: &StoredKeyring) -> Option<Secrets> {
        let json = MasterKey::from_bytes(&self.raw)
            .open(&Self::aad(ring.deployment), &ring.sealed)
            .ok()?;
        serde_json::from_str(&json).ok()
    }
}

/// The 32 bytes of a key written as base64 (`from` names where, for the
/// message).
pub fn key_bytes(text: &str, from: &str) -> anyhow::Result<[u8; 32]> {
    B64.decode(text.trim())
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .with_context(|| format!("{from} must hold the base64 of exactly 32 bytes"))
}

/// Where the unseal key comes from.
pub struct UnsealSource {
    /// `GRANARY_UNSEAL_KEY`, if set.
    pub env: Option<String>,
    /// The key file, used (and created on a first start) without it.
    pub file: PathBuf,
}

impl UnsealSource {
    /// `GRANARY_UNSEAL_KEY`, else `file`, else the default file beside
    /// the first data directory.
    pub fn new(file: Option<PathBuf>, first_dir: &Path) -> UnsealSource {
        let default = || {
            let parent = first_dir
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            parent.join(UNSEAL_KEY_FILE)
        };
        UnsealSource {
            env: std::env::var("GRANARY_UNSEAL_KEY")
                .ok()
                .filter(|v| !v.is_empty()),
            file: file.unwrap_or_else(default),
        }
    }

    /// The environment's key, else the key file's (`None` when the file
    /// does not exist).
    fn load(&self) -> anyhow::Result<Option<UnsealKey>> {
        if let Some(v) = &self.env {
            return UnsealKey::parse(v, "GRANARY_UNSEAL_KEY").map(Some);
        }
        match std::fs::read_to_string(&self.file) {
            Ok(text) => UnsealKey::parse(&text, &self.file.display().to_string()).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", self.file.display())),
        }
    }

    fn describe(&self) -> String {
        match &self.env {
            Some(_) => "GRANARY_UNSEAL_KEY".to_string(),
            None => self.file.display().to_string(),
        }
    }
}

/// What the server needs to know to find its keys.
pub struct KeyringDirs<'a> {
    /// Every data directory that may hold a keyring (read only).
    pub read: &'a [PathBuf],
    /// The directories of the disks opened now: each gets the keyring.
    pub write: &'a [PathBuf],
    /// The deployment the disks belong to.
    pub deployment: Uuid,
    /// Whether nothing is sealed under older keys: the first pool was
    /// formatted by this start, or it holds no users' or tiers' secrets
    /// (a first start cut short before its keyrings were written).
    pub fresh: bool,
}

/// The keys given in the environment (each `None` when not set).
#[derive(Default)]
pub struct EnvKeys {
    /// `GRANARY_ROOT_USER` and `GRANARY_ROOT_PASSWORD`.
    pub root: Option<(String, String)>,
    /// `GRANARY_MASTER_KEY`, decoded.
    pub master: Option<[u8; 32]>,
}

/// Where the root key in use came from.
#[derive(Debug, PartialEq, Eq)]
pub enum Origin {
    /// The environment.
    Environment,
    /// The keyring (or an older version's credentials file).
    Stored,
    /// Generated now (and sealed into the keyrings).
    Generated,
}

/// The server's keys and what to tell the operator about them.
pub struct ServerKeys {
    /// Root access key and secret.
    pub root: (String, String),
    /// Where the root key came from.
    pub origin: Origin,
    /// The key user secrets are sealed under.
    pub master: MasterKey,
    /// Lines for the start-up notes.
    pub notes: Vec<String>,
}

/// Finds (or, for a new deployment, creates) the server's keys and seals
/// them into every opened disk's keyring.
pub fn server_keys(
    dirs: &KeyringDirs<'_>,
    env: EnvKeys,
    unseal: &UnsealSource,
) -> anyhow::Result<ServerKeys> {
    check_outside(&unseal.file, dirs.read, unseal.env.is_some())?;
    let rings = read_keyrings(dirs.read, dirs.deployment);
    let mut notes = Vec::new();
    let mut key = unseal.load()?;
    let (stored, from_legacy) = if rings.is_empty() {
        (legacy_secrets(dirs.read)?, true)
    } else {
        let Some(k) = &key else {
            bail!(
                "the disks hold this deployment's keys sealed under an unseal key, and there is none at {} \
                 (nor in GRANARY_UNSEAL_KEY). Restore the unseal key; new keys are never made while the \
                 old ones exist (users' secrets would no longer open)",
                unseal.file.display()
            );
        };
        let opened = rings.iter().find_map(|(_, r)| k.open(r));
        let Some(secrets) = opened else {
            let ids: std::collections::BTreeSet<&str> = rings
                .iter()
                .map(|(_, r)| r.unseal_key_id.as_str())
                .collect();
            bail!(
                "the unseal key from {} (id {}) does not open the keyring of any disk (sealed under {}): \
                 a different unseal key? Give the one this deployment was started with",
                unseal.describe(),
                k.id(),
                ids.into_iter().collect::<Vec<_>>().join(", ")
            );
        };
        (secrets, false)
    };

    let mut secrets = stored.clone();
    let master = match (env.master, &secrets.master_key) {
        (Some(raw), stored) => {
            if stored.as_deref().is_some_and(|s| s != B64.encode(raw)) {
                tracing::warn!("GRANARY_MASTER_KEY differs from the master key stored on the disks; using GRANARY_MASTER_KEY");
            }
            raw
        }
        (None, Some(b64)) => key_bytes(b64, "the stored master key")?,
        (None, None) if dirs.fresh => {
            let raw = UnsealKey::generate().raw;
            secrets.master_key = Some(B64.encode(raw));
            raw
        }
        (None, None) => bail!(
            "no disk of this deployment holds its master key, and GRANARY_MASTER_KEY is not set. \
             Refusing to make a new one: the users' secrets sealed under the old one would no longer open. \
             Set GRANARY_MASTER_KEY to the key this deployment used, or bring back a disk holding its keyring"
        ),
    };
    let (root, origin) = match (env.root, &secrets.root) {
        (Some(r), _) => (r, Origin::Environment),
        (None, Some(r)) => (r.clone(), Origin::Stored),
        (None, None) if dirs.fresh || !rings.is_empty() => {
            let AccessKey {
                access_key_id,
                secret_key,
            } = AccessKey::generate("GR");
            secrets.root = Some((access_key_id.clone(), secret_key.clone()));
            ((access_key_id, secret_key), Origin::Generated)
        }
        (None, None) => bail!(
            "no disk of this deployment holds its root credentials: set GRANARY_ROOT_USER and \
             GRANARY_ROOT_PASSWORD (the ones it was started with), or bring back a disk holding its keyring"
        ),
    };

    if secrets != Secrets::default() {
        let k = match key.take() {
            Some(k) => k,
            None => {
                // Only a deployment no disk holds a keyring of gets a new
                // unseal key.
                let k = UnsealKey::generate();
                disk_engine::write_file_atomic(
                    &unseal.file,
                    format!("{}\n", B64.encode(k.raw)).as_bytes(),
                    0o600,
                )
                .with_context(|| format!("writing {}", unseal.file.display()))?;
                notes.push(format!(
                    "Generated the unseal key {} (mode 0600): every disk keeps the master key and root credentials sealed under it. \
                     Keep a copy away from this machine; without it they cannot be opened",
                    unseal.file.display()
                ));
                k
            }
        };
        // Keys already sealed on a disk not opened now (its set is
        // offline) are stored; new ones must reach a disk now.
        let stored_elsewhere = !rings.is_empty() && secrets == stored;
        write_keyrings(dirs, &k, &secrets, &rings, stored_elsewhere)?;
    }
    // Plaintext files of an older version go once sealed (also when an
    // earlier start sealed them and stopped before removing them).
    if !from_legacy || secrets != Secrets::default() {
        remove_legacy(dirs.write);
    }
    Ok(ServerKeys {
        root,
        origin,
        master: MasterKey::from_bytes(&master),
        notes,
    })
}

/// The generated root credentials sealed in `dir`'s keyring (for the
/// admin command on the server's machine).
pub fn stored_root(dir: &Path, unseal: &UnsealSource) -> anyhow::Result<(String, String)> {
    let path = dir.join(KEYRING_FILE);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let ring: StoredKeyring =
        serde_json::from_str(&text).with_context(|| format!("{} is malformed", path.display()))?;
    let key = unseal
        .load()?
        .with_context(|| format!("no unseal key at {}", unseal.describe()))?;
    key.open(&ring)
        .with_context(|| {
            format!(
                "the unseal key from {} does not open {}",
                unseal.describe(),
                path.display()
            )
        })?
        .root
        .with_context(|| format!("{} holds no generated root credentials", path.display()))
}

/// Checks, before any disk is formatted, that the unseal key can be used:
/// a key from the environment or an existing file parses, the file is
/// outside the data directories, and — when every data directory of the
/// first pool is empty or missing while the key file of an earlier start
/// exists — refuses to begin a new deployment: the disks are more likely
/// unmounted than new.
pub fn check_before_formatting(
    unseal: &UnsealSource,
    first_pool: &[PathBuf],
    all_dirs: &[PathBuf],
) -> anyhow::Result<()> {
    check_outside(&unseal.file, all_dirs, unseal.env.is_some())?;
    let key = unseal.load()?;
    let blank = first_pool.iter().all(|d| {
        matches!(
            disk_engine::probe_dir(d),
            disk_engine::DirState::Empty | disk_engine::DirState::Missing
        )
    });
    if blank && key.is_some() && unseal.env.is_none() {
        bail!(
            "every data directory is empty or missing, but the unseal key {} of an earlier deployment exists: \
             are the disks mounted? Not formatting a new deployment over them. To begin a new deployment, \
             move {} away first",
            unseal.file.display(),
            unseal.file.display()
        );
    }
    Ok(())
}

/// Refuses an unseal key file inside a data directory (it would sit
/// beside what it protects).
fn check_outside(file: &Path, dirs: &[PathBuf], from_env: bool) -> anyhow::Result<()> {
    if from_env {
        return Ok(());
    }
    let parent = file.parent().filter(|p| !p.as_os_str().is_empty());
    let at = std::fs::canonicalize(parent.unwrap_or(Path::new(".")))
        .with_context(|| format!("the directory of the unseal key file {}", file.display()))?;
    for d in dirs {
        if let Ok(d) = std::fs::canonicalize(d) {
            if at.starts_with(&d) {
                bail!(
                    "the unseal key file {} is inside the data directory {}: keep it outside every data directory",
                    file.display(),
                    d.display()
                );
            }
        }
    }
    Ok(())
}

/// The readable keyrings of this deployment, by directory.
fn read_keyrings(dirs: &[PathBuf], deployment: Uuid) -> Vec<(PathBuf, StoredKeyring)> {
    let mut out = Vec::new();
    for d in dirs {
        let path = d.join(KEYRING_FILE);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        match serde_json::from_str::<StoredKeyring>(&text) {
            Ok(r) if r.deployment == deployment => out.push((d.clone(), r)),
            Ok(r) => {
                tracing::warn!(file = %path.display(), deployment = %r.deployment, "keyring of another deployment ignored")
            }
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "malformed keyring ignored")
            }
        }
    }
    out
}

/// Seals `secrets` into every written directory whose keyring does not
/// already hold them under `key`.
fn write_keyrings(
    dirs: &KeyringDirs<'_>,
    key: &UnsealKey,
    secrets: &Secrets,
    rings: &[(PathBuf, StoredKeyring)],
    stored_elsewhere: bool,
) -> anyhow::Result<()> {
    let mut written = 0;
    for d in dirs.write {
        let current = rings
            .iter()
            .find(|(at, _)| at == d)
            .and_then(|(_, r)| key.open(r));
        if current.as_ref() == Some(secrets) {
            written += 1;
            continue;
        }
        let ring = key.seal(dirs.deployment, secrets);
        let json = serde_json::to_vec_pretty(&ring).expect("keyring serializes");
        match disk_engine::write_file_atomic(&d.join(KEYRING_FILE), &json, 0o600) {
            Ok(()) => written += 1,
            Err(e) => {
                tracing::warn!(dir = %d.display(), error = %e, "cannot write the keyring")
            }
        }
    }
    if written == 0 && !stored_elsewhere {
        bail!("no data directory took the keyring; refusing to go on with keys stored nowhere");
    }
    Ok(())
}

/// The plaintext keys an older version kept in its first data directory.
fn legacy_secrets(dirs: &[PathBuf]) -> anyhow::Result<Secrets> {
    let mut s = Secrets::default();
    for d in dirs {
        if s.master_key.is_none() {
            if let Ok(text) = std::fs::read_to_string(d.join(LEGACY_MASTER_FILE)) {
                let from = d.join(LEGACY_MASTER_FILE).display().to_string();
                s.master_key = Some(B64.encode(key_bytes(&text, &from)?));
            }
        }
        if s.root.is_none() {
            if let Ok(text) = std::fs::read_to_string(d.join(LEGACY_ROOT_FILE)) {
                let mut lines = text.lines();
                match (lines.next(), lines.next()) {
                    (Some(u), Some(p)) => s.root = Some((u.trim().into(), p.trim().into())),
                    _ => bail!("{} is malformed", d.join(LEGACY_ROOT_FILE).display()),
                }
            }
        }
    }
    Ok(s)
}

/// Removes the plaintext files of older versions once sealed.
fn remove_legacy(dirs: &[PathBuf]) {
    for d in dirs {
        for f in [LEGACY_MASTER_FILE, LEGACY_ROOT_FILE] {
            let path = d.join(f);
            match std::fs::remove_file(&path) {
                Ok(()) => {
                    tracing::info!(file = %path.display(), "plaintext key file sealed into the keyrings and removed")
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    tracing::warn!(file = %path.display(), error = %e, "cannot remove a plaintext key file")
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rig {
        root: tempfile::TempDir,
        dirs: Vec<PathBuf>,
        deployment: Uuid,
    }

    impl Rig {
        fn new(n: usize) -> Rig {
            let root = tempfile::tempdir().unwrap();
            let dirs: Vec<PathBuf> = (0..n).map(|i| root.path().join(format!("d{i}"))).collect();
            for d in &dirs {
                std::fs::create_dir(d).unwrap();
            }
            Rig {
                root,
                dirs,
                deployment: Uuid::new_v4(),
            }
        }

        fn unseal(&self) -> UnsealSource {
            UnsealSource {
                env: None,
                file: self.root.path().join(UNSEAL_KEY_FILE),
            }
        }

        fn open(&self, created: bool) -> anyhow::Result<ServerKeys> {
            self.open_with(created, EnvKeys::default(), &self.unseal())
        }

        fn open_with(
            &self,
            created: bool,
            env: EnvKeys,
            unseal: &UnsealSource,
        ) -> anyhow::Result<ServerKeys> {
            let dirs = KeyringDirs {
                read: &self.dirs,
                write: &self.dirs,
                deployment: self.deployment,
                fresh: created,
            };
            server_keys(&dirs, env, unseal)
        }

        fn wipe(&self, i: usize) {
            std::fs::remove_dir_all(&self.dirs[i]).unwrap();
            std::fs::create_dir(&self.dirs[i]).unwrap();
        }
    }

    fn sealed_probe(k: &ServerKeys) -> String {
        k.master.seal("probe", "secret")
    }

    #[test]
    fn keys_survive_losing_any_disk_and_are_never_remade() {
        let rig = Rig::new(4);
        let first = rig.open(true).unwrap();
        assert_eq!(first.origin, Origin::Generated);
        assert!(first.notes[0].contains("Generated the unseal key"));
        let probe = sealed_probe(&first);
        // Any one disk is enough, the first included; the others get their
        // copy back.
        for lost in [0, 1, 2] {
            rig.wipe(lost);
        }
        let again = rig.open(false).unwrap();
        assert_eq!(again.origin, Origin::Stored);
        assert_eq!(again.root, first.root);
        assert!(again.notes.is_empty());
        assert_eq!(again.master.open("probe", &probe).unwrap(), "secret");
        assert!(rig.dirs.iter().all(|d| d.join(KEYRING_FILE).exists()));
        // Neither the master key nor the root secret is on a disk in
        // plaintext, in any encoding.
        let secret = &first.root.1;
        for d in &rig.dirs {
            let text = std::fs::read_to_string(d.join(KEYRING_FILE)).unwrap();
            assert!(!text.contains(secret.as_str()), "{text}");
            let ring: StoredKeyring = serde_json::from_str(&text).unwrap();
            assert!(!ring.sealed.contains(secret.as_str()));
        }
        // Without the unseal key the start is refused, and nothing new made.
        let key_file = rig.unseal().file;
        let saved = std::fs::read(&key_file).unwrap();
        std::fs::remove_file(&key_file).unwrap();
        let err = rig.open(false).err().unwrap().to_string();
        assert!(err.contains("Restore the unseal key"), "{err}");
        assert!(!key_file.exists());
        // A different unseal key is told apart from a damaged keyring.
        let other = UnsealSource {
            env: Some(B64.encode([7u8; 32])),
            file: key_file.clone(),
        };
        let err = rig
            .open_with(false, EnvKeys::default(), &other)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("does not open the keyring of any disk"),
            "{err}"
        );
        std::fs::write(&key_file, saved).unwrap();
        // Every disk lost: an existing deployment is not given new keys.
        for i in 0..4 {
            rig.wipe(i);
        }
        let err = rig.open(false).err().unwrap().to_string();
        assert!(err.contains("Refusing to make a new one"), "{err}");
    }

    #[test]
    fn keys_from_the_environment_win_and_are_not_stored() {
        let rig = Rig::new(2);
        let env = || EnvKeys {
            root: Some(("admin".into(), "password1".into())),
            master: Some([3u8; 32]),
        };
        let k = rig.open_with(true, env(), &rig.unseal()).unwrap();
        assert_eq!(k.origin, Origin::Environment);
        assert!(!rig.dirs[0].join(KEYRING_FILE).exists());
        assert!(!rig.unseal().file.exists());
        let probe = sealed_probe(&k);
        let again = rig.open_with(false, env(), &rig.unseal()).unwrap();
        assert_eq!(again.master.open("probe", &probe).unwrap(), "secret");
    }

    #[test]
    fn an_older_versions_plaintext_files_are_sealed_and_removed() {
        let rig = Rig::new(3);
        let master = B64.encode([9u8; 32]);
        std::fs::write(rig.dirs[0].join(LEGACY_MASTER_FILE), format!("{master}\n")).unwrap();
        std::fs::write(rig.dirs[0].join(LEGACY_ROOT_FILE), "GRUSER\nsecretsecret\n").unwrap();
        let k = rig.open(false).unwrap();
        assert_eq!(k.origin, Origin::Stored);
        assert_eq!(k.root, ("GRUSER".to_string(), "secretsecret".to_string()));
        let probe = sealed_probe(&k);
        assert!(!rig.dirs[0].join(LEGACY_MASTER_FILE).exists());
        assert!(!rig.dirs[0].join(LEGACY_ROOT_FILE).exists());
        // The first disk replaced afterwards: the others still have them.
        rig.wipe(0);
        let again = rig.open(false).unwrap();
        assert_eq!(again.root, k.root);
        assert_eq!(again.master.open("probe", &probe).unwrap(), "secret");
    }

    #[test]
    fn an_unseal_key_file_inside_a_data_directory_is_refused() {
        let rig = Rig::new(1);
        let inside = UnsealSource {
            env: None,
            file: rig.dirs[0].join("sub").join(UNSEAL_KEY_FILE),
        };
        std::fs::create_dir(rig.dirs[0].join("sub")).unwrap();
        let err = rig
            .open_with(true, EnvKeys::default(), &inside)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("inside the data directory"), "{err}");
    }
}
