//! The seed corpus: for each target, inputs made the way real clients,
//! disks and nodes make them (requests signed by the AWS signer, the
//! documents the SDKs send, records and frames from Granary's own
//! encoders), so fuzzing starts from deep inside each parser. Written to
//! `fuzz/corpus/<target>/` by `cargo run -p fuzz-targets --bin
//! seed-corpus`; a seed's file is named by its content's SHA-1, as
//! libFuzzer names what it keeps, so seeds already kept are not doubled.

use aws_sigv4::http_request::SignableBody;
use bytes::Bytes;
use disk_format::envelope::{encode_piece, encode_record};
use disk_format::format::{FormatRecord, Tier};
use disk_format::heads::Head;
use disk_format::keys::push_component;
use disk_format::messages::{HeadPage, ListStart, RecordListOptions, RecordPage, RecordPut};
use disk_format::rpc::wire::{self, encode_frame, Frame};
use disk_format::shard_layout::{block_checksum, encode_tail, Header, FOOTER_LEN, HEADER_USED};
use disk_format::types::{KeyRecords, Record, ShardId, Stamp, VersionId};
use record_format::layout::ErasureLayout;
use record_format::projection;
use record_format::record::{self, ChecksumValue, ObjectMeta, ObjectRecord, PartRef};
use uuid::Uuid;

use crate::input::request_text;
use crate::requests::{signed_request, SECRET_KEY, SIGNED_AT_SECS};

/// Every seed, by target name.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut out = Vec::new();
    let mut add = |name: &'static str, data: Vec<u8>| out.push((name, data));
    for d in requests() {
        add("request_target", d.clone());
        add("auth_request", d);
    }
    for d in [
        "GET /bkt/a%2Fb/c%20d?list-type=2&prefix=a%20b&delimiter=%2F\nhost: 127.0.0.1:9000\n",
        "PUT /k/%E2%9C%93.bin?partNumber=2&uploadId=x\nhost: bkt.s3.fuzz.example:9000\n",
        "GET /?versions&key-marker=\nhost: my.dotted.bucket.s3.fuzz.example\n",
    ] {
        add("request_target", d.as_bytes().to_vec());
    }
    for d in drawn() {
        add("sign_then_verify", d.clone());
        add("rpc_frames", [&[1u8][..], &d].concat());
        add("aws_chunked", [&[1u8][..], &d].concat());
    }
    for d in chunked_bodies() {
        add("aws_chunked", d);
    }
    for d in xml_bodies() {
        add("xml_bodies", d);
    }
    add("tagging", TAGGING.as_bytes().to_vec());
    add("tagging", b"project=granary&team=storage%20eng".to_vec());
    add(
        "cors",
        format!("{CORS}\0https://app.example.com\nPUT\nx-amz-meta-a, content-type").into_bytes(),
    );
    add("lifecycle", [&[0u8][..], LIFECYCLE.as_bytes()].concat());
    add("lifecycle", LIFECYCLE.as_bytes().to_vec());
    add(
        "iam_policy",
        format!("{POLICY}\0s3:GetObject\narn:aws:s3:::b/public/x").into_bytes(),
    );
    add("post_policy", format!("{POST_POLICY}\n--\nkey=user/a.png\ncontent-type=image/png\nsuccess_action_status=201\nx-amz-meta-a=1").into_bytes());
    add("post_form", post_form_body());
    for (size, header) in [
        (1000u64, "bytes=0-99"),
        (1000, "bytes=-5"),
        (1000, "bytes=900-"),
        (0, "bytes=0-0"),
    ] {
        add(
            "range",
            [&size.to_le_bytes()[..], header.as_bytes()].concat(),
        );
    }
    for h in CONDITIONS {
        add("conditions", h.as_bytes().to_vec());
    }
    add(
        "cluster_file",
        include_bytes!("../../ops/cluster.toml").to_vec(),
    );
    add("cluster_file", CLUSTER.as_bytes().to_vec());
    let records = records();
    for r in &records {
        add("record_envelope", encode_record(r));
    }
    add(
        "piece",
        encode_piece(b"the bytes of a small object's piece"),
    );
    add("heads", Head::of(&records).encode());
    add("heads", Head::of(&records[..1]).encode());
    let mut key = Vec::new();
    push_component(&mut key, b"datasets/shard-0001.tar\0x");
    add("heads", key);
    let formats = FormatRecord::new_set(Tier::Hot, 2, 2);
    add("format_record", formats[1].encode());
    add(
        "format_record",
        include_bytes!("../../disk-format/src/testdata/format-one-set.json").to_vec(),
    );
    for seed in shard_tails() {
        add("shard_file", seed);
    }
    let header = Header {
        block_size: 1 << 20,
        shard_id: ShardId(Uuid::from_u128(0x5eed)),
        shard_index: 5,
    };
    add("shard_file", header.encode()[..HEADER_USED].to_vec());
    for o in objects() {
        add("object_record", record::encode(&o).to_vec());
        add("projection", projection::encode(&o).to_vec());
    }
    add("rpc_frames", frames());
    for m in messages(&records) {
        add("rpc_messages", m);
    }
    out
}

