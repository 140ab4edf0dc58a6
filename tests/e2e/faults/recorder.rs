//! An AWS SDK client that records every operation it makes into a
//! [`History`]: invocation and answer times, the outcome as a client
//! learns it, what reads saw, and the server's request id. The SDK's own
//! retries are off, so each attempt is one operation; the trials retry as
//! an SDK would, where they mean to.

use std::time::Duration;

use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::operation::RequestId;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart, Delete, ObjectIdentifier};
use aws_sdk_s3::Client;

use super::history::{body_of, value_of, History, Kind, Listing, OpId, Outcome, Seen};
use crate::harness::{Server, SECRET, USER};

/// How long one request may take before the client gives up on it.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(60);

/// A client without retries, with a bounded operation time.
pub fn client(endpoint: &str) -> Client {
    let creds = aws_credential_types::Credentials::new(USER, SECRET, None, None, "faults");
    let conf = aws_sdk_s3::Config::builder()
        .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_sdk_s3::config::Region::new("us-east-1"))
        .credentials_provider(creds)
        .force_path_style(true)
        .retry_config(RetryConfig::disabled())
        .timeout_config(
            TimeoutConfig::builder()
                .operation_timeout(OPERATION_TIMEOUT)
                .build(),
        )
        .build();
    Client::from_conf(conf)
}

/// How a client reads an SDK error: a 4xx means the request did not
/// happen, anything else (5xx, a cut connection, a timeout) that the
/// client cannot tell.
pub fn outcome_of<E: ProvideErrorMetadata + std::fmt::Debug, R: std::fmt::Debug>(
    e: &SdkError<E, R>,
) -> (Outcome, Option<u16>) {
    match e {
        SdkError::ServiceError(s) => {
            let status = status_of(e);
            let code = s.err().code().unwrap_or("").to_string();
            match status {
                Some(st) if (400..500).contains(&st) => (Outcome::Refused(code), status),
                _ => (Outcome::Unknown(format!("{status:?} {code}")), status),
            }
        }
        other => (
            Outcome::Unknown(format!("{other:?}").chars().take(200).collect()),
            None,
        ),
    }
}

fn status_of<E, R: std::fmt::Debug>(e: &SdkError<E, R>) -> Option<u16> {
    match e {
        SdkError::ServiceError(s) => {
            // The raw response's status, without naming its type.
            let raw = format!("{:?}", s.raw());
            raw.split("status: StatusCode(")
                .nth(1)
                .and_then(|r| r.split(')').next())
                .and_then(|n| n.parse().ok())
        }
        _ => None,
    }
}

/// An SDK client recording into a history, in one bucket.
#[derive(Clone)]
pub struct Recorder {
    /// The client.
    pub c: Client,
    /// Where operations are recorded.
    pub h: History,
    /// The bucket every key is in.
    pub bucket: String,
}

/// What a recorded write answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// How it ended.
    pub outcome: Outcome,
    /// Its version id, when acknowledged in a versioned bucket.
    pub version: Option<String>,
}

impl Recorder {
    /// A recorder for `bucket` on `server`.
    pub fn new(server: &Server, h: &History, bucket: &str) -> Recorder {
        Recorder::of(&server.endpoint, h, bucket)
    }

    /// A recorder for `bucket` at `endpoint` (a gateway of a cluster).
    pub fn of(endpoint: &str, h: &History, bucket: &str) -> Recorder {
        Recorder {
            c: client(endpoint),
            h: h.clone(),
            bucket: bucket.to_string(),
        }
    }

    /// The same recorder talking to another endpoint (a restarted server
    /// listens elsewhere).
    pub fn at(&self, endpoint: &str) -> Recorder {
        Recorder {
            c: client(endpoint),
            ..self.clone()
        }
    }

    /// The name of `key` in the history (keys of other buckets are other
    /// registers).
    pub fn name(&self, key: &str) -> String {
        format!("{}/{key}", self.bucket)
    }

    /// PutObject of value `value` (`len` pattern bytes after its name).
    pub async fn put(&self, key: &str, value: u64, len: usize, note: &str) -> Written {
        let op = self.h.invoke(&self.name(key), Kind::Put(value), note);
        self.put_as(op, key, value, len).await
    }

