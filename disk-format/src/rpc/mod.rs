//! The node RPC's formats: request and answer signatures and the frame
//! keys of streamed bodies ([`auth`]), call and answer encoding, errors and
//! the framing of shard streams ([`wire`]).

pub mod auth;
pub mod wire;
