//! GetObjectAttributes: ETag, Checksum, ObjectParts, StorageClass and
//! ObjectSize of a version, as `x-amz-object-attributes` selects.
//! (<https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObjectAttributes.html>)

use axum::body::Body;
use http::{Response, StatusCode};
use serde::Serialize;

use super::get::requested_object;
use super::reply::xml;
use crate::checksum::checksum_fields;
use crate::headers::{http_date, STANDARD};
use crate::request::S3Request;
use crate::{versions, Gateway};
use s3_wire::error::{S3Error, S3Result};
use s3_wire::xml::{to_xml, ChecksumFields, NS};

const ATTRIBUTES: [&str; 5] = [
    "ETag",
    "Checksum",
    "ObjectParts",
    "StorageClass",
    "ObjectSize",
];
/// Most parts listed per response.
const MAX_PARTS: usize = 1000;

#[derive(Serialize)]
struct GetObjectAttributesResponse {
    #[serde(rename = "@xmlns")]
    xmlns: &'static str,
    #[serde(rename = "ETag", skip_serializing_if = "Option::is_none")]
    etag: Option<String>,
    #[serde(rename = "Checksum", skip_serializing_if = "Option::is_none")]
    checksum: Option<ChecksumFields>,
    #[serde(rename = "ObjectParts", skip_serializing_if = "Option::is_none")]
    object_parts: Option<ObjectParts>,
    #[serde(rename = "StorageClass", skip_serializing_if = "Option::is_none")]
    storage_class: Option<String>,
    #[serde(rename = "ObjectSize", skip_serializing_if = "Option::is_none")]
    object_size: Option<u64>,
}

#[derive(Serialize)]
struct ObjectParts {
    // TotalPartsCount in the API model; PartsCount on the wire.
    #[serde(rename = "PartsCount")]
    total_parts_count: usize,
    #[serde(rename = "PartNumberMarker")]
    part_number_marker: u32,
    #[serde(rename = "NextPartNumberMarker")]
    next_part_number_marker: u32,
    #[serde(rename = "MaxParts")]
    max_parts: usize,
    #[serde(rename = "IsTruncated")]
    is_truncated: bool,
    #[serde(rename = "Part", default)]
    parts: Vec<ObjectPart>,
}

#[derive(Serialize)]
struct ObjectPart {
    #[serde(rename = "PartNumber")]
    part_number: u32,
    #[serde(rename = "Size")]
    size: u64,
    #[serde(flatten)]
    checksum: ChecksumFields,
}

fn number(req: &S3Request, name: &str, default: usize) -> S3Result<usize> {
    match req.header(name) {
        None => Ok(default),
        Some(v) => v.trim().parse().map_err(|_| {
            S3Error::InvalidArgument(
                format!("{name} is not a valid number"),
                Some((name.into(), v.into())),
            )
        }),
    }
}

/// GetObjectAttributes.
pub async fn get(gw: &Gateway, req: &S3Request) -> S3Result<Response<Body>> {
    // Clients send the list comma-separated, in one header or several.
    let wanted: Vec<&str> = req
        .parts
        .headers
        .get_all("x-amz-object-attributes")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .collect();
    if wanted.is_empty() {
        return Err(S3Error::InvalidRequest(
            "Missing required header for this request: x-amz-object-attributes".into(),
        ));
    }
    if let Some(bad) = wanted.iter().find(|a| !ATTRIBUTES.contains(a)) {
        return Err(S3Error::InvalidArgument(
            format!("Invalid attribute name specified: {bad}"),
            Some(("x-amz-object-attributes".into(), (*bad).into())),
        ));
    }
    let obj = requested_object(gw, req, req.key()).await?;
    let has = |a: &str| wanted.contains(&a);
    let object_parts = (has("ObjectParts") && obj.multipart).then(|| -> S3Result<ObjectParts> {
        let max = number(req, "x-amz-max-parts", MAX_PARTS)?.min(MAX_PARTS);
        let marker = number(req, "x-amz-part-number-marker", 0)? as u32;
        let rest: Vec<_> = obj.parts.iter().filter(|p| p.number > marker).collect();
        let page: Vec<_> = rest.iter().take(max).collect();
        Ok(ObjectParts {
            total_parts_count: obj.parts.len(),
            part_number_marker: marker,
            next_part_number_marker: page.last().map_or(marker, |p| p.number),
            max_parts: max,
            is_truncated: rest.len() > page.len(),
            parts: page
                .into_iter()
                .map(|p| ObjectPart {
                    part_number: p.number,
                    size: p.size,
                    checksum: checksum_fields(p.checksum.as_ref(), false),
                })
                .collect(),
        })
    });
    let doc = GetObjectAttributesResponse {
        xmlns: NS,
        etag: has("ETag").then(|| obj.meta.etag.clone()),
        checksum: has("Checksum")
            .then(|| checksum_fields(obj.meta.checksum.as_ref(), true))
            .filter(|c| c.given().is_some()),
        object_parts: object_parts.transpose()?,
        storage_class: has("StorageClass").then(|| {
            obj.meta
                .storage_class
                .clone()
                .unwrap_or_else(|| STANDARD.into())
        }),
        object_size: has("ObjectSize").then_some(obj.size),
    };
    let mut resp = xml(StatusCode::OK, to_xml("GetObjectAttributesOutput", &doc));
    let h = resp.headers_mut();
    h.insert(
        "last-modified",
        http_date(obj.mtime_ns).parse().expect("ascii"),
    );
    if obj.version_id.is_some() {
        h.insert(
            "x-amz-version-id",
            versions::of(&obj).parse().expect("ascii"),
        );
    }
    Ok(resp)
}
