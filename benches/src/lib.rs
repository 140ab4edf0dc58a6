//! Granary's benchmarks, outside the architecture's rooms: criterion
//! benches for the per-core kernels (erasure codec, bitrot checksum, MD5)
//! and the disk engine. Results and the commands that produced them are in
//! `benches/RESULTS.md`.