    /// Sends the PutObject of operation `op` (again, for a retry).
    pub async fn put_as(&self, op: OpId, key: &str, value: u64, len: usize) -> Written {
        let r = self
            .c
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .body(ByteStream::from(body_of(value, len)))
            .send()
            .await;
        match r {
            Ok(out) => self.acked(op, out.request_id(), out.version_id()),
            Err(e) => self.failed(op, &e),
        }
    }

    /// Records operation `op` as acknowledged (request `rid`, making
    /// `version`).
    fn acked(&self, op: OpId, rid: Option<&str>, version: Option<&str>) -> Written {
        self.h
            .complete(op, Outcome::Done, None, rid.map(str::to_string));
        Written {
            outcome: Outcome::Done,
            version: version.map(str::to_string),
        }
    }

    fn failed<E: ProvideErrorMetadata + std::fmt::Debug, R: std::fmt::Debug>(
        &self,
        op: OpId,
        e: &SdkError<E, R>,
    ) -> Written
    where
        SdkError<E, R>: RequestId,
    {
        let (outcome, _) = outcome_of(e);
        self.h.complete(
            op,
            outcome.clone(),
            None,
            e.request_id().map(str::to_string),
        );
        Written {
            outcome,
            version: None,
        }
    }

    /// GetObject of the current version; what it saw (`None`: no answer).
    pub async fn get(&self, key: &str, note: &str) -> Option<Seen> {
        let op = self.h.invoke(&self.name(key), Kind::Get, note);
        let (outcome, seen, rid) = self.read(key, None).await;
        self.h.complete(op, outcome, seen.clone(), rid);
        seen
    }

    /// A read that must be answered: after recovery, an acknowledged
    /// object that cannot be read is lost.
    pub async fn must_read(&self, key: &str, note: &str) -> Result<Seen, String> {
        let op = self.h.invoke_final(&self.name(key), note);
        let (outcome, seen, rid) = self.read(key, None).await;
        self.h
            .complete(op, outcome.clone(), seen.clone(), rid.clone());
        seen.ok_or_else(|| {
            format!(
                "{}/{key}: unreadable after recovery: {outcome:?} (request {})",
                self.bucket,
                rid.as_deref().unwrap_or("-")
            )
        })
    }

    /// Reads version `version` of `key` (not recorded: versions are
    /// checked against what was acknowledged, not linearised).
    pub async fn get_version(
        &self,
        key: &str,
        version: &str,
    ) -> (Outcome, Option<Seen>, Option<String>) {
        self.read(key, Some(version)).await
    }

    async fn read(
        &self,
        key: &str,
        version: Option<&str>,
    ) -> (Outcome, Option<Seen>, Option<String>) {
        let r = self
            .c
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .set_version_id(version.map(str::to_string))
            .send()
            .await;
        match r {
            Ok(out) => {
                let rid = out.request_id().map(str::to_string);
                match out.body.collect().await {
                    Ok(data) => (Outcome::Done, Some(value_of(&data.into_bytes())), rid),
                    Err(e) => (Outcome::Unknown(format!("body: {e}")), None, rid),
                }
            }
            Err(e) => {
                let rid = e.request_id().map(str::to_string);
                match outcome_of(&e) {
                    (Outcome::Refused(code), _) if code == "NoSuchKey" => {
                        (Outcome::Done, Some(Seen::Absent), rid)
                    }
                    (outcome, _) => (outcome, None, rid),
                }
            }
        }
    }

    /// DeleteObject without a version id.
    pub async fn delete(&self, key: &str, note: &str) -> Outcome {
        let op = self.h.invoke(&self.name(key), Kind::Delete, note);
        self.delete_as(op, key).await
    }

    /// Sends DeleteObject of `key` as operation `op` (invoked already, e.g.
    /// before a crash, when this is its retry) and completes it.
    pub async fn delete_as(&self, op: OpId, key: &str) -> Outcome {
        let r = self
            .c
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await;
        match r {
            Ok(out) => self.acked(op, out.request_id(), None).outcome,
            Err(e) => self.failed(op, &e).outcome,
        }
    }

