//! Object and bucket tags: Put/Get/Delete, `x-amz-tagging` on PUT, Create
//! and copies, `x-amz-tagging-count` on GET, S3's limits.

use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart, Tag, Tagging, TaggingDirective};

use crate::harness::*;

/// A tag set of `pairs` (key, value).
pub(crate) fn tagging(pairs: &[(&str, &str)]) -> Tagging {
    Tagging::builder()
        .set_tag_set(Some(
            pairs
                .iter()
                .map(|(k, v)| Tag::builder().key(*k).value(*v).build().unwrap())
                .collect(),
        ))
        .build()
        .unwrap()
}

fn pairs(tags: &[Tag]) -> Vec<(String, String)> {
    tags.iter()
        .map(|t| (t.key().to_string(), t.value().to_string()))
        .collect()
}

fn owned(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test]
async fn object_tags() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    // Tags given on PUT, URL-encoded.
    c.put_object()
        .bucket("bkt")
        .key("k")
        .tagging("project=granary&stage=raw%20data&empty=")
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap();
    let t = c
        .get_object_tagging()
        .bucket("bkt")
        .key("k")
        .send()
        .await
        .unwrap();
    assert_eq!(
        pairs(t.tag_set()),
        owned(&[("project", "granary"), ("stage", "raw data"), ("empty", "")])
    );
    let g = c.get_object().bucket("bkt").key("k").send().await.unwrap();
    assert_eq!(g.tag_count(), Some(3));
    // Replace, then delete.
    c.put_object_tagging()
        .bucket("bkt")
        .key("k")
        .tagging(tagging(&[("a", "1")]))
        .send()
        .await
        .unwrap();
    let t = c
        .get_object_tagging()
        .bucket("bkt")
        .key("k")
        .send()
        .await
        .unwrap();
    assert_eq!(pairs(t.tag_set()), owned(&[("a", "1")]));
    c.delete_object_tagging()
        .bucket("bkt")
        .key("k")
        .send()
        .await
        .unwrap();
    let t = c
        .get_object_tagging()
        .bucket("bkt")
        .key("k")
        .send()
        .await
        .unwrap();
    assert!(t.tag_set().is_empty());
    let g = c.get_object().bucket("bkt").key("k").send().await.unwrap();
    assert_eq!(g.tag_count(), None);
    let e = c
        .get_object_tagging()
        .bucket("bkt")
        .key("missing")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");

    // Limits: 11 tags, a duplicate key, a bad character.
    let many: Vec<(String, String)> = (0..11).map(|i| (format!("k{i}"), "v".into())).collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let e = c
        .put_object_tagging()
        .bucket("bkt")
        .key("k")
        .tagging(tagging(&many))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "BadRequest");
    let e = c
        .put_object_tagging()
        .bucket("bkt")
        .key("k")
        .tagging(tagging(&[("d", "1"), ("d", "2")]))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidTag");
    let e = c
        .put_object()
        .bucket("bkt")
        .key("k")
        .tagging("bad%3Ckey=1")
        .body(b"y".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidTag");
    assert_eq!(
        get_bytes(&c, "bkt", "k").await,
        b"x",
        "refused PUT changed nothing"
    );
    let e = c
        .put_object_tagging()
        .bucket("bkt")
        .key("k")
        .tagging(tagging(&[("k", &"v".repeat(257))]))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidTag");

    // Multipart: tags given at creation land on the object.
    let up = c
        .create_multipart_upload()
        .bucket("bkt")
        .key("mp")
        .tagging("from=create")
        .send()
        .await
        .unwrap();
    let p = c
        .upload_part()
        .bucket("bkt")
        .key("mp")
        .upload_id(up.upload_id().unwrap())
        .part_number(1)
        .body(b"part".to_vec().into())
        .send()
        .await
        .unwrap();
    c.complete_multipart_upload()
        .bucket("bkt")
        .key("mp")
        .upload_id(up.upload_id().unwrap())
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(
                    CompletedPart::builder()
                        .part_number(1)
                        .e_tag(p.e_tag().unwrap())
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap();
    let t = c
        .get_object_tagging()
        .bucket("bkt")
        .key("mp")
        .send()
        .await
        .unwrap();
    assert_eq!(pairs(t.tag_set()), owned(&[("from", "create")]));

    // Copies keep the source's tags, or take new ones with REPLACE.
    c.copy_object()
        .bucket("bkt")
        .key("copy")
        .copy_source("bkt/mp")
        .send()
        .await
        .unwrap();
    let t = c
        .get_object_tagging()
        .bucket("bkt")
        .key("copy")
        .send()
        .await
        .unwrap();
    assert_eq!(pairs(t.tag_set()), owned(&[("from", "create")]));
    c.copy_object()
        .bucket("bkt")
        .key("copy2")
        .copy_source("bkt/mp")
        .tagging_directive(TaggingDirective::Replace)
        .tagging("new=tag")
        .send()
        .await
        .unwrap();
    let t = c
        .get_object_tagging()
        .bucket("bkt")
        .key("copy2")
        .send()
        .await
        .unwrap();
    assert_eq!(pairs(t.tag_set()), owned(&[("new", "tag")]));
}

#[tokio::test]
async fn tags_of_versions() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    crate::harness::enable_versioning(&c, "bkt").await;
    let v1 = put_bytes(&c, "bkt", "k", b"1".to_vec())
        .await
        .version_id
        .unwrap();
    let v2 = put_bytes(&c, "bkt", "k", b"2".to_vec())
        .await
        .version_id
        .unwrap();
    let r = c
        .put_object_tagging()
        .bucket("bkt")
        .key("k")
        .version_id(&v1)
        .tagging(tagging(&[("old", "yes")]))
        .send()
        .await
        .unwrap();
    assert_eq!(r.version_id(), Some(v1.as_str()));
    let t = c
        .get_object_tagging()
        .bucket("bkt")
        .key("k")
        .version_id(&v1)
        .send()
        .await
        .unwrap();
    assert_eq!(pairs(t.tag_set()), owned(&[("old", "yes")]));
    let t = c
        .get_object_tagging()
        .bucket("bkt")
        .key("k")
        .send()
        .await
        .unwrap();
    assert!(t.tag_set().is_empty());
    assert_eq!(t.version_id(), Some(v2.as_str()));
    // Tagging rewrites metadata only: the data and the version stay.
    let g = c
        .get_object()
        .bucket("bkt")
        .key("k")
        .version_id(&v1)
        .send()
        .await
        .unwrap();
    assert_eq!(g.tag_count(), Some(1));
    assert_eq!(g.body.collect().await.unwrap().into_bytes().as_ref(), b"1");
    let l = c.list_object_versions().bucket("bkt").send().await.unwrap();
    assert_eq!(l.versions().len(), 2);
}

