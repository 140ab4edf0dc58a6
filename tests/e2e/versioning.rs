//! Bucket versioning: version ids, delete markers, null versions under
//! Suspended, ListObjectVersions paging, DeleteObjects and copies by version.

use aws_sdk_s3::types::{
    BucketVersioningStatus, Delete, ObjectIdentifier, VersioningConfiguration,
};
use aws_sdk_s3::Client;

use crate::harness::*;

async fn set_versioning(c: &Client, bucket: &str, status: BucketVersioningStatus) {
    c.put_bucket_versioning()
        .bucket(bucket)
        .versioning_configuration(VersioningConfiguration::builder().status(status).build())
        .send()
        .await
        .unwrap();
}

async fn put(c: &Client, key: &str, body: &str) -> Option<String> {
    put_bytes(c, "bkt", key, body.as_bytes().to_vec())
        .await
        .version_id
}

async fn get_version(c: &Client, key: &str, version: &str) -> Vec<u8> {
    let r = c
        .get_object()
        .bucket("bkt")
        .key(key)
        .version_id(version)
        .send()
        .await
        .unwrap();
    assert_eq!(r.version_id(), Some(version));
    r.body.collect().await.unwrap().into_bytes().to_vec()
}

#[tokio::test]
async fn versions_and_delete_markers() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    // A new bucket has no versioning status; writes get no version id.
    let v = c
        .get_bucket_versioning()
        .bucket("bkt")
        .send()
        .await
        .unwrap();
    assert_eq!(v.status(), None);
    assert_eq!(put(&c, "k", "before").await, None);

    set_versioning(&c, "bkt", BucketVersioningStatus::Enabled).await;
    let v = c
        .get_bucket_versioning()
        .bucket("bkt")
        .send()
        .await
        .unwrap();
    assert_eq!(v.status(), Some(&BucketVersioningStatus::Enabled));
    let v1 = put(&c, "k", "one").await.expect("version id");
    let v2 = put(&c, "k", "two").await.expect("version id");
    assert_ne!(v1, v2);
    assert_eq!(get_bytes(&c, "bkt", "k").await, b"two");
    assert_eq!(get_version(&c, "k", &v1).await, b"one");
    assert_eq!(get_version(&c, "k", "null").await, b"before");
    let h = c
        .head_object()
        .bucket("bkt")
        .key("k")
        .version_id(&v1)
        .send()
        .await
        .unwrap();
    assert_eq!(h.content_length(), Some(3));

    // DELETE without a version id adds a delete marker.
    let d = c
        .delete_object()
        .bucket("bkt")
        .key("k")
        .send()
        .await
        .unwrap();
    assert_eq!(d.delete_marker(), Some(true));
    let marker = d.version_id().expect("marker version").to_string();
    // GET of the key: 404 NoSuchKey with the delete-marker headers.
    let r = Raw::new("GET", format!("{}/bkt/k", s.endpoint))
        .send()
        .await;
    assert_eq!((r.status, r.code().as_str()), (404, "NoSuchKey"));
    assert_eq!(r.headers["x-amz-delete-marker"], "true");
    assert_eq!(r.headers["x-amz-version-id"], marker.as_str());
    let r = Raw::new("HEAD", format!("{}/bkt/k", s.endpoint))
        .send()
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(r.headers["x-amz-delete-marker"], "true");
    // GET/HEAD of the marker by version id: 405 MethodNotAllowed.
    let url = format!("{}/bkt/k?versionId={marker}", s.endpoint);
    let r = Raw::new("GET", url.clone()).send().await;
    assert_eq!((r.status, r.code().as_str()), (405, "MethodNotAllowed"));
    assert_eq!(r.headers["x-amz-delete-marker"], "true");
    assert!(r.headers.contains_key("last-modified"));
    let r = Raw::new("HEAD", url).send().await;
    assert_eq!(r.status, 405);
    // Older versions are still there; the key is gone from plain listings.
    assert_eq!(get_version(&c, "k", &v2).await, b"two");
    let l = c.list_objects_v2().bucket("bkt").send().await.unwrap();
    assert_eq!(l.key_count(), Some(0));

    // Deleting the marker brings the latest version back.
    let d = c
        .delete_object()
        .bucket("bkt")
        .key("k")
        .version_id(&marker)
        .send()
        .await
        .unwrap();
    assert_eq!(d.delete_marker(), Some(true));
    assert_eq!(d.version_id(), Some(marker.as_str()));
    assert_eq!(get_bytes(&c, "bkt", "k").await, b"two");
    // Deleting a specific version removes only it.
    c.delete_object()
        .bucket("bkt")
        .key("k")
        .version_id(&v2)
        .send()
        .await
        .unwrap();
    assert_eq!(get_bytes(&c, "bkt", "k").await, b"one");
    let e = c
        .get_object()
        .bucket("bkt")
        .key("k")
        .version_id(&v2)
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (404, "NoSuchVersion"));
    let e = c
        .get_object()
        .bucket("bkt")
        .key("k")
        .version_id("not-a-version")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidArgument");
    // Versioning cannot go back to Unversioned; junk is refused.
    let r = Raw::new("PUT", format!("{}/bkt?versioning", s.endpoint))
        .body(b"<VersioningConfiguration><Status>Off</Status></VersioningConfiguration>".to_vec())
        .send()
        .await;
    assert_eq!((r.status, r.code().as_str()), (400, "MalformedXML"));
}

