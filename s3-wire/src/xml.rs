//! S3's XML documents (wire types), serialised with quick-xml (text
//! escaped by `xml_escape`). Request documents are parsed leniently
//! (unknown elements ignored) and anything unparseable is MalformedXML.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{S3Error, S3Result};
use crate::xml_escape::push_controls;

/// The S3 XML namespace.
pub const NS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";

/// Serialises `value` as the document element `root`, with declaration.
pub fn to_xml<T: Serialize>(root: &str, value: &T) -> String {
    let body = quick_xml::se::to_string_with_root(root, value).expect("XML serialises");
    // quick-xml escapes `&`, `<`, `>` and carriage return in text; what it
    // leaves raw of the control characters (there is no other whitespace
    // in its output) becomes references here.
    let mut out = String::with_capacity(body.len() + 40);
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    push_controls(&mut out, &body);
    out
}

fn malformed(why: impl std::fmt::Display) -> S3Error {
    S3Error::MalformedXml(format!(
        "The XML you provided was not well-formed or did not validate against our published schema ({why})"
    ))
}

/// A request document's text, once it is one well-formed XML document:
/// UTF-8 of XML 1.0's characters (no control characters but tab, line feed
/// and carriage return), an XML declaration only at its start and only of
/// version 1.0 (the serde reader reads a 1.1 document's text by 1.1's
/// line-end rules, and a declaration anywhere switched them), one root
/// element with matching end tags, element names and
/// attributes that are XML, at most one document type declaration and only
/// before the root, and nothing after the root but whitespace, comments
/// and processing instructions (S3 answers MalformedXML otherwise). The
/// serde reader alone stops at the root's end and took any trailing bytes,
/// and a declaration between two runs of text panics it — both found by
/// the fuzz targets.
pub fn check_document(bytes: &[u8]) -> S3Result<&str> {
    use quick_xml::events::Event;
    use quick_xml::XmlVersion;
    let text = std::str::from_utf8(bytes).map_err(|_| malformed("not UTF-8"))?;
    if let Some(c) = text.chars().find(|&c| !is_xml_char(c)) {
        return Err(malformed(format!(
            "the character U+{:04X} is not allowed in XML",
            c as u32
        )));
    }
    let mut reader = quick_xml::Reader::from_str(text);
    let (mut depth, mut roots, mut doctypes) = (0usize, 0usize, 0usize);
    let mut first = true;
    loop {
        let event = reader.read_event().map_err(malformed)?;
        let outside = depth == 0;
        if let Event::Start(e) | Event::Empty(e) = &event {
            check_tag(e)?;
        }
        match event {
            Event::Eof => break,
            Event::Decl(d) => {
                if !first {
                    return Err(malformed(
                        "an XML declaration is allowed only at the document's start",
                    ));
                }
                if !matches!(d.xml_version(), Ok(XmlVersion::Explicit1_0)) {
                    return Err(malformed("only XML 1.0 is read"));
                }
            }
            Event::Start(_) => {
                roots += usize::from(outside);
                depth += 1;
            }
            Event::Empty(_) => roots += usize::from(outside),
            Event::DocType(_) => {
                doctypes += 1;
                if !outside || roots > 0 || doctypes > 1 {
                    return Err(malformed(
                        "a document type declaration is allowed once, before the root element",
                    ));
                }
            }
            Event::End(_) => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| malformed("an end tag without its start"))?
            }
            Event::Text(t) if outside && !t.bytes().all(|b| b.is_ascii_whitespace()) => {
                return Err(malformed("text outside the root element"))
            }
            Event::CData(_) | Event::GeneralRef(_) if outside => {
                return Err(malformed("text outside the root element"))
            }
            Event::GeneralRef(r) => {
                let c = r.resolve_char_ref().map_err(malformed)?;
                if c.is_some_and(|c| !is_xml_char(c)) {
                    return Err(malformed("a reference to a character XML does not have"));
                }
            }
            _ => {}
        }
        first = false;
        if roots > 1 {
            return Err(malformed("more than one root element"));
        }
    }
    match (roots, depth) {
        (1, 0) => Ok(text),
        (0, _) => Err(malformed("no root element")),
        _ => Err(malformed("an element is not closed")),
    }
}

