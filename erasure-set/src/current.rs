//! Pages of current objects held compactly: every key's name in one
//! string, its text fields in another and its other fields in a small
//! fixed entry, so a listing of a
//! million keys allocates per page, not per key (allocating, moving and
//! freeing a summary per key was a third of a listing's server time), and
//! a chunk read ahead hands out pages by range, not by moving keys. The
//! text was checked as UTF-8 once, when the projection was read: rendering
//! reads it without checking it again.

use std::ops::Range;
use std::sync::Arc;

use std::borrow::Cow;

use uuid::Uuid;

use crate::projection::{Etag, SummaryView};
use crate::record::ObjectSummary;

/// Keys with the fields of their current version, in key order.
#[derive(Debug, Default)]
pub struct Objects {
    /// Every key's name, one after the other.
    names: String,
    /// Every key's text fields, one after the other.
    text: String,
    entries: Vec<Entry>,
}

/// A key's current version; its name and text fields end where it says.
#[derive(Debug)]
struct Entry {
    name_end: u32,
    text_end: u32,
    version_id: Option<Uuid>,
    mtime_ns: u64,
    size: u64,
    md5: Option<[u8; 16]>,
    /// Lengths of the ETag (when not an MD5), the checksum's algorithm,
    /// value and kind, and the storage class, in `text`.
    lens: [u16; 5],
    checksum: bool,
    storage_class: bool,
}

impl Objects {
    /// Room for `keys` keys.
    pub fn with_capacity(keys: usize) -> Objects {
        Objects {
            names: String::with_capacity(keys * 32),
            text: String::with_capacity(keys * 32),
            entries: Vec::with_capacity(keys),
        }
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no key is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Appends a key (after every key already here) with the fields of its
    /// current version; a key that is not UTF-8 is shown with replacement
    /// characters, as S3 keys are UTF-8. Fields longer than a u16 (which no
    /// gateway writes) are cut.
    pub fn push(&mut self, name: &[u8], v: &SummaryView<'_>) {
        match std::str::from_utf8(name) {
            Ok(n) => self.names.push_str(n),
            Err(_) => self.names.push_str(&String::from_utf8_lossy(name)),
        }
        let mut lens = [0; 5];
        let mut put = |i: usize, s: &str| {
            let s = &s[..floor_char_boundary(s, u16::MAX as usize)];
            self.text.push_str(s);
            lens[i] = s.len() as u16;
        };
        let md5 = match &v.etag {
            Etag::Md5(raw) => Some(*raw),
            Etag::Text(t) => {
                put(0, t);
                None
            }
        };
        if let Some((a, value, k)) = &v.checksum {
            put(1, a);
            put(2, value);
            put(3, k);
        }
        if let Some(c) = &v.storage_class {
            put(4, c);
        }
        self.entries.push(Entry {
            name_end: self.names.len() as u32,
            text_end: self.text.len() as u32,
            version_id: v.version_id,
            mtime_ns: v.mtime_ns,
            size: v.size,
            md5,
            lens,
            checksum: v.checksum.is_some(),
            storage_class: v.storage_class.is_some(),
        });
    }

    /// Appends a key with a decoded summary of its current version.
    pub fn push_summary(&mut self, name: &str, s: &ObjectSummary) {
        let view = SummaryView {
            version_id: s.version_id,
            mtime_ns: s.mtime_ns,
            delete_marker: s.delete_marker,
            size: s.size,
            etag: Etag::Text(Cow::Borrowed(&s.meta.etag)),
            checksum: s.meta.checksum.as_ref().map(|c| {
                (
                    Cow::Borrowed(c.algorithm.as_str()),
                    Cow::Borrowed(c.value.as_str()),
                    Cow::Borrowed(c.kind.as_str()),
                )
            }),
            storage_class: s.meta.storage_class.as_deref().map(Cow::Borrowed),
        };
        self.push(name.as_bytes(), &view);
    }

    /// Where key `i`'s name and text fields start.
    fn starts(&self, i: usize) -> (usize, usize) {
        match i.checked_sub(1) {
            Some(p) => (
                self.entries[p].name_end as usize,
                self.entries[p].text_end as usize,
            ),
            None => (0, 0),
        }
    }

    /// The name of key `i`.
    pub(crate) fn name(&self, i: usize) -> &str {
        let (from, _) = self.starts(i);
        &self.names[from..self.entries[i].name_end as usize]
    }

    /// Key `i` with its current version's fields.
    pub(crate) fn get(&self, i: usize) -> (&str, SummaryView<'_>) {
        let e = &self.entries[i];
        let (_, mut at) = self.starts(i);
        let mut take = |n: usize| {
            let field = &self.text[at..at + e.lens[n] as usize];
            at += field.len();
            Cow::Borrowed(field)
        };
        let etag = match e.md5 {
            Some(raw) => Etag::Md5(raw),
            None => Etag::Text(take(0)),
        };
        let checksum = e.checksum.then(|| (take(1), take(2), take(3)));
        let storage_class = e.storage_class.then(|| take(4));
        let view = SummaryView {
            version_id: e.version_id,
            mtime_ns: e.mtime_ns,
            delete_marker: false,
            size: e.size,
            etag,
            checksum,
            storage_class,
        };
        (self.name(i), view)
    }

    /// How many keys are at or before `key`.
    pub(crate) fn up_to(&self, key: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.name(mid).as_bytes() <= key {
                true => lo = mid + 1,
                false => hi = mid,
            }
        }
        lo
    }
}