#[tokio::test]
async fn suspended_versioning_writes_null_versions() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    set_versioning(&c, "bkt", BucketVersioningStatus::Enabled).await;
    let v1 = put(&c, "k", "kept").await.unwrap();
    set_versioning(&c, "bkt", BucketVersioningStatus::Suspended).await;
    // Under Suspended a write replaces the null version and keeps the others.
    assert_eq!(put(&c, "k", "null-1").await, None);
    assert_eq!(put(&c, "k", "null-2").await, None);
    let g = c.get_object().bucket("bkt").key("k").send().await.unwrap();
    assert_eq!(g.version_id(), Some("null"));
    assert_eq!(get_version(&c, "k", &v1).await, b"kept");
    let vs = c.list_object_versions().bucket("bkt").send().await.unwrap();
    let ids: Vec<_> = vs
        .versions()
        .iter()
        .map(|v| v.version_id().unwrap())
        .collect();
    assert_eq!(ids, vec!["null", v1.as_str()]);
    assert!(vs.versions()[0].is_latest().unwrap());
    // A DELETE under Suspended puts a null delete marker in place of the
    // null version.
    let d = c
        .delete_object()
        .bucket("bkt")
        .key("k")
        .send()
        .await
        .unwrap();
    assert_eq!(d.delete_marker(), Some(true));
    assert_eq!(d.version_id(), Some("null"));
    let vs = c.list_object_versions().bucket("bkt").send().await.unwrap();
    assert_eq!(vs.versions().len(), 1);
    assert_eq!(vs.delete_markers().len(), 1);
    assert_eq!(vs.delete_markers()[0].version_id(), Some("null"));
    assert_eq!(get_version(&c, "k", &v1).await, b"kept");
    let v = c
        .get_bucket_versioning()
        .bucket("bkt")
        .send()
        .await
        .unwrap();
    assert_eq!(v.status(), Some(&BucketVersioningStatus::Suspended));
}