/// XML 1.0's `Char` production.
fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// A start tag's name is not empty and begins as an XML name does, and its
/// attributes parse (`name="value"`, each name once).
fn check_tag(tag: &quick_xml::events::BytesStart<'_>) -> S3Result<()> {
    let name = tag.name();
    let starts_a_name = |b: u8| b.is_ascii_alphabetic() || b == b'_' || b == b':' || b >= 0x80;
    if !name.as_ref().bytes().next().is_some_and(starts_a_name) {
        return Err(malformed("an element without a name"));
    }
    for attribute in tag.attributes() {
        attribute.map_err(malformed)?;
    }
    Ok(())
}

/// Parses a request document (see [`check_document`]).
pub fn from_xml<T: DeserializeOwned>(bytes: &[u8]) -> S3Result<T> {
    quick_xml::de::from_str(check_document(bytes)?).map_err(malformed)
}

/// Checksum elements of a response (at most one algorithm is set).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ChecksumFields {
    /// CRC32, base64.
    #[serde(
        rename = "ChecksumCRC32",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub crc32: Option<String>,
    /// CRC32C, base64.
    #[serde(
        rename = "ChecksumCRC32C",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub crc32c: Option<String>,
    /// CRC64NVME, base64.
    #[serde(
        rename = "ChecksumCRC64NVME",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub crc64nvme: Option<String>,
    /// SHA1, base64.
    #[serde(
        rename = "ChecksumSHA1",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub sha1: Option<String>,
    /// SHA256, base64.
    #[serde(
        rename = "ChecksumSHA256",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub sha256: Option<String>,
    /// COMPOSITE or FULL_OBJECT.
    #[serde(
        rename = "ChecksumType",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub kind: Option<String>,
}

impl ChecksumFields {
    /// The first (algorithm name, value) given, if any.
    pub fn given(&self) -> Option<(&'static str, &str)> {
        self.all_given().next()
    }

    /// Every (algorithm name, value) given.
    pub fn all_given(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            ("CRC32", &self.crc32),
            ("CRC32C", &self.crc32c),
            ("CRC64NVME", &self.crc64nvme),
            ("SHA1", &self.sha1),
            ("SHA256", &self.sha256),
        ]
        .into_iter()
        .filter_map(|(n, v)| v.as_deref().map(|v| (n, v)))
    }
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

