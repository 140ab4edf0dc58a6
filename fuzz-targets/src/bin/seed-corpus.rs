//! Writes the seed corpus (see `fuzz_targets::seeds`) under the directory
//! given (default `fuzz/corpus`), one file per seed named by the SHA-1
//! of its content, as libFuzzer names what it keeps.

use sha1::{Digest, Sha1};

fn main() -> std::io::Result<()> {
    let root = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "fuzz/corpus".into());
    let seeds = fuzz_targets::seeds::seeds();
    for (target, data) in &seeds {
        let dir = std::path::Path::new(&root).join(target);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(hex::encode(Sha1::digest(data))), data)?;
    }
    println!("{} seeds written under {root}", seeds.len());
    Ok(())
}