    /// Sends DeleteObjects of `keys` (no version ids, nothing recorded):
    /// the outcome of each key as its entry (or the whole answer) says.
    pub async fn delete_objects_as(&self, keys: &[String]) -> Vec<Outcome> {
        let delete = Delete::builder()
            .set_objects(Some(
                keys.iter()
                    .map(|k| ObjectIdentifier::builder().key(k).build().unwrap())
                    .collect(),
            ))
            .build()
            .unwrap();
        let r = self
            .c
            .delete_objects()
            .bucket(&self.bucket)
            .delete(delete)
            .send()
            .await;
        match r {
            Ok(out) => keys
                .iter()
                .map(|k| match out.errors().iter().find(|e| e.key() == Some(k)) {
                    None => Outcome::Done,
                    Some(e) => Outcome::Unknown(e.code().unwrap_or("").to_string()),
                })
                .collect(),
            Err(e) => {
                let (outcome, _) = outcome_of(&e);
                keys.iter().map(|_| outcome.clone()).collect()
            }
        }
    }

    /// Creates an upload of `key`; its id.
    pub async fn create_upload(&self, key: &str) -> Result<String, String> {
        Ok(self
            .c
            .create_multipart_upload()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| format!("create: {:?}", outcome_of(&e).0))?
            .upload_id()
            .unwrap()
            .to_string())
    }

    /// Creates an upload of `key` and uploads value `value` (`len` bytes
    /// after its name) into it as parts of `part` bytes; returns the upload
    /// id and the parts, not completed.
    pub async fn upload(
        &self,
        key: &str,
        value: u64,
        len: usize,
        part: usize,
    ) -> Result<(String, Vec<CompletedPart>), String> {
        let id = self.create_upload(key).await?;
        let body = body_of(value, len);
        let mut parts = Vec::new();
        for (i, chunk) in body.chunks(part).enumerate() {
            let n = i as i32 + 1;
            let etag = self.upload_part(key, &id, n, chunk.to_vec()).await?;
            parts.push(CompletedPart::builder().part_number(n).e_tag(etag).build());
        }
        Ok((id, parts))
    }

    /// UploadPart; its ETag.
    pub async fn upload_part(
        &self,
        key: &str,
        id: &str,
        n: i32,
        data: Vec<u8>,
    ) -> Result<String, String> {
        self.c
            .upload_part()
            .bucket(&self.bucket)
            .key(key)
            .upload_id(id)
            .part_number(n)
            .body(ByteStream::from(data))
            .send()
            .await
            .map_err(|e| format!("part {n}: {:?}", outcome_of(&e).0))
            .map(|o| o.e_tag().unwrap_or("").to_string())
    }

    /// CompleteMultipartUpload of an upload holding value `value`,
    /// recorded as operation `op` (invoked by the caller, so retries of
    /// one completion are one operation).
    pub async fn complete_as(
        &self,
        op: OpId,
        key: &str,
        id: &str,
        parts: &[CompletedPart],
    ) -> Written {
        let r = self
            .c
            .complete_multipart_upload()
            .bucket(&self.bucket)
            .key(key)
            .upload_id(id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(parts.to_vec()))
                    .build(),
            )
            .send()
            .await;
        match r {
            Ok(out) => self.acked(op, out.request_id(), out.version_id()),
            Err(e) => self.failed(op, &e),
        }
    }

    /// Lists every key under `prefix` (all pages) and records the listing.
    pub async fn list(&self, prefix: &str) -> Result<Vec<String>, String> {
        let start = self.h.now();
        let mut keys = Vec::new();
        let mut token = None;
        let mut first_rid = None;
        loop {
            let out = self
                .c
                .list_objects_v2()
                .bucket(&self.bucket)
                .prefix(prefix)
                .set_continuation_token(token.clone())
                .send()
                .await
                .map_err(|e| format!("list: {:?}", outcome_of(&e).0))?;
            if first_rid.is_none() {
                first_rid = out.request_id().map(str::to_string);
            }
            keys.extend(
                out.contents()
                    .iter()
                    .filter_map(|o| o.key().map(str::to_string)),
            );
            token = out.next_continuation_token().map(str::to_string);
            if token.is_none() {
                break;
            }
        }
        self.h.listed(Listing {
            prefix: self.name(prefix),
            start,
            end: self.h.now(),
            keys: keys.iter().map(|k| self.name(k)).collect(),
            request_id: first_rid,
        });
        Ok(keys)
    }
}