/// A rolled-up common prefix.
#[derive(Serialize)]
pub struct CommonPrefix {
    /// The prefix.
    #[serde(rename = "Prefix")]
    pub prefix: String,
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

/// GetBucketVersioning response / PutBucketVersioning request.
#[derive(Serialize, Deserialize, Default)]
pub struct VersioningStatus {
    /// Namespace.
    #[serde(rename = "@xmlns", default, skip_deserializing)]
    pub xmlns: &'static str,
    /// "Enabled" or "Suspended"; absent when never enabled.
    #[serde(rename = "Status", skip_serializing_if = "Option::is_none", default)]
    pub status: Option<String>,
    /// "Enabled" or "Disabled".
    #[serde(rename = "MfaDelete", skip_serializing_if = "Option::is_none", default)]
    pub mfa_delete: Option<String>,
}

/// One version in ListObjectVersions.
#[derive(Serialize)]
pub struct VersionEntry {
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// Version id.
    #[serde(rename = "VersionId")]
    pub version_id: String,
    /// Whether this is the current version.
    #[serde(rename = "IsLatest")]
    pub is_latest: bool,
    /// Last modified.
    #[serde(rename = "LastModified")]
    pub last_modified: String,
    /// Quoted ETag.
    #[serde(rename = "ETag")]
    pub etag: String,
    /// Size.
    #[serde(rename = "Size")]
    pub size: u64,
    /// Owner.
    #[serde(rename = "Owner")]
    pub owner: Owner,
    /// Storage class.
    #[serde(rename = "StorageClass")]
    pub storage_class: String,
    /// Restore status of an archived version, when asked for.
    #[serde(rename = "RestoreStatus", skip_serializing_if = "Option::is_none")]
    pub restore_status: Option<RestoreStatus>,
}

/// An archived object's restore status (`x-amz-optional-object-attributes:
/// RestoreStatus`).
#[derive(Serialize, Debug)]
pub struct RestoreStatus {
    /// Always false: the bytes are read in place.
    #[serde(rename = "IsRestoreInProgress")]
    pub in_progress: bool,
    /// Until when it is reported restored (ISO 8601).
    #[serde(rename = "RestoreExpiryDate")]
    pub expiry: String,
}

/// One delete marker in ListObjectVersions.
#[derive(Serialize)]
pub struct DeleteMarkerEntry {
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// Version id.
    #[serde(rename = "VersionId")]
    pub version_id: String,
    /// Whether this is the current version.
    #[serde(rename = "IsLatest")]
    pub is_latest: bool,
    /// Last modified.
    #[serde(rename = "LastModified")]
    pub last_modified: String,
    /// Owner.
    #[serde(rename = "Owner")]
    pub owner: Owner,
}

/// A version or a delete marker, in listing order.
#[derive(Serialize)]
pub enum VersionItem {
    /// An object version.
    Version(VersionEntry),
    /// A delete marker.
    DeleteMarker(DeleteMarkerEntry),
}

/// ListObjectVersions response.
#[derive(Serialize)]
pub struct ListVersionsResult {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// Bucket.
    #[serde(rename = "Name")]
    pub name: String,
    /// Prefix.
    #[serde(rename = "Prefix")]
    pub prefix: String,
    /// Key marker given.
    #[serde(rename = "KeyMarker")]
    pub key_marker: String,
    /// Version id marker given.
    #[serde(rename = "VersionIdMarker")]
    pub version_id_marker: String,
    /// Next key marker.
    #[serde(rename = "NextKeyMarker", skip_serializing_if = "Option::is_none")]
    pub next_key_marker: Option<String>,
    /// Next version id marker.
    #[serde(
        rename = "NextVersionIdMarker",
        skip_serializing_if = "Option::is_none"
    )]
    pub next_version_id_marker: Option<String>,
    /// Max keys.
    #[serde(rename = "MaxKeys")]
    pub max_keys: usize,
    /// Delimiter.
    #[serde(rename = "Delimiter", skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<String>,
    /// More follow.
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
    /// Encoding type.
    #[serde(rename = "EncodingType", skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
    /// Versions and delete markers.
    #[serde(rename = "$value", default)]
    pub items: Vec<VersionItem>,
    /// Common prefixes.
    #[serde(rename = "CommonPrefixes", default)]
    pub common_prefixes: Vec<CommonPrefix>,
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
    /// The copy's checksum and its type.
    #[serde(flatten)]
    pub checksum: ChecksumFields,
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
    /// The part's checksum.
    #[serde(flatten)]
    pub checksum: ChecksumFields,
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
    /// The object's checksum.
    #[serde(flatten)]
    pub checksum: ChecksumFields,
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
    /// The part's checksum.
    #[serde(flatten)]
    pub checksum: ChecksumFields,
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
    /// The version deleted, when one was named.
    #[serde(rename = "VersionId", skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
    /// Whether a delete marker was created or deleted.
    #[serde(rename = "DeleteMarker", skip_serializing_if = "Option::is_none")]
    pub delete_marker: Option<bool>,
    /// Version id of that delete marker.
    #[serde(
        rename = "DeleteMarkerVersionId",
        skip_serializing_if = "Option::is_none"
    )]
    pub delete_marker_version_id: Option<String>,
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

