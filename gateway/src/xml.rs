//! S3's XML documents (wire types only), serialised with quick-xml.
//! Request documents are parsed leniently (unknown elements ignored) and
//! anything unparseable is MalformedXML.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{S3Error, S3Result};

/// The S3 XML namespace.
pub const NS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";

/// Serialises `value` as the document element `root`, with declaration.
pub fn to_xml<T: Serialize>(root: &str, value: &T) -> String {
    let body = quick_xml::se::to_string_with_root(root, value).expect("XML serialises");
    format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{body}")
}

/// Parses a request document.
pub fn from_xml<T: DeserializeOwned>(bytes: &[u8]) -> S3Result<T> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| S3Error::MalformedXml("The XML you provided was not well-formed or did not validate against our published schema".into()))?;
    quick_xml::de::from_str(text).map_err(|e| {
        S3Error::MalformedXml(format!(
            "The XML you provided was not well-formed or did not validate against our published schema ({e})"
        ))
    })
}

/// Bucket or object owner.
#[derive(Serialize, Clone, Debug)]
pub struct Owner {
    /// Canonical user id.
    #[serde(rename = "ID")]
    pub id: String,
    /// Display name.
    #[serde(rename = "DisplayName")]
    pub display_name: String,
}

/// ListBuckets response.
#[derive(Serialize)]
pub struct ListAllMyBucketsResult {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// Owner of the buckets.
    #[serde(rename = "Owner")]
    pub owner: Owner,
    /// The buckets.
    #[serde(rename = "Buckets")]
    pub buckets: Buckets,
    /// Token for the next page.
    #[serde(rename = "ContinuationToken", skip_serializing_if = "Option::is_none")]
    pub continuation_token: Option<String>,
    /// Prefix filter echoed.
    #[serde(rename = "Prefix", skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}

/// Wrapper of bucket entries.
#[derive(Serialize)]
pub struct Buckets {
    /// Entries.
    #[serde(rename = "Bucket", default)]
    pub bucket: Vec<BucketEntry>,
}

/// One bucket in ListBuckets.
#[derive(Serialize)]
pub struct BucketEntry {
    /// Name.
    #[serde(rename = "Name")]
    pub name: String,
    /// Creation time (ISO 8601).
    #[serde(rename = "CreationDate")]
    pub creation_date: String,
    /// Region.
    #[serde(rename = "BucketRegion")]
    pub bucket_region: String,
}

/// One object in a listing.
#[derive(Serialize)]
pub struct Contents {
    /// Key (URL-encoded when asked).
    #[serde(rename = "Key")]
    pub key: String,
    /// Last modified (ISO 8601).
    #[serde(rename = "LastModified")]
    pub last_modified: String,
    /// Quoted ETag.
    #[serde(rename = "ETag")]
    pub etag: String,
    /// Checksum algorithm of the object, if any.
    #[serde(rename = "ChecksumAlgorithm", skip_serializing_if = "Option::is_none")]
    pub checksum_algorithm: Option<String>,
    /// Checksum type, if any.
    #[serde(rename = "ChecksumType", skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<String>,
    /// Size in bytes.
    #[serde(rename = "Size")]
    pub size: u64,
    /// Owner, when asked for.
    #[serde(rename = "Owner", skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
    /// Storage class.
    #[serde(rename = "StorageClass")]
    pub storage_class: String,
}

/// A rolled-up common prefix.
#[derive(Serialize)]
pub struct CommonPrefix {
    /// The prefix.
    #[serde(rename = "Prefix")]
    pub prefix: String,
}

/// ListObjectsV2 response.
#[derive(Serialize)]
pub struct ListBucketResultV2 {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// Bucket.
    #[serde(rename = "Name")]
    pub name: String,
    /// Prefix.
    #[serde(rename = "Prefix")]
    pub prefix: String,
    /// Delimiter.
    #[serde(rename = "Delimiter", skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<String>,
    /// Max keys.
    #[serde(rename = "MaxKeys")]
    pub max_keys: usize,
    /// Encoding type.
    #[serde(rename = "EncodingType", skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
    /// Keys + prefixes returned.
    #[serde(rename = "KeyCount")]
    pub key_count: usize,
    /// More results follow.
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
    /// Token given.
    #[serde(rename = "ContinuationToken", skip_serializing_if = "Option::is_none")]
    pub continuation_token: Option<String>,
    /// Token for the next page.
    #[serde(
        rename = "NextContinuationToken",
        skip_serializing_if = "Option::is_none"
    )]
    pub next_continuation_token: Option<String>,
    /// Start-after given.
    #[serde(rename = "StartAfter", skip_serializing_if = "Option::is_none")]
    pub start_after: Option<String>,
    /// Objects.
    #[serde(rename = "Contents", default)]
    pub contents: Vec<Contents>,
    /// Common prefixes.
    #[serde(rename = "CommonPrefixes", default)]
    pub common_prefixes: Vec<CommonPrefix>,
}