/// Requests as the SDKs sign them: in headers (signed and unsigned
/// payloads), presigned, SigV2-presigned, and one unsigned.
fn requests() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let body = b"hello".as_slice();
    for (method, uri, payload, expires) in [
        (
            "PUT",
            "http://127.0.0.1:9000/bucket/key%20with%20space",
            SignableBody::Bytes(body),
            None,
        ),
        (
            "GET",
            "http://bucket.s3.example.com/a/b.txt?versionId=3&x=y",
            SignableBody::UnsignedPayload,
            None,
        ),
        (
            "GET",
            "http://127.0.0.1:9000/bucket/weights.safetensors",
            SignableBody::UnsignedPayload,
            Some(3600),
        ),
        (
            "PUT",
            "http://127.0.0.1:9000/bucket/big?partNumber=1&uploadId=abc",
            SignableBody::Precomputed("STREAMING-AWS4-HMAC-SHA256-PAYLOAD".into()),
            None,
        ),
    ] {
        if let Some(parts) = signed_request(method, uri, payload, expires) {
            out.push(request_text(&parts));
        }
    }
    let expires = SIGNED_AT_SECS + 600;
    let sts = format!("GET\n\n\n{expires}\n/bucket/key");
    let sig = s3_wire::auth::sigv2::sign(SECRET_KEY, &sts);
    let enc: String =
        percent_encoding::utf8_percent_encode(&sig, percent_encoding::NON_ALPHANUMERIC).collect();
    out.push(
        format!("GET http://127.0.0.1:9000/bucket/key?AWSAccessKeyId=AKIDFUZZEXAMPLE&Expires={expires}&Signature={enc}\nhost: 127.0.0.1:9000\n")
            .into_bytes(),
    );
    out.push(
        b"GET http://127.0.0.1:9000/bucket?list-type=2&prefix=a%2F\nhost: 127.0.0.1:9000\n"
            .to_vec(),
    );
    out
}

/// Inputs for the targets that draw structured values from bytes.
fn drawn() -> Vec<Vec<u8>> {
    vec![
        Vec::new(),
        (0u8..=255).collect(),
        b"PUT\x01/weights/model-00001-of-00004.safetensors\x00partNumber\x001\x00a".to_vec(),
        vec![0x41; 300],
    ]
}