/// One part of a CompleteMultipartUpload request. (The checksum fields are
/// spelled out: serde's `flatten` buffers elements as maps, which breaks
/// the typed fields beside it.)
#[derive(Deserialize, Debug)]
pub struct CompletedPart {
    /// Part number.
    #[serde(rename = "PartNumber")]
    pub part_number: u32,
    /// ETag as given (quotes optional).
    #[serde(rename = "ETag")]
    pub etag: String,
    #[serde(rename = "ChecksumCRC32", default)]
    crc32: Option<String>,
    #[serde(rename = "ChecksumCRC32C", default)]
    crc32c: Option<String>,
    #[serde(rename = "ChecksumCRC64NVME", default)]
    crc64nvme: Option<String>,
    #[serde(rename = "ChecksumSHA1", default)]
    sha1: Option<String>,
    #[serde(rename = "ChecksumSHA256", default)]
    sha256: Option<String>,
}

impl CompletedPart {
    /// The part checksum the client expects.
    pub fn checksum(&self) -> ChecksumFields {
        ChecksumFields {
            crc32: self.crc32.clone(),
            crc32c: self.crc32c.clone(),
            crc64nvme: self.crc64nvme.clone(),
            sha1: self.sha1.clone(),
            sha256: self.sha256.clone(),
            ..ChecksumFields::default()
        }
    }
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
    /// Delete only if the version's entity tag is this one (or `*`: it
    /// exists).
    #[serde(rename = "ETag", default)]
    pub etag: Option<String>,
    /// Delete only if the version has this size.
    #[serde(rename = "Size", default)]
    pub size: Option<u64>,
    /// Delete only if the version was last modified at this time.
    #[serde(rename = "LastModifiedTime", default)]
    pub last_modified_time: Option<String>,
}

/// RestoreObject request body.
#[derive(Deserialize, Debug)]
pub struct RestoreRequest {
    /// Days the restored copy is to last.
    #[serde(rename = "Days", default)]
    pub days: Option<u64>,
    /// Retrieval tier.
    #[serde(rename = "GlacierJobParameters", default)]
    pub glacier_job_parameters: Option<GlacierJobParameters>,
    /// `SELECT` (not supported).
    #[serde(rename = "Type", default)]
    pub kind: Option<String>,
    /// Select restores' parameters (not supported).
    #[serde(rename = "SelectParameters", default)]
    pub select_parameters: Option<serde::de::IgnoredAny>,
    /// Where a select restore writes (not supported).
    #[serde(rename = "OutputLocation", default)]
    pub output_location: Option<serde::de::IgnoredAny>,
}

/// The retrieval tier of a restore.
#[derive(Deserialize, Debug)]
pub struct GlacierJobParameters {
    /// Standard, Bulk or Expedited.
    #[serde(rename = "Tier")]
    pub tier: String,
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

    /// `doc` parsed as a `T` is MalformedXML.
    fn assert_malformed<T: DeserializeOwned>(doc: &str) {
        assert!(
            matches!(from_xml::<T>(doc.as_bytes()), Err(S3Error::MalformedXml(_))),
            "{doc:?}"
        );
    }

    /// Found by the xml_bodies, tagging and cors fuzz targets: the serde
    /// reader stopped at the root's end, so bytes after it were accepted.
    #[test]
    fn a_document_is_one_root_element_and_nothing_after_it() {
        let ok = "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>";
        for doc in [
            ok.to_string(),
            format!("<?xml version=\"1.0\"?>\n{ok}\n<!-- done -->\n"),
        ] {
            let v: VersioningStatus = from_xml(doc.as_bytes()).unwrap();
            assert_eq!(v.status.as_deref(), Some("Enabled"));
        }
        for doc in [
            format!("{ok}Status></VersioningConfiguration>"),
            format!("{ok}<VersioningConfiguration/>"),
            format!("{ok}junk"),
            format!("{ok}<![CDATA[x]]>"),
            format!("{ok}&amp;"),
            format!("&#60;{ok}"),
            "<VersioningConfiguration><Status>Enabled</Status>".to_string(),
            "  ".to_string(),
        ] {
            assert_malformed::<VersioningStatus>(&doc);
        }
    }