/// ListObjects (v1) response.
#[derive(Serialize)]
pub struct ListBucketResultV1 {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// Bucket.
    #[serde(rename = "Name")]
    pub name: String,
    /// Prefix.
    #[serde(rename = "Prefix")]
    pub prefix: String,
    /// Marker given.
    #[serde(rename = "Marker")]
    pub marker: String,
    /// Next marker (only with a delimiter).
    #[serde(rename = "NextMarker", skip_serializing_if = "Option::is_none")]
    pub next_marker: Option<String>,
    /// Max keys.
    #[serde(rename = "MaxKeys")]
    pub max_keys: usize,
    /// Delimiter.
    #[serde(rename = "Delimiter", skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<String>,
    /// More results follow.
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
    /// Encoding type.
    #[serde(rename = "EncodingType", skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
    /// Objects.
    #[serde(rename = "Contents", default)]
    pub contents: Vec<Contents>,
    /// Common prefixes.
    #[serde(rename = "CommonPrefixes", default)]
    pub common_prefixes: Vec<CommonPrefix>,
}

/// GetBucketLocation response.
#[derive(Serialize)]
pub struct LocationConstraint {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// Region (empty for us-east-1).
    #[serde(rename = "$text")]
    pub region: String,
}

/// GetBucketVersioning response (versioning never enabled).
#[derive(Serialize)]
pub struct VersioningConfiguration {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
}

/// CopyObject response.
#[derive(Serialize)]
pub struct CopyObjectResult {
    /// Quoted ETag.
    #[serde(rename = "ETag")]
    pub etag: String,
    /// Last modified (ISO 8601).
    #[serde(rename = "LastModified")]
    pub last_modified: String,
}

/// UploadPartCopy response.
#[derive(Serialize)]
pub struct CopyPartResult {
    /// Quoted ETag of the new part.
    #[serde(rename = "ETag")]
    pub etag: String,
    /// Last modified (ISO 8601).
    #[serde(rename = "LastModified")]
    pub last_modified: String,
}

/// CreateMultipartUpload response.
#[derive(Serialize)]
pub struct InitiateMultipartUploadResult {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// Bucket.
    #[serde(rename = "Bucket")]
    pub bucket: String,
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// Upload id.
    #[serde(rename = "UploadId")]
    pub upload_id: String,
}

/// CompleteMultipartUpload response.
#[derive(Serialize)]
pub struct CompleteMultipartUploadResult {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// URL of the object.
    #[serde(rename = "Location")]
    pub location: String,
    /// Bucket.
    #[serde(rename = "Bucket")]
    pub bucket: String,
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// Quoted multipart ETag.
    #[serde(rename = "ETag")]
    pub etag: String,
}

/// A user reference in multipart listings.
#[derive(Serialize, Clone)]
pub struct Initiator {
    /// Id.
    #[serde(rename = "ID")]
    pub id: String,
    /// Display name.
    #[serde(rename = "DisplayName")]
    pub display_name: String,
}

