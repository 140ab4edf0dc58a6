//! fuzz-targets: the fuzzing room — one function per parser and decoder
//! that a client, a disk or a node hands Granary, each asserting more
//! than "no panic" where it can: a round trip (`decode(encode(x)) == x`),
//! agreement with a reference (the AWS signer, the splitting of a
//! stream), or a bound.
//!
//! `fuzz/` runs these functions under libFuzzer (cargo-fuzz); the tests of
//! this crate replay every input kept in `fuzz/corpus/<target>/` and
//! `fuzz/regressions/<target>/` through the same functions, so CI checks
//! the corpus without an instrumented build.
//!
//! It must import only the pure crates (the formats, the rules and the
//! S3 parsers) and never RocksDB, the store, HTTP serving or the disks'
//! I/O: an instrumented build of those would recompile RocksDB's C++.

pub mod addressing;
pub mod disk;
pub mod documents;
pub mod headers;
pub mod input;
pub mod records;
pub mod requests;
pub mod rpc;
pub mod seeds;

/// A fuzz target: panics when its property fails for this input.
pub type Target = fn(&[u8]);

/// Every target by name (the name of its `fuzz/fuzz_targets/` file and
/// of its corpus directory).
pub const TARGETS: &[(&str, Target)] = &[
    ("auth_request", requests::auth_request),
    ("sign_then_verify", requests::sign_then_verify),
    ("aws_chunked", requests::aws_chunked),
    ("request_target", addressing::request_target),
    ("xml_bodies", documents::xml_bodies),
    ("tagging", documents::tagging),
    ("cors", documents::cors),
    ("lifecycle", documents::lifecycle),
    ("iam_policy", documents::iam_policy),
    ("post_policy", documents::post_policy),
    ("post_form", documents::post_form),
    ("range", headers::range),
    ("conditions", headers::conditions),
    ("cluster_file", documents::cluster_file),
    ("record_envelope", disk::record_envelope),
    ("piece", disk::piece),
    ("heads", disk::heads),
    ("format_record", disk::format_record),
    ("shard_file", disk::shard_file),
    ("object_record", records::object_record),
    ("projection", records::projection),
    ("rpc_frames", rpc::rpc_frames),
    ("rpc_messages", rpc::rpc_messages),
];
