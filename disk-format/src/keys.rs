//! Order-preserving encoding of (namespace, key, suffix) into RocksDB keys.
//!
//! Each component is escaped (`0x00` → `0x00 0xFF`) and terminated with
//! `0x00 0x01`, so concatenations sort exactly like the tuples they encode
//! and a raw key prefix maps to an encoded prefix (without the terminator).

const ESC: u8 = 0x00;
const ESC_ZERO: u8 = 0xFF;
const TERM: u8 = 0x01;

/// Appends `part` escaped but without a terminator (a prefix of any
/// component that starts with `part`).
pub fn push_prefix(out: &mut Vec<u8>, part: &[u8]) {
    for &b in part {
        out.push(b);
        if b == ESC {
            out.push(ESC_ZERO);
        }
    }
}

/// Appends `part` escaped and terminated.
pub fn push_component(out: &mut Vec<u8>, part: &[u8]) {
    push_prefix(out, part);
    out.push(ESC);
    out.push(TERM);
}

/// Encodes namespace and key as a terminated pair.
pub fn ns_key(ns: &[u8], key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ns.len() + key.len() + 8);
    push_component(&mut out, ns);
    push_component(&mut out, key);
    out
}

/// Decodes one terminated component from the start of `input`; returns it
/// and the rest of the input.
pub fn take_component(input: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let mut out = Vec::with_capacity(input.len());
    let rest = decode_component(input, &mut out)?;
    Some((out, rest))
}

/// [`take_component`] appending the component to `out`; returns the rest
/// of the input.
pub fn decode_component<'a>(input: &'a [u8], out: &mut Vec<u8>) -> Option<&'a [u8]> {
    let mut rest = input;
    loop {
        // Copy the run up to the next escape byte at once.
        let at = rest.iter().position(|&b| b == ESC)?;
        out.extend_from_slice(&rest[..at]);
        match *rest.get(at + 1)? {
            ESC_ZERO => out.push(0),
            TERM => return Some(&rest[at + 2..]),
            _ => return None,
        }
        rest = &rest[at + 2..];
    }
}

/// The smallest encoded key that sorts after every key starting with
/// `encoded_prefix`, or `None` if there is none.
pub fn prefix_end(encoded_prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = encoded_prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn order_is_preserved(a in proptest::collection::vec(any::<u8>(), 0..12),
                              b in proptest::collection::vec(any::<u8>(), 0..12),
                              sa in any::<[u8; 4]>(), sb in any::<[u8; 4]>()) {
            let mut ea = ns_key(b"ns", &a); ea.extend_from_slice(&sa);
            let mut eb = ns_key(b"ns", &b); eb.extend_from_slice(&sb);
            prop_assert_eq!((a.clone(), sa).cmp(&(b.clone(), sb)), ea.cmp(&eb));
        }

        #[test]
        fn decodes_what_it_encodes(a in proptest::collection::vec(any::<u8>(), 0..20)) {
            let e = ns_key(b"x\0y", &a);
            let (ns, rest) = take_component(&e).unwrap();
            let (k, rest) = take_component(rest).unwrap();
            prop_assert_eq!(ns, b"x\0y".to_vec());
            prop_assert_eq!(k, a);
            prop_assert!(rest.is_empty());
        }

        #[test]
        fn prefixes_map_to_prefixes(p in proptest::collection::vec(any::<u8>(), 0..6),
                                   tail in proptest::collection::vec(any::<u8>(), 0..6)) {
            let mut key = p.clone(); key.extend_from_slice(&tail);
            let mut enc_prefix = Vec::new(); push_component(&mut enc_prefix, b"ns"); push_prefix(&mut enc_prefix, &p);
            prop_assert!(ns_key(b"ns", &key).starts_with(&enc_prefix));
        }
    }
}