/// One part in ListParts.
#[derive(Serialize)]
pub struct PartEntry {
    /// Part number.
    #[serde(rename = "PartNumber")]
    pub part_number: u32,
    /// Upload time.
    #[serde(rename = "LastModified")]
    pub last_modified: String,
    /// Quoted ETag.
    #[serde(rename = "ETag")]
    pub etag: String,
    /// Bytes.
    #[serde(rename = "Size")]
    pub size: u64,
}

/// ListParts response.
#[derive(Serialize)]
pub struct ListPartsResult {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// Bucket.
    #[serde(rename = "Bucket")]
    pub bucket: String,
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// Upload id.
    #[serde(rename = "UploadId")]
    pub upload_id: String,
    /// Initiator.
    #[serde(rename = "Initiator")]
    pub initiator: Initiator,
    /// Owner.
    #[serde(rename = "Owner")]
    pub owner: Owner,
    /// Storage class.
    #[serde(rename = "StorageClass")]
    pub storage_class: String,
    /// Marker given.
    #[serde(rename = "PartNumberMarker")]
    pub part_number_marker: u32,
    /// Next marker.
    #[serde(rename = "NextPartNumberMarker")]
    pub next_part_number_marker: u32,
    /// Max parts.
    #[serde(rename = "MaxParts")]
    pub max_parts: usize,
    /// More parts follow.
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
    /// Parts.
    #[serde(rename = "Part", default)]
    pub parts: Vec<PartEntry>,
}

/// One upload in ListMultipartUploads.
#[derive(Serialize)]
pub struct UploadEntry {
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// Upload id.
    #[serde(rename = "UploadId")]
    pub upload_id: String,
    /// Initiator.
    #[serde(rename = "Initiator")]
    pub initiator: Initiator,
    /// Owner.
    #[serde(rename = "Owner")]
    pub owner: Owner,
    /// Storage class.
    #[serde(rename = "StorageClass")]
    pub storage_class: String,
    /// Start time.
    #[serde(rename = "Initiated")]
    pub initiated: String,
}

/// ListMultipartUploads response.
#[derive(Serialize)]
pub struct ListMultipartUploadsResult {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// Bucket.
    #[serde(rename = "Bucket")]
    pub bucket: String,
    /// Key marker given.
    #[serde(rename = "KeyMarker")]
    pub key_marker: String,
    /// Upload id marker given.
    #[serde(rename = "UploadIdMarker")]
    pub upload_id_marker: String,
    /// Next key marker.
    #[serde(rename = "NextKeyMarker", skip_serializing_if = "Option::is_none")]
    pub next_key_marker: Option<String>,
    /// Next upload id marker.
    #[serde(rename = "NextUploadIdMarker", skip_serializing_if = "Option::is_none")]
    pub next_upload_id_marker: Option<String>,
    /// Prefix.
    #[serde(rename = "Prefix")]
    pub prefix: String,
    /// Delimiter.
    #[serde(rename = "Delimiter", skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<String>,
    /// Max uploads.
    #[serde(rename = "MaxUploads")]
    pub max_uploads: usize,
    /// More follow.
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
    /// Encoding type.
    #[serde(rename = "EncodingType", skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
    /// Uploads.
    #[serde(rename = "Upload", default)]
    pub uploads: Vec<UploadEntry>,
    /// Common prefixes.
    #[serde(rename = "CommonPrefixes", default)]
    pub common_prefixes: Vec<CommonPrefix>,
}

/// A deleted key in DeleteObjects.
#[derive(Serialize)]
pub struct DeletedEntry {
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
}

/// A failed key in DeleteObjects.
#[derive(Serialize)]
pub struct DeleteError {
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// S3 error code.
    #[serde(rename = "Code")]
    pub code: String,
    /// Message.
    #[serde(rename = "Message")]
    pub message: String,
}

/// DeleteObjects response.
#[derive(Serialize)]
pub struct DeleteResult {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// Deleted keys (omitted in quiet mode).
    #[serde(rename = "Deleted", default)]
    pub deleted: Vec<DeletedEntry>,
    /// Failures.
    #[serde(rename = "Error", default)]
    pub errors: Vec<DeleteError>,
}