/// The largest index at most `max` that is a character boundary of `s`.
fn floor_char_boundary(s: &str, max: usize) -> usize {
    (0..=max.min(s.len()))
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0)
}

/// One page of an object listing: keys in order with their current
/// version (delete markers left out), held compactly.
#[derive(Debug)]
pub struct ObjectPage {
    objects: Arc<Objects>,
    range: Range<usize>,
    /// Continue after this key when more may follow.
    pub next: Option<String>,
}

impl ObjectPage {
    /// The keys `range` of `objects`, continued after `next`.
    pub fn new(objects: Arc<Objects>, range: Range<usize>, next: Option<String>) -> Self {
        ObjectPage {
            objects,
            range,
            next,
        }
    }

    /// Keys on the page.
    pub fn len(&self) -> usize {
        self.range.len()
    }

    /// Whether the page has no keys.
    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }

    /// The name of the page's key `i`.
    pub fn name(&self, i: usize) -> &str {
        self.objects.name(self.range.start + i)
    }

    /// The page's key `i` with its current version's fields.
    pub fn get(&self, i: usize) -> (&str, SummaryView<'_>) {
        self.objects.get(self.range.start + i)
    }

    /// The keys with their current version, decoded.
    pub fn summaries(&self) -> Vec<(String, ObjectSummary)> {
        (0..self.len())
            .map(|i| {
                let (name, view) = self.get(i);
                (name.to_string(), view.to_summary())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection;
    use crate::record::SummaryMeta;

    fn summary(etag: &str) -> ObjectSummary {
        ObjectSummary {
            version_id: None,
            mtime_ns: 7,
            delete_marker: false,
            size: 3,
            meta: SummaryMeta {
                etag: etag.into(),
                checksum: None,
                storage_class: Some("COLD".into()),
            },
        }
    }

    #[test]
    fn keys_and_versions_come_back_as_pushed() {
        let mut o = Objects::with_capacity(1);
        let md5 = "0123456789abcdef0123456789abcdef";
        o.push_summary("a", &summary(md5));
        o.push_summary("bé", &summary("x-2"));
        let y = projection::of_summary(&summary("y"));
        o.push(b"c\xff", &projection::view(&y).unwrap());
        assert_eq!(o.len(), 3);
        let page = ObjectPage::new(Arc::new(o), 1..3, None);
        assert_eq!(page.len(), 2);
        assert_eq!(page.name(0), "bé");
        assert_eq!(page.name(1), "c\u{fffd}");
        let got = page.summaries();
        assert_eq!(got[0], ("bé".to_string(), summary("x-2")));
        assert_eq!(got[1].1, summary("y"));
        assert_eq!(page.objects.get(0).1.to_summary(), summary(md5));
        let mut with_checksum = summary("z");
        with_checksum.meta.checksum = Some(crate::record::ChecksumValue {
            algorithm: "CRC32".into(),
            value: "AAAAAA==".into(),
            kind: "FULL_OBJECT".into(),
        });
        with_checksum.meta.storage_class = None;
        let mut o = Objects::with_capacity(1);
        o.push_summary("k", &with_checksum);
        assert_eq!(o.get(0).1.to_summary(), with_checksum);
    }

    #[test]
    fn up_to_counts_the_keys_at_or_before() {
        let mut o = Objects::with_capacity(3);
        for k in ["b", "d", "f"] {
            o.push_summary(k, &summary("e"));
        }
        let at = |k: &str| o.up_to(k.as_bytes());
        assert_eq!(
            [at("a"), at("b"), at("c"), at("f"), at("g")],
            [0, 1, 1, 3, 3]
        );
    }
}
