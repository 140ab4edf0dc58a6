//! Documents clients send: the XML bodies (DeleteObjects, Complete,
//! versioning, restore, CreateBucket), tagging, CORS and lifecycle
//! configurations, IAM policies, POST forms and their policies; and the
//! cluster file operators write.

use arbitrary::Unstructured;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use bytes::Bytes;
use lifecycle_rules::{Classes, LifecycleConfig};
use pool_layout::ClusterMap;
use s3_wire::iam_policy::{Access, ConditionValues, Policy, Who};
use s3_wire::post_form::{self, BodyError, BodyStream, MAX_PRE_DATA_BYTES};
use s3_wire::post_policy::PostPolicy;
use s3_wire::xml::{
    check_document, from_xml, to_xml, CompleteMultipartUpload, CreateBucketConfiguration, Delete,
    RestoreRequest, VersioningStatus,
};
use s3_wire::{cors, tags, S3Result};
use time::OffsetDateTime;

use crate::input::pieces;

/// Whether quick-xml's own reader reads `doc` to its end without an error
/// (the well-formedness every accepted document must have).
fn well_formed(doc: &[u8]) -> bool {
    let mut r = quick_xml::Reader::from_reader(doc);
    let mut buf = Vec::new();
    loop {
        match r.read_event_into(&mut buf) {
            Ok(quick_xml::events::Event::Eof) => return true,
            Ok(_) => buf.clear(),
            Err(_) => return false,
        }
    }
}

/// A document the gateway accepted must be one quick-xml's reader reads.
fn accepted<T>(doc: &[u8], parsed: S3Result<T>) -> Option<T> {
    let t = parsed.ok()?;
    assert!(
        well_formed(doc),
        "a document that is not well-formed XML was accepted"
    );
    Some(t)
}

/// The request documents parsed with `from_xml` (the first byte picks
/// which): none panics, none accepts what is not XML, and a versioning
/// document renders back to the same status.
pub fn xml_bodies(data: &[u8]) {
    let Some((&which, doc)) = data.split_first() else {
        return;
    };
    match which % 5 {
        0 => {
            if let Some(d) = accepted(doc, from_xml::<Delete>(doc)) {
                for o in &d.objects {
                    let _ = crate::headers::entry_condition(o);
                }
            }
        }
        1 => {
            if let Some(c) = accepted(doc, from_xml::<CompleteMultipartUpload>(doc)) {
                let _ = c.parts.iter().map(|p| p.part_number).max();
            }
        }
        2 => {
            if let Some(v) = accepted(doc, from_xml::<VersioningStatus>(doc)) {
                let again = to_xml("VersioningConfiguration", &v);
                let back: VersioningStatus = from_xml(again.as_bytes()).expect("rendered back");
                assert_eq!((back.status, back.mfa_delete), (v.status, v.mfa_delete));
            }
        }
        3 => {
            accepted(doc, from_xml::<RestoreRequest>(doc));
        }
        _ => {
            accepted(doc, from_xml::<CreateBucketConfiguration>(doc));
        }
    }
}

/// Tagging documents and `x-amz-tagging` headers: a document accepted
/// renders back to the same tags.
pub fn tagging(data: &[u8]) {
    if let Some(t) = accepted(data, tags::parse_xml(data, 50)) {
        let again = tags::xml(&t);
        assert_eq!(
            tags::parse_xml(again.as_bytes(), 50).expect("rendered back"),
            t
        );
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = tags::parse_header(text);
    }
}

/// CORS configurations: one accepted renders back to itself, and its
/// rules answer any preflight without a panic.
pub fn cors(data: &[u8]) {
    let (doc, probe) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Some(cfg) = accepted(doc, cors::parse(doc)) else {
        return;
    };
    let again = cors::xml(&cfg);
    assert_eq!(cors::parse(again.as_bytes()).expect("rendered back"), cfg);
    let text = String::from_utf8_lossy(probe);
    let mut parts = text.splitn(3, '\n');
    let (origin, method, headers) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    let mut req = http::HeaderMap::new();
    for (name, value) in [
        ("origin", origin),
        ("access-control-request-method", method),
        ("access-control-request-headers", headers),
    ] {
        if let Ok(v) = http::HeaderValue::from_str(value) {
            req.insert(name, v);
        }
    }
    let _ = cors::preflight(Some(&cfg), &req);
}

/// Lifecycle configurations, as the gateway takes them (a well-formed
/// document, then the rules): one accepted renders back to itself.
pub fn lifecycle(data: &[u8]) {
    let (header, doc) = match data.split_first() {
        Some((0, rest)) => (Some("varies_by_storage_class"), rest),
        Some((1, rest)) => (Some("all_storage_classes_128K"), rest),
        _ => (None, data),
    };
    // As the gateway takes one: a well-formed document, then the rules.
    if check_document(doc).is_err() {
        return;
    }
    let Ok(cfg) = lifecycle_rules::parse(doc, header, Classes::Any) else {
        return;
    };
    let again = cfg.to_xml();
    let back: LifecycleConfig =
        lifecycle_rules::parse(again.as_bytes(), Some(cfg.min_size_header()), Classes::Any)
            .unwrap_or_else(|e| panic!("rendered back: {e}\n{again}"));
    assert_eq!(back, cfg, "{again}");
}