/// CompleteMultipartUpload request.
#[derive(Deserialize, Debug)]
pub struct CompleteMultipartUpload {
    /// Parts in the order given.
    #[serde(rename = "Part", default)]
    pub parts: Vec<CompletedPart>,
}

/// One part of a CompleteMultipartUpload request.
#[derive(Deserialize, Debug)]
pub struct CompletedPart {
    /// Part number.
    #[serde(rename = "PartNumber")]
    pub part_number: u32,
    /// ETag as given (quotes optional).
    #[serde(rename = "ETag")]
    pub etag: String,
}

/// DeleteObjects request.
#[derive(Deserialize, Debug)]
pub struct Delete {
    /// Quiet mode: report only failures.
    #[serde(rename = "Quiet", default)]
    pub quiet: bool,
    /// Keys to delete.
    #[serde(rename = "Object", default)]
    pub objects: Vec<ObjectIdentifier>,
}

/// One key of a DeleteObjects request.
#[derive(Deserialize, Debug)]
pub struct ObjectIdentifier {
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// Version id.
    #[serde(rename = "VersionId", default)]
    pub version_id: Option<String>,
}

/// CreateBucket request body.
#[derive(Deserialize, Debug)]
pub struct CreateBucketConfiguration {
    /// Requested region.
    #[serde(rename = "LocationConstraint", default)]
    pub location_constraint: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_requests_and_rejects_garbage() {
        let c: CompleteMultipartUpload = from_xml(
            br#"<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
                <Part><PartNumber>1</PartNumber><ETag>"a"</ETag><ChecksumCRC32>x</ChecksumCRC32></Part>
                <Part><ETag>b</ETag><PartNumber>2</PartNumber></Part></CompleteMultipartUpload>"#,
        )
        .unwrap();
        assert_eq!(c.parts.len(), 2);
        assert_eq!(c.parts[1].part_number, 2);
        let d: Delete =
            from_xml(b"<Delete><Quiet>true</Quiet><Object><Key>a&amp;b</Key></Object></Delete>")
                .unwrap();
        assert!(d.quiet);
        assert_eq!(d.objects[0].key, "a&b");
        assert!(from_xml::<Delete>(b"<Delete><Object><Key>x</Key></Delete>").is_err());
        assert!(from_xml::<CompleteMultipartUpload>(b"<CompleteMultipartUpload><Part><PartNumber>x</PartNumber><ETag>a</ETag></Part></CompleteMultipartUpload>").is_err());
        assert!(from_xml::<Delete>(b"\xff\xfe").is_err());
    }

    #[test]
    fn writes_s3_shapes() {
        let x = to_xml(
            "ListBucketResult",
            &ListBucketResultV2 {
                xmlns: NS,
                name: "b".into(),
                prefix: "".into(),
                delimiter: Some("/".into()),
                max_keys: 1000,
                encoding_type: None,
                key_count: 1,
                is_truncated: false,
                continuation_token: None,
                next_continuation_token: None,
                start_after: None,
                contents: vec![Contents {
                    key: "a<b".into(),
                    last_modified: "2009-10-12T17:50:30.000Z".into(),
                    etag: "\"e\"".into(),
                    checksum_algorithm: None,
                    checksum_type: None,
                    size: 3,
                    owner: None,
                    storage_class: "STANDARD".into(),
                }],
                common_prefixes: vec![CommonPrefix {
                    prefix: "p/".into(),
                }],
            },
        );
        assert!(x.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"), "{x}");
        assert!(x.contains("<Key>a&lt;b</Key>"), "{x}");
        assert!(
            x.contains("<CommonPrefixes><Prefix>p/</Prefix></CommonPrefixes>"),
            "{x}"
        );
        assert!(x.contains("<IsTruncated>false</IsTruncated>"), "{x}");
        let l = to_xml(
            "LocationConstraint",
            &LocationConstraint {
                xmlns: NS,
                region: "eu-west-1".into(),
            },
        );
        assert!(l.ends_with(">eu-west-1</LocationConstraint>"), "{l}");
    }
}