    /// Found by the lifecycle fuzz target: a document type declaration
    /// between two runs of an element's text made quick-xml's serde
    /// reader hit `unreachable!` (a panic on any XML body); element names
    /// and attributes that are not XML were taken too. A declaration is
    /// well-formed only once, before the root element.
    #[test]
    fn a_document_type_inside_the_root_and_broken_tags_are_malformed() {
        let ok = "<VersioningConfiguration><Status>Enabled</Status><MfaDelete>Disabled</MfaDelete></VersioningConfiguration>";
        let v: VersioningStatus = from_xml(format!("<!DOCTYPE V>{ok}").as_bytes()).unwrap();
        assert_eq!(v.status.as_deref(), Some("Enabled"));
        for doc in [
            ok.replace("<Status>En", "<Status>En<!DOCTYPE d>"),
            ok.replace("<Status>En", "<Status>En<!DOCTYPE d>&#65;"),
            ok.replace("<Status>", "<!DOCTYPE d><Status>"),
            format!("{ok}<!DOCTYPE d>"),
            format!("<!DOCTYPE d><!DOCTYPE e>{ok}"),
            ok.replace("<Status>", "<Status ` < /<''=''>"),
            ok.replace("<Status>", "<Status a=>"),
            ok.replace("<Status>", "<Status a=\"1\" a=\"2\">"),
            ok.replace("<Status>", "<></><Status>"),
        ] {
            let parsed = std::panic::catch_unwind(|| from_xml::<VersioningStatus>(doc.as_bytes()));
            assert!(matches!(parsed, Ok(Err(S3Error::MalformedXml(_)))), "{doc}");
        }
    }

    /// Found by the xml_bodies fuzz target: a raw NUL (or other control
    /// character) in text was taken, though XML 1.0 has no such character
    /// and its reference `&#0;` was refused. S3 answers MalformedXML for
    /// both (a DeleteObjects of a key holding \x10 is refused there).
    #[test]
    fn characters_xml_does_not_have_are_malformed() {
        let doc = |status: &str| {
            format!("<VersioningConfiguration><Status>{status}</Status></VersioningConfiguration>")
        };
        for ok in ["En\tabled", "En\r\nabled", "Enabled\u{10FFFF}", "\u{E000}"] {
            assert!(
                from_xml::<VersioningStatus>(doc(ok).as_bytes()).is_ok(),
                "{ok:?}"
            );
        }
        for bad in [
            "En\0abled",
            "\u{10}",
            "\u{1F}",
            "\u{FFFE}",
            "\u{FFFF}",
            "&#x1;",
        ] {
            assert_malformed::<VersioningStatus>(&doc(bad));
        }
    }

    /// Found by the xml_bodies fuzz target: quick-xml's serde reader (before
    /// 0.40) read every document by XML 1.1's line-end rules, so a raw NEL
    /// (U+0085) or LINE SEPARATOR (U+2028) in text became a line feed — a
    /// DeleteObjects of a key holding one deleted another key. XML 1.0,
    /// which S3 reads, turns only CR LF and CR into LF.
    #[test]
    fn text_is_read_by_xml_1_0_line_end_rules() {
        let doc = "<Delete><Object><Key>a\u{2028}b\u{85}c\r\u{85}d\r\ne\rf</Key></Object></Delete>";
        let d: Delete = from_xml(doc.as_bytes()).unwrap();
        assert_eq!(d.objects[0].key, "a\u{2028}b\u{85}c\n\u{85}d\ne\nf");
        let v = VersioningStatus {
            xmlns: NS,
            status: Some("\u{2028}\u{85}".into()),
            mfa_delete: None,
        };
        let back: VersioningStatus =
            from_xml(to_xml("VersioningConfiguration", &v).as_bytes()).unwrap();
        assert_eq!(back.status, v.status);
    }