#[tokio::test]
async fn list_object_versions_pages_with_markers() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    set_versioning(&c, "bkt", BucketVersioningStatus::Enabled).await;
    let mut want = Vec::new();
    for key in ["a", "b/1", "b/2", "c"] {
        let mut ids = Vec::new();
        for i in 0..3 {
            ids.push(put(&c, key, &format!("{key}{i}")).await.unwrap());
        }
        ids.reverse(); // newest first
        for id in ids {
            want.push((key.to_string(), id));
        }
    }
    let d = c
        .delete_object()
        .bucket("bkt")
        .key("c")
        .send()
        .await
        .unwrap();
    want.insert(6 + 3, ("c".into(), d.version_id().unwrap().to_string()));
    // Page through two at a time; versions and markers interleave in order.
    let mut got = Vec::new();
    let (mut km, mut vm) = (None::<String>, None::<String>);
    loop {
        let r = c
            .list_object_versions()
            .bucket("bkt")
            .max_keys(2)
            .set_key_marker(km.clone())
            .set_version_id_marker(vm.clone())
            .send()
            .await
            .unwrap();
        let mut page: Vec<(String, String, bool, bool)> = r
            .versions()
            .iter()
            .map(|v| {
                (
                    v.key().unwrap().to_string(),
                    v.version_id().unwrap().to_string(),
                    v.is_latest().unwrap(),
                    false,
                )
            })
            .chain(r.delete_markers().iter().map(|m| {
                (
                    m.key().unwrap().to_string(),
                    m.version_id().unwrap().to_string(),
                    m.is_latest().unwrap(),
                    true,
                )
            }))
            .collect();
        page.sort_by_key(|(k, v, ..)| want.iter().position(|w| w.0 == *k && w.1 == *v));
        assert!(page.len() <= 2);
        got.extend(page);
        if !r.is_truncated().unwrap() {
            break;
        }
        km = r.next_key_marker().map(str::to_string);
        vm = r.next_version_id_marker().map(str::to_string);
    }
    let got_ids: Vec<_> = got
        .iter()
        .map(|(k, v, ..)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(got_ids, want);
    let markers: Vec<_> = got.iter().filter(|g| g.3).collect();
    assert_eq!(markers.len(), 1);
    assert!(markers[0].2, "the delete marker is c's latest");
    // Prefix and delimiter.
    let r = c
        .list_object_versions()
        .bucket("bkt")
        .delimiter("/")
        .send()
        .await
        .unwrap();
    let prefixes: Vec<_> = r
        .common_prefixes()
        .iter()
        .map(|p| p.prefix().unwrap())
        .collect();
    assert_eq!(prefixes, vec!["b/"]);
    assert_eq!(r.versions().len(), 3 + 3);
    let r = c
        .list_object_versions()
        .bucket("bkt")
        .prefix("b/")
        .send()
        .await
        .unwrap();
    assert_eq!(r.versions().len(), 6);
    // A version marker without a key marker is an error.
    let r = Raw::new(
        "GET",
        format!("{}/bkt?versions&version-id-marker=null", s.endpoint),
    )
    .send()
    .await;
    assert_eq!((r.status, r.code().as_str()), (400, "InvalidArgument"));
}

#[tokio::test]
async fn delete_objects_and_copies_by_version() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    set_versioning(&c, "bkt", BucketVersioningStatus::Enabled).await;
    let a1 = put(&c, "a", "a-one").await.unwrap();
    let a2 = put(&c, "a", "a-two").await.unwrap();
    put(&c, "b", "b-one").await.unwrap();

    // Copy of an older version by versionId.
    let cp = c
        .copy_object()
        .bucket("bkt")
        .key("copy")
        .copy_source(format!("bkt/a?versionId={a1}"))
        .send()
        .await
        .unwrap();
    assert_eq!(cp.copy_source_version_id(), Some(a1.as_str()));
    assert!(cp.version_id().is_some());
    assert_eq!(get_bytes(&c, "bkt", "copy").await, b"a-one");

    let ident = |k: &str, v: Option<&str>| {
        ObjectIdentifier::builder()
            .key(k)
            .set_version_id(v.map(str::to_string))
            .build()
            .unwrap()
    };
    let r = c
        .delete_objects()
        .bucket("bkt")
        .delete(
            Delete::builder()
                .objects(ident("a", Some(&a2)))
                .objects(ident("b", None))
                .objects(ident("a", Some("bogus")))
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.deleted().len(), 2);
    let a = r.deleted().iter().find(|d| d.key() == Some("a")).unwrap();
    assert_eq!(a.version_id(), Some(a2.as_str()));
    assert_eq!(a.delete_marker(), None);
    let b = r.deleted().iter().find(|d| d.key() == Some("b")).unwrap();
    assert_eq!(b.delete_marker(), Some(true));
    assert!(b.delete_marker_version_id().is_some());
    assert_eq!(r.errors().len(), 1);
    assert_eq!(r.errors()[0].code(), Some("InvalidArgument"));
    // a's latest is a1 again; b is hidden by its marker.
    assert_eq!(get_bytes(&c, "bkt", "a").await, b"a-one");
    let e = c
        .get_object()
        .bucket("bkt")
        .key("b")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
    // Copying from a delete marker: by key 404, by its version id 400.
    let e = c
        .copy_object()
        .bucket("bkt")
        .key("x")
        .copy_source("bkt/b")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
    let marker = b.delete_marker_version_id().unwrap();
    let e = c
        .copy_object()
        .bucket("bkt")
        .key("x")
        .copy_source(format!("bkt/b?versionId={marker}"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRequest");
    // A versioned bucket with versions left cannot be deleted.
    let e = c.delete_bucket().bucket("bkt").send().await.unwrap_err();
    assert_eq!(code(&e), "BucketNotEmpty");
}
