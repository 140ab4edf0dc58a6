//! Data written by an older build opens in this one: a fixture of hot and
//! cold data directories (versions, delete markers, packed and shard-file
//! objects, tier objects written directly and by a lifecycle transition,
//! completed and open multipart uploads) was written by the build at
//! commit 65db7ba with [`write_fixture`] and is kept in
//! `tests/fixtures/65db7ba.tar.gz` with its manifest. The test opens it
//! with this build, reads every version back byte-exact, runs the garbage
//! collector over it, and checks that nothing a live version or an open
//! upload references was freed (the open uploads still complete).

use std::path::PathBuf;
use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart, StorageClass};
use aws_sdk_s3::Client;
use md5::{Digest, Md5};
use serde_json::{json, Value};

use crate::harness::{
    add_user, all_in_class, client_for, enable_versioning, set_lifecycle, start_tiered_in,
    tiered_dirs, transition_rule, until,
};

/// Compressible, reproducible content: numbered lines naming the object.
pub fn content(name: &str, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 64);
    let mut i = 0u64;
    while out.len() < len {
        out.extend_from_slice(format!("{name} line {i:08}\n").as_bytes());
        i += 1;
    }
    out.truncate(len);
    out
}

/// The completion of the parts a manifest lists.
pub(crate) fn completed(parts: &[Value]) -> CompletedMultipartUpload {
    CompletedMultipartUpload::builder()
        .set_parts(Some(
            parts
                .iter()
                .map(|p| {
                    CompletedPart::builder()
                        .part_number(p["number"].as_i64().unwrap() as i32)
                        .e_tag(p["etag"].as_str().unwrap())
                        .build()
                })
                .collect(),
        ))
        .build()
}

pub(crate) fn md5_hex(data: &[u8]) -> String {
    hex::encode(Md5::digest(data))
}

/// The flags the fixture was written with (and is opened with) besides
/// its four hot and four cold directories: transitions due at once.
const FIXTURE_ARGS: [&str; 2] = ["--lifecycle-day-secs", "1"];

pub(crate) async fn put(
    c: &Client,
    bucket: &str,
    key: &str,
    len: usize,
    class: Option<&str>,
) -> Value {
    let name = format!("{bucket}/{key}@{}", uuid::Uuid::new_v4().simple());
    let data = content(&name, len);
    let mut req = c
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(data.clone()));
    if let Some(class) = class {
        req = req.storage_class(StorageClass::from(class));
    }
    let out = req.send().await.unwrap();
    json!({
        "bucket": bucket, "key": key, "name": name, "len": len,
        "md5": md5_hex(&data),
        "version": out.version_id(),
    })
}

/// An upload of parts of `lens` (in storage class `class`), completed or
/// left open; its manifest entry (the object's when completed).
pub(crate) async fn upload(
    c: &Client,
    bucket: &str,
    key: &str,
    class: Option<&str>,
    lens: &[usize],
    complete: bool,
) -> Value {
    let mut create = c.create_multipart_upload().bucket(bucket).key(key);
    if let Some(class) = class {
        create = create.storage_class(StorageClass::from(class));
    }
    let id = create
        .send()
        .await
        .unwrap()
        .upload_id()
        .unwrap()
        .to_string();
    let (mut parts, mut whole) = (Vec::new(), Vec::new());
    for (n, len) in lens.iter().enumerate() {
        let number = n as i32 + 1;
        let name = format!("{bucket}/{key}#{id}.{number}");
        let data = content(&name, *len);
        whole.extend_from_slice(&data);
        let etag = c
            .upload_part()
            .bucket(bucket)
            .key(key)
            .upload_id(&id)
            .part_number(number)
            .body(ByteStream::from(data))
            .send()
            .await
            .unwrap()
            .e_tag()
            .unwrap()
            .to_string();
        parts.push(json!({"number": number, "name": name, "len": len, "etag": etag}));
    }
    if !complete {
        return json!({"bucket": bucket, "key": key, "upload_id": id, "parts": parts});
    }
    let out = c
        .complete_multipart_upload()
        .bucket(bucket)
        .key(key)
        .upload_id(&id)
        .multipart_upload(completed(&parts))
        .send()
        .await
        .unwrap();
    json!({"bucket": bucket, "key": key, "len": whole.len(), "md5": md5_hex(&whole),
           "version": out.version_id(), "parts": parts})
}