    /// From a review of the upgrade to quick-xml 0.42: its serde reader
    /// takes the line-end rules from an XML declaration wherever it stands,
    /// so `version="1.1"` (or a declaration inside the root) brought XML
    /// 1.1's back. A declaration is XML 1.0's and at the start only.
    #[test]
    fn a_declaration_is_of_xml_1_0_and_only_at_the_start() {
        let body = "<Delete><Object><Key>a\u{2028}b</Key></Object></Delete>";
        for ok in [
            format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>{body}"),
            format!("\u{FEFF}<?xml version=\"1.0\"?>\n{body}"),
        ] {
            let d: Delete = from_xml(ok.as_bytes()).unwrap();
            assert_eq!(d.objects[0].key, "a\u{2028}b");
        }
        for bad in [
            format!("<?xml version=\"1.1\"?>{body}"),
            format!("<?xml version=\"2.0\"?>{body}"),
            format!("<?xml encoding=\"UTF-8\"?>{body}"),
            format!(" <?xml version=\"1.0\"?>{body}"),
            format!("<?xml version=\"1.0\"?><?xml version=\"1.0\"?>{body}"),
            body.replace("b</Key>", "b<?xml version=\"1.1\"?></Key>"),
            format!("{body}<?xml version=\"1.0\"?>"),
        ] {
            assert_malformed::<Delete>(&bad);
        }
    }

    /// quick-xml's serde reader trims text at an element's edges in
    /// places; a key's own spaces are part of it and are kept.
    #[test]
    fn keys_keep_their_edge_spaces() {
        let doc =
            "<Delete><Object><Key> a b \t</Key></Object><Object><Key>  </Key></Object></Delete>";
        let d: Delete = from_xml(doc.as_bytes()).unwrap();
        assert_eq!(d.objects[0].key, " a b \t");
        assert_eq!(d.objects[1].key, "  ");
    }

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
        assert_eq!(c.parts[0].checksum().given(), Some(("CRC32", "x")));
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
    fn flattened_checksums_serialise() {
        let x = to_xml(
            "CompleteMultipartUploadResult",
            &CompleteMultipartUploadResult {
                xmlns: NS,
                location: "l".into(),
                bucket: "b".into(),
                key: "k".into(),
                etag: "\"e-2\"".into(),
                checksum: ChecksumFields {
                    crc32: Some("AAAAAA==-2".into()),
                    kind: Some("COMPOSITE".into()),
                    ..Default::default()
                },
            },
        );
        assert!(
            x.contains(
                "<ChecksumCRC32>AAAAAA==-2</ChecksumCRC32><ChecksumType>COMPOSITE</ChecksumType>"
            ),
            "{x}"
        );
        assert!(!x.contains("ChecksumSHA1"), "{x}");
    }

    #[test]
    fn version_listing_interleaves_element_names() {
        let owner = Owner {
            id: "o".into(),
            display_name: "d".into(),
        };
        let x = to_xml(
            "ListVersionsResult",
            &ListVersionsResult {
                xmlns: NS,
                name: "b".into(),
                prefix: String::new(),
                key_marker: String::new(),
                version_id_marker: String::new(),
                next_key_marker: None,
                next_version_id_marker: None,
                max_keys: 1000,
                delimiter: None,
                is_truncated: false,
                encoding_type: None,
                items: vec![
                    VersionItem::DeleteMarker(DeleteMarkerEntry {
                        key: "k".into(),
                        version_id: "v2".into(),
                        is_latest: true,
                        last_modified: "t".into(),
                        owner: owner.clone(),
                    }),
                    VersionItem::Version(VersionEntry {
                        key: "k".into(),
                        version_id: "v1".into(),
                        is_latest: false,
                        last_modified: "t".into(),
                        etag: "\"e\"".into(),
                        size: 1,
                        owner,
                        storage_class: "STANDARD".into(),
                        restore_status: None,
                    }),
                ],
                common_prefixes: Vec::new(),
            },
        );
        let dm = x
            .find("<DeleteMarker><Key>k</Key><VersionId>v2</VersionId>")
            .expect(&x);
        let v = x
            .find("<Version><Key>k</Key><VersionId>v1</VersionId>")
            .expect(&x);
        assert!(dm < v, "{x}");
        let parsed: VersioningStatus = from_xml(
            b"<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>",
        )
        .unwrap();
        assert_eq!(parsed.status.as_deref(), Some("Enabled"));
    }

    #[test]
    fn writes_s3_shapes() {
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