/// `aws-chunked` bodies for the cut-anywhere check (mode byte 0, then 16
/// bytes of cut points).
fn chunked_bodies() -> Vec<Vec<u8>> {
    let cuts = [0u8, 7, 3, 200, 1, 9, 44, 2, 5, 0, 90, 13, 4, 4, 8, 1];
    [
        "3\r\nabc\r\n0\r\nx-amz-checksum-crc32:NSRBwg==\r\n\r\n",
        "5;chunk-signature=00\r\nhello\r\n0;chunk-signature=11\r\n\r\n",
        "a\r\n0123456789\r\n2\r\nxy\r\n0\r\n\r\n",
    ]
    .iter()
    .map(|b| [&[0u8][..], &cuts, b.as_bytes()].concat())
    .collect()
}

fn xml_bodies() -> Vec<Vec<u8>> {
    [
        (0u8, r#"<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>a.txt</Key></Object><Object><Key>b&amp;c</Key><VersionId>0190b2c8-7c6e-7d4a-9b1e-3c5a2f1d0e9b</VersionId><ETag>"9b2cf535f27731c974343645a3985328"</ETag><Size>5</Size><LastModifiedTime>2026-01-01T00:00:00Z</LastModifiedTime></Object><Quiet>true</Quiet></Delete>"#),
        (1, r#"<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Part><ETag>"a54357aff0632cce46d942af68356b38"</ETag><PartNumber>1</PartNumber><ChecksumCRC32>NSRBwg==</ChecksumCRC32></Part><Part><ETag>"0c78aef83f66abc1fa1e8477f296d394"</ETag><PartNumber>2</PartNumber></Part></CompleteMultipartUpload>"#),
        (2, r#"<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status><MfaDelete>Disabled</MfaDelete></VersioningConfiguration>"#),
        (3, r#"<RestoreRequest xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Days>2</Days><GlacierJobParameters><Tier>Expedited</Tier></GlacierJobParameters></RestoreRequest>"#),
        (4, r#"<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LocationConstraint>us-west-2</LocationConstraint></CreateBucketConfiguration>"#),
    ]
    .iter()
    .map(|(w, d)| [&[*w][..], d.as_bytes()].concat())
    .collect()
}

const TAGGING: &str = r#"<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><TagSet><Tag><Key>project</Key><Value>granary</Value></Tag><Tag><Key>stage</Key><Value>checkpoint 7</Value></Tag></TagSet></Tagging>"#;

const CORS: &str = r#"<CORSConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><CORSRule><ID>web</ID><AllowedOrigin>https://*.example.com</AllowedOrigin><AllowedMethod>PUT</AllowedMethod><AllowedMethod>GET</AllowedMethod><AllowedHeader>*</AllowedHeader><ExposeHeader>ETag</ExposeHeader><MaxAgeSeconds>3000</MaxAgeSeconds></CORSRule><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>HEAD</AllowedMethod></CORSRule></CORSConfiguration>"#;

const LIFECYCLE: &str = "<LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
<Rule><ID>a</ID><Filter><And><Prefix>ckpt/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag>\
<ObjectSizeGreaterThan>10</ObjectSizeGreaterThan><ObjectSizeLessThan>99</ObjectSizeLessThan></And></Filter>\
<Status>Enabled</Status><Expiration><Days>90</Days></Expiration>\
<Transition><Days>30</Days><StorageClass>STANDARD_IA</StorageClass></Transition>\
<Transition><Days>60</Days><StorageClass>GLACIER</StorageClass></Transition>\
<NoncurrentVersionExpiration><NoncurrentDays>40</NoncurrentDays><NewerNoncurrentVersions>3</NewerNoncurrentVersions></NoncurrentVersionExpiration>\
<NoncurrentVersionTransition><NoncurrentDays>1</NoncurrentDays><StorageClass>COLD</StorageClass></NoncurrentVersionTransition></Rule>\
<Rule><ID>b</ID><Filter><Tag><Key>x</Key><Value>y</Value></Tag></Filter><Status>Disabled</Status>\
<Expiration><Date>2030-01-01T00:00:00Z</Date></Expiration></Rule>\
<Rule><ID>c</ID><Prefix>tmp/</Prefix><Status>Enabled</Status>\
<AbortIncompleteMultipartUpload><DaysAfterInitiation>2</DaysAfterInitiation></AbortIncompleteMultipartUpload>\
<Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>\
<Rule><ID>d</ID><Filter></Filter><Status>Enabled</Status><Transition><Days>0</Days><StorageClass>COLD</StorageClass></Transition></Rule>\
</LifecycleConfiguration>";

const POLICY: &str = r#"{"Version":"2012-10-17","Statement":[{"Sid":"public","Effect":"Allow","Principal":"*","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::b/public/*"],"Condition":{"IpAddress":{"aws:SourceIp":["10.0.0.0/8","2001:db8::/32"]},"StringLike":{"s3:prefix":["public/*"]}}},{"Effect":"Deny","Principal":{"AWS":["*"]},"NotAction":"s3:Get*","Resource":"arn:aws:s3:::b/*","Condition":{"Bool":{"aws:SecureTransport":"false"},"DateGreaterThan":{"aws:CurrentTime":"2025-01-01T00:00:00Z"}}}]}"#;

const POST_POLICY: &str = r#"{"expiration":"2026-06-01T00:00:00.000Z","conditions":[{"bucket":"bucket"},["starts-with","$key","user/"],{"success_action_status":"201"},["content-length-range",1,1000],["starts-with","$Content-Type","image/"],["eq","$x-amz-meta-a","1"]]}"#;

fn post_form_body() -> Vec<u8> {
    let b = "------granaryformboundary";
    let mut body = format!("{b}\n");
    for (name, value) in [
        ("key", "user/${filename}"),
        ("policy", "eyJ9"),
        ("x-amz-meta-a", "1"),
    ] {
        body.push_str(&format!(
            "--{b}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
        ));
    }
    body.push_str(&format!("--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\nPNGDATA\r\n--{b}--\r\n"));
    body.into_bytes()
}

const CONDITIONS: [&str; 3] = [
    "9b2cf535f27731c974343645a3985328 1767225600\nif-match: \"9b2cf535f27731c974343645a3985328\"\nif-unmodified-since: Thu, 01 Jan 2026 00:00:00 GMT",
    "abc-2 1767225600\nif-none-match: W/\"abc-2\", \"x\"\nif-modified-since: Wed, 31 Dec 2025 00:00:00 GMT\nx-amz-copy-source-if-match: \"abc-2\"",
    "e 0\nif-match: *\nx-amz-if-match-size: 5\nx-amz-if-match-last-modified-time: Thu, 01 Jan 2026 00:00:00 GMT",
];

const CLUSTER: &str = r#"deployment = "0b6f4c84-5c3e-4d43-9a43-4d1c1cbf4a8e"
[[pool]]
tier = "hot"
parity = 2
set_width = 8
disks = ["node{1...8}.example.internal:9100:/srv/granary/d{1...4}"]
[[pool]]
tier = "cold"
disks = ["qlc{01...04}:/q{1...3}"]
"#;

fn objects() -> Vec<ObjectRecord> {
    let meta = ObjectMeta {
        etag: "9b2cf535f27731c974343645a3985328".into(),
        content_type: Some("application/octet-stream".into()),
        storage_class: Some("GLACIER_IR".into()),
        checksum: Some(ChecksumValue {
            algorithm: "CRC64NVME".into(),
            value: "AAAAAAAAAAA=".into(),
            kind: "FULL_OBJECT".into(),
        }),
        user: vec![("model".into(), "llama".into())],
        ..ObjectMeta::default()
    };
    let layout = ErasureLayout {
        data: 2,
        parity: 2,
        block_size: 1 << 20,
        rotation: 1,
    };
    let part = PartRef::single(5, Some(Uuid::from_u128(7)), false, &meta);
    let mut o = ObjectRecord::new_version(
        layout,
        vec![part],
        false,
        meta,
        vec![("k".into(), "v".into())],
        None,
    );
    o.version_id = Some(Uuid::from_u128(0x0190_b2c8_7c6e_7d4a_9b1e_3c5a_2f1d_0e9b));
    o.mtime_ns = SIGNED_AT_SECS * 1_000_000_000;
    let mut marker = o.clone();
    marker.delete_marker = true;
    marker.parts.clear();
    marker.meta = ObjectMeta::default();
    vec![o, marker]
}

fn records() -> Vec<Record> {
    objects()
        .iter()
        .enumerate()
        .map(|(i, o)| Record {
            version: VersionId([i as u8 + 1; 16]),
            stamp: Stamp {
                mtime_ns: o.mtime_ns,
                write_id: Uuid::from_u128(i as u128 + 100),
            },
            body: record::encode(o),
            listing: projection::encode(o),
        })
        .collect()
}

/// A stream of frames (mode byte 1's twin: mode 0 cuts a real stream).
fn frames() -> Vec<u8> {
    let mut key = crate::rpc::stream_key();
    let mut out = vec![0u8];
    out.extend_from_slice(&[3, 1, 200, 0, 9, 17, 2, 2, 40, 5, 1, 0, 0, 7, 3, 3]);
    for f in [
        Frame::Data(Bytes::from_static(b"a shard block")),
        Frame::Finish,
    ] {
        out.extend_from_slice(&encode_frame(&mut key, &f));
    }
    out
}

fn messages(records: &[Record]) -> Vec<Vec<u8>> {
    let ns = Bytes::from_static(b"bucket");
    let key = Bytes::from_static(b"weights/model.safetensors");
    let list = RecordListOptions {
        prefix: b"weights/".to_vec(),
        start: ListStart::After(b"weights/a".to_vec()),
        max_keys: 1000,
    };
    let mut heads = Vec::new();
    let mut spans = Vec::new();
    let head = Head::of(records).encode();
    let start = heads.len() as u32;
    push_component(&mut heads, &key);
    let mid = heads.len() as u32;
    heads.extend_from_slice(&head);
    spans.push((start, mid, heads.len() as u32));
    let page = HeadPage {
        bytes: Bytes::from(heads),
        spans,
        truncated: true,
    };
    let records_page = RecordPage {
        keys: vec![KeyRecords {
            key: key.to_vec(),
            records: records.to_vec(),
        }],
        truncated: false,
    };
    vec![
        [
            vec![0u8],
            wire::encode(&(ShardId(Uuid::from_u128(9)), 0u64, 4096u64)).to_vec(),
        ]
        .concat(),
        [
            vec![2u8],
            wire::encode(&(ns.clone(), key.clone(), RecordPut::of(records[0].clone()))).to_vec(),
        ]
        .concat(),
        [vec![5u8], wire::encode(&(ns, list)).to_vec()].concat(),
        [vec![15u8], wire::encode(&records_page).to_vec()].concat(),
        [vec![16u8], wire::encode(&page).to_vec()].concat(),
    ]
}

/// Shard tails as `shard_file` reads a stored one: the block size, the
/// file's size, its footer, then the whole tail — for an empty shard, a
/// short one and one of several 1 MiB blocks.
fn shard_tails() -> Vec<Vec<u8>> {
    [(4096u32, 0usize), (4096, 10_000), (1 << 20, (3 << 20) + 17)]
        .into_iter()
        .map(|(block_size, data_len)| {
            let data: Vec<u8> = (0..data_len).map(|i| (i % 251) as u8).collect();
            let checksums: Vec<u64> = data
                .chunks(block_size as usize)
                .map(block_checksum)
                .collect();
            let (offset, tail) = encode_tail(&checksums, data_len as u64);
            let mut seed = block_size.to_le_bytes().to_vec();
            seed.extend_from_slice(&(offset + tail.len() as u64).to_le_bytes());
            seed.extend_from_slice(&tail[tail.len() - FOOTER_LEN..]);
            seed.extend_from_slice(&tail);
            seed
        })
        .collect()
}
