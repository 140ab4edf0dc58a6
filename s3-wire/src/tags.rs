//! Object and bucket tags: the `x-amz-tagging` header, the Tagging XML
//! document, and S3's limits (10 tags per object, 50 per bucket, keys up
//! to 128 characters, values up to 256, unique keys).
//! (<https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-tagging.html>)

use serde::{Deserialize, Serialize};

use crate::error::{S3Error, S3Result};
use crate::xml::{from_xml, to_xml, NS};

/// Most tags on one object.
pub const MAX_OBJECT_TAGS: usize = 10;
/// Most tags on one bucket.
pub const MAX_BUCKET_TAGS: usize = 50;
const MAX_KEY_CHARS: usize = 128;
const MAX_VALUE_CHARS: usize = 256;

/// Tags as (key, value) pairs.
pub type Tags = Vec<(String, String)>;

#[derive(Serialize, Deserialize, Default)]
struct Tagging {
    #[serde(rename = "@xmlns", default, skip_deserializing)]
    xmlns: &'static str,
    #[serde(rename = "TagSet", default)]
    tag_set: TagSet,
}

#[derive(Serialize, Deserialize, Default)]
struct TagSet {
    #[serde(rename = "Tag", default)]
    tags: Vec<Tag>,
}

#[derive(Serialize, Deserialize)]
struct Tag {
    #[serde(rename = "Key")]
    key: String,
    #[serde(rename = "Value", default)]
    value: String,
}

fn allowed(c: char) -> bool {
    c.is_alphanumeric() || " +-=._:/@".contains(c)
}

/// Checks tags against S3's limits; `max` is 10 for objects, 50 for buckets.
pub fn validate(tags: &Tags, max: usize) -> S3Result<()> {
    if tags.len() > max {
        return Err(if max == MAX_OBJECT_TAGS {
            S3Error::BadRequest("Object tags cannot be greater than 10".into())
        } else {
            S3Error::InvalidTag("Bucket tag count cannot be greater than 50".into())
        });
    }
    for (i, (k, v)) in tags.iter().enumerate() {
        if k.is_empty() || k.chars().count() > MAX_KEY_CHARS || !k.chars().all(allowed) {
            return Err(S3Error::InvalidTag(
                "The TagKey you have provided is invalid".into(),
            ));
        }
        if v.chars().count() > MAX_VALUE_CHARS || !v.chars().all(allowed) {
            return Err(S3Error::InvalidTag(
                "The TagValue you have provided is invalid".into(),
            ));
        }
        if tags[..i].iter().any(|(o, _)| o == k) {
            return Err(S3Error::InvalidTag(
                "Cannot provide multiple Tags with the same key".into(),
            ));
        }
    }
    Ok(())
}

/// Parses and validates an `x-amz-tagging` header (`k1=v1&k2=v2`,
/// URL-encoded).
pub fn parse_header(v: &str) -> S3Result<Tags> {
    let tags: Tags = v
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            let dec = |s: &str| {
                percent_encoding::percent_decode_str(&s.replace('+', " "))
                    .decode_utf8()
                    .map(|c| c.into_owned())
                    .map_err(|_| S3Error::InvalidTag("The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query parameters without tag name duplicates.".into()))
            };
            Ok((dec(k)?, dec(v)?))
        })
        .collect::<S3Result<_>>()?;
    validate(&tags, MAX_OBJECT_TAGS)?;
    Ok(tags)
}

/// Parses and validates a Tagging document.
pub fn parse_xml(doc: &[u8], max: usize) -> S3Result<Tags> {
    let t: Tagging = from_xml(doc)?;
    let tags: Tags = t
        .tag_set
        .tags
        .into_iter()
        .map(|t| (t.key, t.value))
        .collect();
    validate(&tags, max)?;
    Ok(tags)
}

/// A Tagging document.
pub fn xml(tags: &Tags) -> String {
    to_xml(
        "Tagging",
        &Tagging {
            xmlns: NS,
            tag_set: TagSet {
                tags: tags
                    .iter()
                    .map(|(k, v)| Tag {
                        key: k.clone(),
                        value: v.clone(),
                    })
                    .collect(),
            },
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_document() {
        let t = parse_header("project=ml%20team&stage=dev+2&empty=").unwrap();
        assert_eq!(t[0], ("project".into(), "ml team".into()));
        assert_eq!(t[1], ("stage".into(), "dev 2".into()));
        assert_eq!(t[2], ("empty".into(), "".into()));
        let doc = xml(&t);
        assert_eq!(parse_xml(doc.as_bytes(), 10).unwrap(), t);
        assert!(matches!(
            parse_header("a=1&a=2"),
            Err(S3Error::InvalidTag(_))
        ));
        let many: String = (0..11).map(|i| format!("k{i}=v&")).collect();
        assert!(matches!(parse_header(&many), Err(S3Error::BadRequest(_))));
        assert!(matches!(
            parse_header(&format!("{}=v", "k".repeat(129))),
            Err(S3Error::InvalidTag(_))
        ));
        assert!(matches!(
            parse_header("k=<script>"),
            Err(S3Error::InvalidTag(_))
        ));
        assert!(parse_xml(b"<Tagging><TagSet><Tag><Key>a</Key>", 10).is_err());
    }
}