#[tokio::test]
async fn bucket_tags() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("bkt").send().await.unwrap();
    let e = c
        .get_bucket_tagging()
        .bucket("bkt")
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (404, "NoSuchTagSet"));
    c.put_bucket_tagging()
        .bucket("bkt")
        .tagging(tagging(&[("team", "ml"), ("cost-center", "42")]))
        .send()
        .await
        .unwrap();
    let t = c.get_bucket_tagging().bucket("bkt").send().await.unwrap();
    assert_eq!(
        pairs(t.tag_set()),
        owned(&[("team", "ml"), ("cost-center", "42")])
    );
    let many: Vec<(String, String)> = (0..51).map(|i| (format!("k{i}"), "v".into())).collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let e = c
        .put_bucket_tagging()
        .bucket("bkt")
        .tagging(tagging(&many))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidTag");
    // The refused request left the tags alone.
    let t = c.get_bucket_tagging().bucket("bkt").send().await.unwrap();
    assert_eq!(t.tag_set().len(), 2);
    let truncated = b"<Tagging><TagSet><Tag><Key>x".to_vec();
    let r = Raw::new("PUT", format!("{}/bkt?tagging", s.endpoint))
        .header("content-md5", content_md5(&truncated))
        .body(truncated)
        .send()
        .await;
    assert_eq!(r.code(), "MalformedXML");
    c.delete_bucket_tagging()
        .bucket("bkt")
        .send()
        .await
        .unwrap();
    let e = c
        .get_bucket_tagging()
        .bucket("bkt")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchTagSet");
    let e = c
        .get_bucket_tagging()
        .bucket("nope")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchBucket");
}
