//! s3-wire: the parsing half of the gateway room — everything a client
//! hands Granary over S3, turned into typed values or S3's error.
//!
//! It owns the [`S3Error`] codes (in `error.rs` and nowhere else, with the
//! XML error body), authentication (SigV4 headers and presigned queries,
//! SigV2 presigned URLs, the `aws-chunked` decoder with its signed chunks
//! and trailers), the XML documents clients send and receive, Range and
//! conditional headers, tags, CORS rules, bucket names, the bucket and key
//! a request addresses, IAM policy documents, and POST forms with their
//! policies.
//!
//! It must not know HTTP serving, storage, buckets' contents or any
//! request's outcome: the gateway calls these parsers and answers. With
//! the `placement` feature (the gateway's), [`S3Error`] converts from the
//! store's errors; without it nothing here links RocksDB, so the fuzz
//! targets build it on their own.

pub mod auth;
pub mod conditions;
pub mod cors;
pub mod error;
pub mod iam_policy;
pub mod names;
pub mod post_form;
pub mod post_policy;
pub mod query;
pub mod range;
pub mod tags;
pub mod target;
pub mod xml;
pub mod xml_escape;

pub use error::{S3Error, S3Result};
