//! Users and policies: `granary admin user ...` against the admin API,
//! bucket policies and user policies (Allow/Deny, principals, wildcards,
//! `aws:SourceIp`, `s3:prefix`), anonymous access only where a policy says.

use std::process::Command;

use aws_sdk_s3::types::{Delete, ObjectIdentifier};

use crate::harness::*;

fn write_policy(s: &Server, name: &str, doc: &str) -> String {
    let path = s.root.path().join(name);
    std::fs::write(&path, doc).unwrap();
    path.to_string_lossy().into_owned()
}

async fn unsigned(method: &str, url: String, body: &[u8]) -> Reply {
    send(
        http::Request::builder()
            .method(method)
            .uri(url)
            .body(body.to_vec())
            .unwrap(),
    )
    .await
}

#[tokio::test]
async fn users_bucket_policies_and_anonymous_access() {
    let s = Server::start(1);
    let root = s.client();
    for b in ["data", "private"] {
        root.create_bucket().bucket(b).send().await.unwrap();
    }
    for k in ["public/a", "public/b", "secret/s", "other"] {
        put_bytes(&root, "data", k, k.as_bytes().to_vec()).await;
    }

    let (ak, sk) = add_user(&s, "alice", &[]);
    let alice = client_for(&s.endpoint, &ak, &sk, "us-east-1");
    let listed = admin(&s, &["user", "list"]).unwrap();
    assert!(listed.contains("alice") && listed.contains(&ak));
    assert!(!listed.contains(&sk), "secrets are never listed");
    assert!(admin(&s, &["user", "add", "alice"])
        .unwrap_err()
        .contains("UserExists"));
    assert!(admin(&s, &["user", "add", "bad name!"]).is_err());

    // A user without any policy may do nothing.
    let e = alice.list_buckets().send().await.unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (403, "AccessDenied"));
    let e = alice
        .get_object()
        .bucket("data")
        .key("public/a")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    // Nor may a user administer users or bucket policies.
    let e = alice
        .get_bucket_policy()
        .bucket("data")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    let out = Command::new(env!("CARGO_BIN_EXE_granary"))
        .args(["admin", "--endpoint", &s.endpoint, "user", "list"])
        .env("GRANARY_ROOT_USER", &ak)
        .env("GRANARY_ROOT_PASSWORD", &sk)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("AccessDenied"));

    // Bucket policy: alice may read data/*, list only under public/, and an
    // explicit Deny on secret/ wins over the Allow.
    let policy = format!(
        r#"{{"Version":"2012-10-17","Statement":[
        {{"Effect":"Allow","Principal":{{"AWS":["arn:aws:iam:::user/alice"]}},
          "Action":["s3:GetObject"],"Resource":"arn:aws:s3:::data/*"}},
        {{"Effect":"Allow","Principal":{{"AWS":"{ak}"}},"Action":"s3:ListBucket",
          "Resource":"arn:aws:s3:::data","Condition":{{"StringLike":{{"s3:prefix":"public/*"}}}}}},
        {{"Effect":"Allow","Principal":{{"AWS":"arn:aws:iam:::user/alice"}},
          "Action":["s3:PutObject","s3:DeleteObject"],"Resource":"arn:aws:s3:::data/public/*"}},
        {{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::data/secret/*"}}
        ]}}"#
    );
    root.put_bucket_policy()
        .bucket("data")
        .policy(&policy)
        .send()
        .await
        .unwrap();
    let got = root
        .get_bucket_policy()
        .bucket("data")
        .send()
        .await
        .unwrap();
    assert_eq!(got.policy(), Some(policy.as_str()));

    assert_eq!(get_bytes(&alice, "data", "public/a").await, b"public/a");
    assert_eq!(get_bytes(&alice, "data", "other").await, b"other");
    let e = alice
        .get_object()
        .bucket("data")
        .key("secret/s")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    let e = root
        .get_object()
        .bucket("data")
        .key("secret/s")
        .send()
        .await;
    assert!(e.is_ok(), "the root key is not subject to policies");
    let l = alice
        .list_objects_v2()
        .bucket("data")
        .prefix("public/")
        .send()
        .await
        .unwrap();
    assert_eq!(l.key_count(), Some(2));
    let e = alice
        .list_objects_v2()
        .bucket("data")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    let e = alice
        .get_object()
        .bucket("private")
        .key("x")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    // Writes: allowed under public/, refused elsewhere with nothing changed.
    put_bytes(&alice, "data", "public/new", b"new".to_vec()).await;
    let e = alice
        .put_object()
        .bucket("data")
        .key("other")
        .body(b"overwrite".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    assert_eq!(get_bytes(&root, "data", "other").await, b"other");
    // A copy needs read access to its source too.
    let e = alice
        .copy_object()
        .bucket("data")
        .key("public/stolen")
        .copy_source("data/secret/s")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    alice
        .copy_object()
        .bucket("data")
        .key("public/copy")
        .copy_source("data/other")
        .send()
        .await
        .unwrap();
    // DeleteObjects is decided key by key.
    let ident = |k: &str| ObjectIdentifier::builder().key(k).build().unwrap();
    let r = alice
        .delete_objects()
        .bucket("data")
        .delete(
            Delete::builder()
                .objects(ident("public/new"))
                .objects(ident("other"))
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.deleted().len(), 1);
    assert_eq!(r.errors()[0].key(), Some("other"));
    assert_eq!(r.errors()[0].code(), Some("AccessDenied"));
    assert_eq!(get_bytes(&root, "data", "other").await, b"other");

    // Anonymous: refused until a statement for Principal "*" allows it.
    let url = |k: &str| format!("{}/data/{k}", s.endpoint);
    let r = unsigned("GET", url("public/a"), b"").await;
    assert_eq!((r.status, r.code().as_str()), (403, "AccessDenied"));
    let anon_policy = policy.replace(
        r#"{"Effect":"Deny""#,
        r#"{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/public/*"},
        {"Effect":"Deny""#,
    );
    root.put_bucket_policy()
        .bucket("data")
        .policy(&anon_policy)
        .send()
        .await
        .unwrap();
    let r = unsigned("GET", url("public/a"), b"").await;
    assert_eq!((r.status, r.body.as_slice()), (200, b"public/a".as_slice()));
    let r = unsigned("GET", url("other"), b"").await;
    assert_eq!(r.code(), "AccessDenied");
    let r = unsigned("PUT", url("public/a"), b"vandal").await;
    assert_eq!(r.code(), "AccessDenied");
    let r = unsigned("GET", format!("{}/data", s.endpoint), b"").await;
    assert_eq!(r.code(), "AccessDenied");
    assert_eq!(get_bytes(&root, "data", "public/a").await, b"public/a");

    // Bad policies are refused and the stored one stays.
    for bad in [
        "not json",
        r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::other-bucket/*"}]}"#,
        r#"{"Statement":[{"Effect":"Maybe","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/*"}]}"#,
        r#"{"Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/*"}]}"#,
    ] {
        let e = root
            .put_bucket_policy()
            .bucket("data")
            .policy(bad)
            .send()
            .await
            .unwrap_err();
        assert_eq!(
            (status(&e), code(&e).as_str()),
            (400, "MalformedPolicy"),
            "{bad}"
        );
    }
    let got = root
        .get_bucket_policy()
        .bucket("data")
        .send()
        .await
        .unwrap();
    assert_eq!(got.policy(), Some(anon_policy.as_str()));
    root.delete_bucket_policy()
        .bucket("data")
        .send()
        .await
        .unwrap();
    let e = root
        .get_bucket_policy()
        .bucket("data")
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (404, "NoSuchBucketPolicy"));
    let r = unsigned("GET", url("public/a"), b"").await;
    assert_eq!(r.code(), "AccessDenied");
}

#[tokio::test]
async fn user_policies_source_ip_and_key_removal() {
    let s = Server::start(1);
    let root = s.client();
    for b in ["shared", "bobs"] {
        root.create_bucket().bucket(b).send().await.unwrap();
    }
    let own = write_policy(
        &s,
        "bob.json",
        r#"{"Version":"2012-10-17","Statement":[
            {"Effect":"Allow","Action":"s3:*","Resource":["arn:aws:s3:::bobs","arn:aws:s3:::bobs/*"]},
            {"Effect":"Allow","Action":"s3:ListAllMyBuckets","Resource":"*"}]}"#,
    );
    let (ak, sk) = add_user(&s, "bob", &["--policy", &own]);
    let bob = client_for(&s.endpoint, &ak, &sk, "us-east-1");
    put_bytes(&bob, "bobs", "k", b"mine".to_vec()).await;
    assert_eq!(get_bytes(&bob, "bobs", "k").await, b"mine");
    assert_eq!(bob.list_buckets().send().await.unwrap().buckets().len(), 2);
    let e = bob
        .get_object()
        .bucket("shared")
        .key("k")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");

    // aws:SourceIp: a grant from an address range bob is not in does not
    // apply; one covering loopback does.
    let grant = |cidr: &str| {
        format!(
            r#"{{"Statement":[{{"Effect":"Allow","Principal":{{"AWS":"arn:aws:iam:::user/bob"}},
            "Action":"s3:PutObject","Resource":"arn:aws:s3:::shared/*",
            "Condition":{{"IpAddress":{{"aws:SourceIp":"{cidr}"}}}}}}]}}"#
        )
    };
    root.put_bucket_policy()
        .bucket("shared")
        .policy(grant("10.0.0.0/8"))
        .send()
        .await
        .unwrap();
    let e = bob
        .put_object()
        .bucket("shared")
        .key("k")
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    root.put_bucket_policy()
        .bucket("shared")
        .policy(grant("127.0.0.0/8"))
        .send()
        .await
        .unwrap();
    put_bytes(&bob, "shared", "k", b"x".to_vec()).await;

    // An explicit Deny in the user's own policy wins over the bucket's Allow.
    let deny = write_policy(
        &s,
        "deny.json",
        r#"{"Statement":[{"Effect":"Deny","Action":"s3:PutObject","Resource":"arn:aws:s3:::shared/*"}]}"#,
    );
    admin(&s, &["user", "set-policy", &ak, &deny]).unwrap();
    let e = bob
        .put_object()
        .bucket("shared")
        .key("k2")
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    // ...and it replaced the old policy: bobs/ is closed to him now.
    let e = bob
        .get_object()
        .bucket("bobs")
        .key("k")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    admin(&s, &["user", "set-policy", &ak, "--clear"]).unwrap();
    put_bytes(&bob, "shared", "k2", b"y".to_vec()).await;
    assert!(admin(
        &s,
        &[
            "user",
            "set-policy",
            &ak,
            &write_policy(&s, "bad.json", "{}")
        ]
    )
    .is_err());

    // Secrets are stored sealed: the plain secret is in no file of the store.
    for f in files_under(&s.dirs[0]) {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !bytes.windows(sk.len()).any(|w| w == sk.as_bytes()),
            "{} holds the secret",
            f.display()
        );
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(s.dirs[0].join("keyring.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    // Users survive a restart (the master key is reused from the keyring).
    let mut s = s;
    s.restart();
    let bob = client_for(&s.endpoint, &ak, &sk, "us-east-1");
    put_bytes(&bob, "shared", "k3", b"z".to_vec()).await;
    // Removing the user stops the key at once.
    admin(&s, &["user", "remove", &ak]).unwrap();
    let e = bob
        .put_object()
        .bucket("shared")
        .key("k4")
        .body(b"x".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (403, "InvalidAccessKeyId"));
    assert!(admin(&s, &["user", "remove", &ak])
        .unwrap_err()
        .contains("NoSuchUser"));
}

#[tokio::test]
async fn a_deny_on_a_request_condition_key_is_enforced_and_unknown_keys_are_refused() {
    let s = Server::start(1);
    let c = s.client();
    c.create_bucket().bucket("pub").send().await.unwrap();
    put_bytes(&c, "pub", "open/a", b"open".to_vec()).await;
    put_bytes(&c, "pub", "private/a", b"private".to_vec()).await;
    let policy = r#"{"Version":"2012-10-17","Statement":[
        {"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::pub/*"},
        {"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::pub/private/*",
         "Condition":{"StringEquals":{"aws:PrincipalType":"Anonymous"}}},
        {"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::pub/*",
         "Condition":{"StringLike":{"aws:UserAgent":"*BadBot*"}}}
    ]}"#;
    c.put_bucket_policy()
        .bucket("pub")
        .policy(policy)
        .send()
        .await
        .unwrap();
    let anon = reqwest::Client::new();
    let get = |key: &str, agent: &str| {
        anon.get(format!("{}/pub/{key}", s.endpoint))
            .header("user-agent", agent.to_string())
            .send()
    };
    assert_eq!(get("open/a", "curl/8").await.unwrap().status(), 200);
    assert_eq!(get("private/a", "curl/8").await.unwrap().status(), 403);
    assert_eq!(get("open/a", "a BadBot/1").await.unwrap().status(), 403);
    // A key Granary does not evaluate is refused, not stored to never match.
    let e = c
        .put_bucket_policy()
        .bucket("pub")
        .policy(policy.replace("aws:PrincipalType", "aws:MadeUpKey"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "MalformedPolicy");
    assert_eq!(
        get("private/a", "curl/8").await.unwrap().status(),
        403,
        "the old policy stays"
    );
}
