//! Replays every input kept for a target — its seed and grown corpus in
//! `fuzz/corpus/<target>/` and the inputs that once failed it in
//! `fuzz/regressions/<target>/` — through the target's function, as CI
//! runs it (no instrumented build).

use std::path::{Path, PathBuf};

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    out.sort();
    out
}

#[test]
fn every_kept_input_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut failed = Vec::new();
    let mut replayed = 0;
    for (name, target) in fuzz_targets::TARGETS {
        let corpus = inputs(&root.join("corpus").join(name));
        assert!(!corpus.is_empty(), "target {name} has no seed corpus");
        for path in corpus
            .iter()
            .chain(&inputs(&root.join("regressions").join(name)))
        {
            let data = std::fs::read(path).unwrap();
            replayed += 1;
            if std::panic::catch_unwind(|| target(&data)).is_err() {
                failed.push(path.display().to_string());
            }
        }
    }
    assert!(
        failed.is_empty(),
        "inputs that fail their target: {failed:#?}"
    );
    eprintln!("{replayed} kept inputs replayed");
}

#[test]
fn every_target_has_its_fuzz_target_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/fuzz_targets");
    for (name, _) in fuzz_targets::TARGETS {
        let file = dir.join(format!("{name}.rs"));
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|_| panic!("{} is missing", file.display()));
        assert!(
            text.contains(&format!("::{name}(data)")),
            "{} does not call {name}",
            file.display()
        );
    }
}

/// The signed seeds reach the end of authentication (so fuzzing starts
/// from requests that pass, not from ones refused at the first check).
#[test]
fn the_signed_request_seeds_authenticate() {
    use fuzz_targets::requests::{ACCESS_KEY, REGION, SECRET_KEY, SIGNED_AT_SECS};
    use s3_wire::auth::{authenticate, credentials::Credentials, AuthContext};
    let now = time::OffsetDateTime::from_unix_timestamp(SIGNED_AT_SECS as i64).unwrap();
    let creds = Credentials::single(ACCESS_KEY, SECRET_KEY);
    let mut accepted = 0;
    for (name, data) in fuzz_targets::seeds::seeds() {
        if name != "auth_request" {
            continue;
        }
        let parts = fuzz_targets::input::request(&data).expect("a seed request reads");
        let cx = AuthContext {
            region: REGION,
            now,
            vhost_bucket: None,
            sigv2: true,
        };
        match authenticate(&parts, &creds, cx) {
            Ok(a) => {
                assert_eq!(a.access_key, ACCESS_KEY);
                accepted += 1;
            }
            Err(e) => eprintln!("{}: {e}", parts.uri),
        }
    }
    assert_eq!(accepted, 5, "four SigV4 requests and one SigV2 URL");
}