/// Writes the fixture into `GRANARY_FIXTURE_OUT` (a new directory) with
/// the build `GRANARY_E2E_BIN` names (the one whose data it keeps); run by
/// hand: `GRANARY_E2E_BIN=/path/to/old/granary GRANARY_FIXTURE_OUT=/tmp/fx
/// cargo test --test e2e fixture::write_fixture -- --ignored`.
#[tokio::test]
#[ignore]
async fn write_fixture() {
    let out = PathBuf::from(std::env::var("GRANARY_FIXTURE_OUT").expect("GRANARY_FIXTURE_OUT"));
    std::fs::create_dir_all(&out).unwrap();
    let (mut s, _) = start_tiered_in(tempfile::tempdir().unwrap(), &FIXTURE_ARGS);
    let c = s.client();
    let mut objects = Vec::new();

    c.create_bucket().bucket("plain").send().await.unwrap();
    for i in 0..12 {
        objects.push(put(&c, "plain", &format!("small/{i:02}"), 100 + i * 997, None).await);
    }
    for (i, len) in [(0, 300 << 10), (1, (1 << 20) + 12345), (2, 3 << 20)] {
        objects.push(put(&c, "plain", &format!("large/{i}"), len, None).await);
    }
    // Overwritten in place: only the second write is live.
    put(&c, "plain", "overwritten", 400 << 10, None).await;
    objects.push(put(&c, "plain", "overwritten", 500 << 10, None).await);
    objects.push(put(&c, "plain", "cold/direct", 700 << 10, Some("GLACIER")).await);
    objects.push(put(&c, "plain", "cold/small", 2000, Some("COLD")).await);
    for i in 0..3 {
        objects.push(
            put(
                &c,
                "plain",
                &format!("old/{i}"),
                (250 << 10) + i * 4099,
                None,
            )
            .await,
        );
    }

    c.create_bucket().bucket("versioned").send().await.unwrap();
    enable_versioning(&c, "versioned").await;
    for len in [1000, 300 << 10, (1 << 20) + 7] {
        objects.push(put(&c, "versioned", "a", len, None).await);
    }
    objects.push(put(&c, "versioned", "b", 200 << 10, None).await);
    let marker = c
        .delete_object()
        .bucket("versioned")
        .key("b")
        .send()
        .await
        .unwrap();
    objects.push(put(&c, "versioned", "cold", 600 << 10, Some("GLACIER")).await);

    // Completed multipart uploads (one part may be small: it is the last).
    let mut uploads = Vec::new();
    for (bucket, key, class, parts, complete) in [
        ("plain", "mpu/done", None, vec![300 << 10], true),
        ("versioned", "mpu/done", None, vec![260 << 10], true),
        ("plain", "mpu/open", None, vec![5 << 20, 150 << 10], false),
        ("versioned", "mpu/open", None, vec![180 << 10], false),
        (
            "plain",
            "mpu/cold-open",
            Some("GLACIER"),
            vec![220 << 10],
            false,
        ),
        (
            "plain",
            "mpu/cold-done",
            Some("GLACIER"),
            vec![240 << 10],
            true,
        ),
    ] {
        let entry = upload(&c, bucket, key, class, &parts, complete).await;
        match complete {
            true => objects.push(entry),
            false => uploads.push(entry),
        }
    }

    // A lifecycle transition moves old/ to the cold pool.
    set_lifecycle(
        &c,
        "plain",
        vec![transition_rule("cold", "old/", 0, "COLD")],
    )
    .await;
    let old: Vec<String> = (0..3).map(|i| format!("old/{i}")).collect();
    until(60, "old/ transitioned", async || {
        all_in_class(&c, "plain", &old, "COLD").await
    })
    .await;
    // Users, their secrets sealed under the master key of the first
    // directory; one may do anything, one only read `plain`.
    let mut users = Vec::new();
    for (name, doc) in [
        (
            "alice",
            r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}"#,
        ),
        (
            "reader",
            r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject","s3:ListBucket"],"Resource":["arn:aws:s3:::plain","arn:aws:s3:::plain/*"]}]}"#,
        ),
    ] {
        let policy = s.root.path().join(format!("{name}.json"));
        std::fs::write(&policy, doc).unwrap();
        let (key, secret) = add_user(&s, name, &["--policy", &policy.display().to_string()]);
        users.push(json!({"name": name, "access_key": key, "secret": secret}));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    s.stop();
    // A start without root credentials in the environment generates them
    // (kept in plaintext beside the master key by that build).
    s.env = vec![
        ("GRANARY_ROOT_USER".into(), String::new()),
        ("GRANARY_ROOT_PASSWORD".into(), String::new()),
    ];
    s.launch().unwrap();
    s.stop();
    let generated = std::fs::read_to_string(s.dirs[0].join("root-credentials")).unwrap();
    let mut lines = generated.lines();
    let generated_root =
        json!({"access_key": lines.next().unwrap(), "secret": lines.next().unwrap()});

    let manifest = json!({
        "written_by": "65db7ba",
        "objects": objects,
        "delete_marker": {"bucket": "versioned", "key": "b", "version": marker.version_id()},
        "uploads": uploads,
        "users": users,
        "generated_root": generated_root,
    });
    pack(
        &out,
        &manifest,
        s.root.path(),
        &[
            "hot1", "hot2", "hot3", "hot4", "cold1", "cold2", "cold3", "cold4",
        ],
    );
}

/// Writes a fixture into `out`: `manifest`, and the `entries` of `root`
/// packed into `data.tar.gz`.
pub(crate) fn pack(
    out: &std::path::Path,
    manifest: &Value,
    root: &std::path::Path,
    entries: &[&str],
) {
    std::fs::write(
        out.join("manifest.json"),
        serde_json::to_string_pretty(manifest).unwrap(),
    )
    .unwrap();
    let tar = std::process::Command::new("tar")
        .arg("czf")
        .arg(out.join("data.tar.gz"))
        .arg("-C")
        .arg(root)
        .args(entries)
        .status()
        .unwrap();
    assert!(tar.success());
}

/// The manifest of fixture `name` (in `tests/fixtures/`), and its data
/// unpacked into a new directory.
pub(crate) fn unpack(name: &str) -> (Value, tempfile::TempDir) {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(fixture.join("manifest.json")).unwrap()).unwrap();
    let root = tempfile::tempdir().unwrap();
    let untar = std::process::Command::new("tar")
        .arg("xzf")
        .arg(fixture.join("data.tar.gz"))
        .arg("-C")
        .arg(root.path())
        .status()
        .unwrap();
    assert!(untar.success());
    (manifest, root)
}

/// Reads `bucket/key` (version `version`) whole.
pub(crate) async fn read(c: &Client, bucket: &str, key: &str, version: Option<&str>) -> Vec<u8> {
    let out = c
        .get_object()
        .bucket(bucket)
        .key(key)
        .set_version_id(version.map(str::to_string))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{bucket}/{key} {version:?}: {e:?}"));
    out.body.collect().await.unwrap().into_bytes().to_vec()
}

/// Every object of the manifest reads back byte-exact, and its delete
/// marker is still the current version of its key.
pub(crate) async fn check_objects(c: &Client, manifest: &Value) -> usize {
    let m = &manifest["delete_marker"];
    let e = c
        .get_object()
        .bucket(m["bucket"].as_str().unwrap())
        .key(m["key"].as_str().unwrap())
        .send()
        .await
        .unwrap_err();
    assert_eq!(crate::harness::code(&e), "NoSuchKey");

    let objects = manifest["objects"].as_array().unwrap();
    check_each(c, objects).await;
    objects.len()
}

/// Every object of `objects` (manifest entries) reads back byte-exact.
pub(crate) async fn check_each(c: &Client, objects: &[Value]) {
    for o in objects {
        let (bucket, key) = (o["bucket"].as_str().unwrap(), o["key"].as_str().unwrap());
        let data = read(c, bucket, key, o["version"].as_str()).await;
        assert_eq!(
            data.len() as u64,
            o["len"].as_u64().unwrap(),
            "{bucket}/{key}"
        );
        assert_eq!(md5_hex(&data), o["md5"].as_str().unwrap(), "{bucket}/{key}");
    }
}

/// New objects in `bucket` beside a deployment's old ones: 20 under
/// `new/N/` in each storage class of `classes`, small and large, each
/// read back byte-exact; their manifest entries.
pub(crate) async fn new_writes(c: &Client, bucket: &str, classes: &[Option<&str>]) -> Vec<Value> {
    let mut new = Vec::new();
    for (n, class) in classes.iter().enumerate() {
        for i in 0..20 {
            let key = format!("new/{n}/{i:02}");
            new.push(put(c, bucket, &key, 500 + i * 3001, *class).await);
        }
    }
    check_each(c, &new).await;
    new
}

/// The data written by the build at 65db7ba (two pools: hot and cold, one
/// set each, every version record in the hot pool and the cold pool's
/// bytes as tier objects) opens in this one, reads back byte-exact, and
/// garbage collection over it frees nothing a version or an open upload
/// refers to: afterwards every object still reads back, every open upload
/// still completes, and new writes go to both pools beside the old data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_written_at_65db7ba_opens_and_survives_garbage_collection() {
    let (manifest, root) = unpack("65db7ba");
    let (hot, _) = tiered_dirs(root.path());
    let mut args = FIXTURE_ARGS.to_vec();
    args.extend(["--read-cache-mib", "0"]);
    let (mut s, cold) = start_tiered_in(root, &args);
    let c = s.client();
    let checked = check_objects(&c, &manifest).await;
    check_users(&s, &manifest).await;
    // Its plaintext key files are sealed into every disk's keyring.
    for d in hot.iter().chain(&cold) {
        assert!(d.join("keyring.json").exists(), "{}", d.display());
        assert!(!d.join("master-key").exists() && !d.join("root-credentials").exists());
    }

    let files = |dirs: &[PathBuf]| crate::harness::count_shard_files(dirs);
    let before = (files(&hot), files(&cold));
    let out = crate::harness::admin(&s, &["gc"]).unwrap();
    eprintln!("fixture: {checked} objects read back; gc: {out}");
    let after = (files(&hot), files(&cold));
    eprintln!("fixture: shard files hot/cold {before:?} before, {after:?} after");
    check_objects(&c, &manifest).await;

    complete_open_uploads(&c, &manifest).await;
    // New writes, in the hot pool and the cold one, beside the old data.
    let new = new_writes(&c, "plain", &[None, Some("STANDARD_IA")]).await;
    for o in &new[20..] {
        let key = o["key"].as_str().unwrap();
        let class = crate::harness::class_of(&c, "plain", key).await;
        assert_eq!(class.as_deref(), Some("STANDARD_IA"), "{key}");
    }

    // Without root credentials in the environment the generated ones of
    // that build sign in, the first directory replaced or not.
    s.stop();
    s.env = vec![
        ("GRANARY_ROOT_USER".into(), String::new()),
        ("GRANARY_ROOT_PASSWORD".into(), String::new()),
    ];
    std::fs::remove_dir_all(&hot[0]).unwrap();
    std::fs::create_dir(&hot[0]).unwrap();
    s.launch().unwrap();
    let g = &manifest["generated_root"];
    let root = client_for(
        &s.endpoint,
        g["access_key"].as_str().unwrap(),
        g["secret"].as_str().unwrap(),
        "us-east-1",
    );
    check_objects(&root, &manifest).await;
    check_each(&root, &new).await;
    check_users(&s, &manifest).await;
    // Both pools are still one set each.
    for d in hot.iter().chain(&cold) {
        let f = std::fs::read_to_string(d.join("format.json")).unwrap();
        let one = !f.contains("\"sets\"") || f.contains("\"sets\": 1,");
        assert!(one, "{}: {f}", d.display());
    }
}

/// Every open upload of the manifest still has its parts and completes,
/// and the object it makes reads back byte-exact.
pub(crate) async fn complete_open_uploads(c: &Client, manifest: &Value) {
    for u in manifest["uploads"].as_array().unwrap() {
        let (bucket, key, id) = (
            u["bucket"].as_str().unwrap(),
            u["key"].as_str().unwrap(),
            u["upload_id"].as_str().unwrap(),
        );
        let parts = u["parts"].as_array().unwrap();
        let listed = c
            .list_parts()
            .bucket(bucket)
            .key(key)
            .upload_id(id)
            .send()
            .await
            .unwrap();
        assert_eq!(listed.parts().len(), parts.len(), "{bucket}/{key}");
        let mut whole = Vec::new();
        for p in parts {
            whole.extend(content(
                p["name"].as_str().unwrap(),
                p["len"].as_u64().unwrap() as usize,
            ));
        }
        let done = completed(parts);
        let out = c
            .complete_multipart_upload()
            .bucket(bucket)
            .key(key)
            .upload_id(id)
            .multipart_upload(done)
            .send()
            .await
            .unwrap();
        let data = read(c, bucket, key, out.version_id()).await;
        assert_eq!(md5_hex(&data), md5_hex(&whole), "{bucket}/{key}");
    }
}

/// Every user of the manifest signs in and is held to its policy.
async fn check_users(s: &crate::harness::Server, manifest: &Value) {
    let users = manifest["users"].as_array().unwrap();
    assert_eq!(users.len(), 2);
    let object = &manifest["objects"][0];
    let (bucket, key) = (
        object["bucket"].as_str().unwrap(),
        object["key"].as_str().unwrap(),
    );
    for u in users {
        let c = client_for(
            &s.endpoint,
            u["access_key"].as_str().unwrap(),
            u["secret"].as_str().unwrap(),
            "us-east-1",
        );
        let data = read(&c, bucket, key, object["version"].as_str()).await;
        assert_eq!(md5_hex(&data), object["md5"].as_str().unwrap(), "{u}");
        let put = c
            .put_object()
            .bucket("plain")
            .key("written-by-a-user")
            .body(ByteStream::from_static(b"x"))
            .send()
            .await;
        match u["name"].as_str().unwrap() {
            "alice" => assert!(put.is_ok(), "{put:?}"),
            _ => assert_eq!(crate::harness::code(&put.unwrap_err()), "AccessDenied"),
        }
    }
}
