use crate::harness::*;

#[tokio::test]
async fn bucket_lifecycle() {
    let s = Server::start(4);
    let c = s.client();
    c.create_bucket().bucket("alpha").send().await.unwrap();
    c.create_bucket()
        .bucket("beta.data-1")
        .send()
        .await
        .unwrap();
    // Re-creating your own bucket in us-east-1 succeeds, as on AWS.
    c.create_bucket().bucket("alpha").send().await.unwrap();
    let names: Vec<String> = c
        .list_buckets()
        .send()
        .await
        .unwrap()
        .buckets()
        .iter()
        .map(|b| b.name().unwrap().to_string())
        .collect();
    assert_eq!(names, vec!["alpha", "beta.data-1"]);
    c.head_bucket().bucket("alpha").send().await.unwrap();
    let loc = c
        .get_bucket_location()
        .bucket("alpha")
        .send()
        .await
        .unwrap();
    assert!(loc
        .location_constraint()
        .is_none_or(|l| l.as_str().is_empty()));

    let e = c.head_bucket().bucket("nope").send().await.unwrap_err();
    assert_eq!(status(&e), 404);
    let e = c.list_objects_v2().bucket("nope").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchBucket");
    let e = c.delete_bucket().bucket("nope").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchBucket");
    for bad in [
        "ab",
        "Upper",
        "under_score",
        "granary",
        "192.168.1.1",
        "-dash",
    ] {
        let e = c.create_bucket().bucket(bad).send().await.unwrap_err();
        assert_eq!(code(&e), "InvalidBucketName", "{bad}");
    }

    put_bytes(&c, "alpha", "k", b"v".to_vec()).await;
    let e = c.delete_bucket().bucket("alpha").send().await.unwrap_err();
    assert_eq!(code(&e), "BucketNotEmpty");
    c.delete_object()
        .bucket("alpha")
        .key("k")
        .send()
        .await
        .unwrap();
    c.delete_bucket().bucket("alpha").send().await.unwrap();
    let e = c.head_bucket().bucket("alpha").send().await.unwrap_err();
    assert_eq!(status(&e), 404);
    let e = c
        .put_object()
        .bucket("alpha")
        .key("k")
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchBucket");
}

#[tokio::test]
async fn regions_and_location_constraints() {
    let s = Server::start_with(1, &["--region", "eu-west-1"]);
    let c = client_for(&s.endpoint, USER, SECRET, "eu-west-1");
    use aws_sdk_s3::types::{BucketLocationConstraint, CreateBucketConfiguration};
    c.create_bucket()
        .bucket("euro")
        .create_bucket_configuration(
            CreateBucketConfiguration::builder()
                .location_constraint(BucketLocationConstraint::EuWest1)
                .build(),
        )
        .send()
        .await
        .unwrap();
    let loc = c.get_bucket_location().bucket("euro").send().await.unwrap();
    assert_eq!(loc.location_constraint().unwrap().as_str(), "eu-west-1");
    // Outside us-east-1, re-creating your own bucket is a 409.
    let e = c.create_bucket().bucket("euro").send().await.unwrap_err();
    assert_eq!(code(&e), "BucketAlreadyOwnedByYou");
    assert_eq!(status(&e), 409);
    let e = c
        .create_bucket()
        .bucket("other")
        .create_bucket_configuration(
            CreateBucketConfiguration::builder()
                .location_constraint(BucketLocationConstraint::UsWest2)
                .build(),
        )
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "IllegalLocationConstraintException");
    // A client signing for another region is told which one to use.
    let wrong = client_for(&s.endpoint, USER, SECRET, "us-east-1");
    let e = wrong.list_buckets().send().await.unwrap_err();
    assert_eq!(code(&e), "AuthorizationHeaderMalformed");
    assert_eq!(status(&e), 400);
}

/// A PUT whose bucket was checked before a DeleteBucket began and whose
/// version is committed after the DeleteBucket found the bucket empty is
/// never acknowledged into the deleted bucket: either it is acknowledged
/// and the DeleteBucket fails with BucketNotEmpty, or it answers
/// NoSuchBucket and leaves nothing behind (the bucket made again is
/// empty). The PUT is held between its bucket check and its commit by a
/// fault point; with sets of 4 the two land in different sets. Before the
/// fix the PUT was acknowledged and the bucket deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_racing_a_delete_bucket_is_never_acknowledged_into_the_deleted_bucket() {
    let s = Server::start_with(8, &["--set-width", "4"]);
    if !crate::faults::control::enabled(&s) {
        return;
    }
    let c = s.client();
    for round in 0..2 {
        let bucket = format!("race{round}");
        c.create_bucket().bucket(&bucket).send().await.unwrap();
        // The PUT's record commit waits 2 s, after its bucket check.
        crate::faults::control::set(&s, "set.record.before", "1*return(sleep:2000)->off").await;
        let put = {
            let (c, bucket) = (c.clone(), bucket.clone());
            tokio::spawn(async move {
                c.put_object()
                    .bucket(&bucket)
                    .key("late")
                    .body(aws_sdk_s3::primitives::ByteStream::from_static(b"late"))
                    .send()
                    .await
            })
        };
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let deleted = c.delete_bucket().bucket(&bucket).send().await;
        let put = put.await.unwrap();
        match (&put, &deleted) {
            (Ok(_), Err(e)) => assert_eq!(code(e), "BucketNotEmpty"),
            (Err(e), Ok(_)) => {
                assert_eq!(code(e), "NoSuchBucket");
                c.create_bucket().bucket(&bucket).send().await.unwrap();
                let listed = c.list_objects_v2().bucket(&bucket).send().await.unwrap();
                assert!(listed.contents().is_empty(), "{listed:?}");
            }
            other => panic!("put and delete both {other:?}"),
        }
    }
}