/// IAM policy documents: one `parse` accepts, `load` (the reading of a
/// stored policy) accepts too, and evaluating it never panics.
pub fn iam_policy(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (doc, probe) = text
        .split_once('\0')
        .unwrap_or((text, "s3:GetObject\narn:aws:s3:::b/k"));
    let Ok(p) = Policy::parse(doc, Some("b")) else {
        let _ = Policy::load(doc, Some("b"));
        return;
    };
    Policy::load(doc, Some("b")).expect("a policy parse accepts, load accepts");
    let (action, resource) = probe.split_once('\n').unwrap_or((probe, ""));
    let values = ConditionValues {
        prefix: Some(resource.to_string()),
        now: OffsetDateTime::from_unix_timestamp(1_767_225_600).ok(),
        ..ConditionValues::default()
    };
    for who in [
        Who::Anonymous,
        Who::User {
            name: "fuzz",
            access_key: "AKIDFUZZ",
        },
    ] {
        let access = Access {
            action,
            resource,
            who,
            values: &values,
        };
        let first = p.evaluate(&access);
        assert_eq!(
            p.evaluate(&access),
            first,
            "the same access, another answer"
        );
    }
}

/// POST policies: the JSON document (base64-encoded here), then a line
/// `--`, then the form's fields (`name=value` lines) it is checked
/// against.
pub fn post_policy(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (doc, fields) = text.split_once("\n--\n").unwrap_or((&text, ""));
    let now = OffsetDateTime::from_unix_timestamp(1_767_225_600).expect("a time");
    let Ok(p) = PostPolicy::parse(&B64.encode(doc), now) else {
        return;
    };
    if let Some((lo, hi)) = p.length_range {
        assert!(lo <= hi, "a length range {lo}..{hi} was accepted");
    }
    let fields: Vec<(String, String)> = fields
        .lines()
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap_or((l, ""));
            (k.to_ascii_lowercase(), v.to_string())
        })
        .collect();
    let _ = p.check(&fields, "bucket");
}

/// What reading a form gives: its fields, or the error's code.
fn read_form(boundary: &str, pieces: &[&[u8]]) -> Result<Vec<(String, String)>, &'static str> {
    let chunks: Vec<Result<Bytes, BodyError>> = pieces
        .iter()
        .map(|p| Ok(Bytes::copy_from_slice(p)))
        .collect();
    let body: BodyStream = Box::pin(futures::stream::iter(chunks));
    futures::executor::block_on(post_form::read(body, boundary.to_string()))
        .map(|f| f.fields)
        .map_err(|e| e.code())
}

/// POST forms (the first line is the boundary, the rest the body): the
/// fields before the file stay within S3's 20 KB and are each given once,
/// and the outcome does not depend on how the body arrived.
pub fn post_form(data: &[u8]) {
    let Some(at) = data.iter().position(|&b| b == b'\n') else {
        return;
    };
    let Ok(boundary) = std::str::from_utf8(&data[..at]) else {
        return;
    };
    let rest = &data[at + 1..];
    let cut = rest.len().min(16);
    let (cuts, body) = rest.split_at(cut);
    let whole = read_form(boundary, &[body]);
    if let Ok(fields) = &whole {
        let size: usize = fields.iter().map(|(k, v)| k.len() + v.len()).sum();
        assert!(
            size <= MAX_PRE_DATA_BYTES,
            "{size} bytes of fields accepted"
        );
        for (i, (k, _)) in fields.iter().enumerate() {
            assert!(!fields[..i].iter().any(|(n, _)| n == k), "{k} twice");
        }
    }
    let mut u = Unstructured::new(cuts);
    let split = pieces(&mut u, body);
    assert_eq!(
        read_form(boundary, &split),
        whole,
        "the outcome depends on the pieces"
    );
}

/// Cluster files: one accepted lays every pool out in whole sets, no disk
/// twice, and no node holding more disks of a set than its parity.
pub fn cluster_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(map) = ClusterMap::parse(text) else {
        return;
    };
    assert!(!map.pools.is_empty());
    for p in &map.pools {
        assert!(p.set_width > 0 && p.disks.len() % p.set_width == 0);
        assert!(
            p.parity < p.set_width,
            "parity {} of sets of {}",
            p.parity,
            p.set_width
        );
        // A set, not a scan of the disks before each: a pool lists up to
        // 16,384 disks, and the quadratic scan took 6 s of a 10 s limit.
        let mut seen = std::collections::HashSet::new();
        for d in &p.disks {
            assert!(seen.insert((&d.node, &d.path)), "{d} twice");
        }
        for set in p.disks.chunks(p.set_width) {
            for d in set {
                let held = set.iter().filter(|x| x.node == d.node).count();
                assert!(
                    held <= p.parity.max(1),
                    "{} holds {held} disks of a set",
                    d.node
                );
            }
        }
    }
}
