//! Pages of current objects held compactly: every key's name in one
//! string and its listing projection in one buffer, so a listing of a
//! million keys allocates per page, not per key (allocating, moving and
//! freeing a summary per key was a third of a listing's server time), and
//! a chunk read ahead hands out pages by range, not by moving keys.

use std::ops::Range;
use std::sync::Arc;

use crate::error::Error;
use crate::projection::{self, SummaryView};
use crate::record::ObjectSummary;

/// Keys with the projection of their current version, in key order.
#[derive(Debug, Default)]
pub struct Objects {
    names: String,
    projections: Vec<u8>,
    /// Per key: where its name and its projection end.
    ends: Vec<(u32, u32)>,
}

impl Objects {
    /// Room for `keys` keys.
    pub(crate) fn with_capacity(keys: usize) -> Objects {
        Objects {
            names: String::with_capacity(keys * 24),
            projections: Vec::with_capacity(keys * 48),
            ends: Vec::with_capacity(keys),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Appends a key (after every key already here) with the projection of
    /// its current version; a key that is not UTF-8 is shown with
    /// replacement characters, as S3 keys are UTF-8.
    pub(crate) fn push(&mut self, name: &[u8], projection: &[u8]) {
        match std::str::from_utf8(name) {
            Ok(n) => self.names.push_str(n),
            Err(_) => self.names.push_str(&String::from_utf8_lossy(name)),
        }
        self.projections.extend_from_slice(projection);
        self.ends
            .push((self.names.len() as u32, self.projections.len() as u32));
    }

    /// Appends a key with a decoded summary of its current version.
    pub(crate) fn push_summary(&mut self, name: &str, summary: &ObjectSummary) {
        self.push(name.as_bytes(), &projection::of_summary(summary));
    }

    fn starts(&self, i: usize) -> (usize, usize) {
        match i.checked_sub(1) {
            Some(p) => (self.ends[p].0 as usize, self.ends[p].1 as usize),
            None => (0, 0),
        }
    }

    /// The name of key `i`.
    pub(crate) fn name(&self, i: usize) -> &str {
        let (from, _) = self.starts(i);
        &self.names[from..self.ends[i].0 as usize]
    }

    /// Key `i` with its current version's fields.
    pub(crate) fn get(&self, i: usize) -> Result<(&str, SummaryView<'_>), Error> {
        let (_, from) = self.starts(i);
        let view = projection::view(&self.projections[from..self.ends[i].1 as usize])?;
        Ok((self.name(i), view))
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
    pub(crate) fn new(objects: Arc<Objects>, range: Range<usize>, next: Option<String>) -> Self {
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

    /// The page's key `i` with its current version's fields; `Corrupt` for
    /// a damaged projection.
    pub fn get(&self, i: usize) -> Result<(&str, SummaryView<'_>), Error> {
        self.objects.get(self.range.start + i)
    }

    /// The keys with their current version, decoded.
    pub fn summaries(&self) -> Result<Vec<(String, ObjectSummary)>, Error> {
        (0..self.len())
            .map(|i| {
                let (name, view) = self.get(i)?;
                Ok((name.to_string(), view.to_summary()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        o.push(b"c\xff", &projection::of_summary(&summary("y")));
        assert_eq!(o.len(), 3);
        let page = ObjectPage::new(Arc::new(o), 1..3, None);
        assert_eq!(page.len(), 2);
        assert_eq!(page.name(0), "bé");
        assert_eq!(page.name(1), "c\u{fffd}");
        let got = page.summaries().unwrap();
        assert_eq!(got[0], ("bé".to_string(), summary("x-2")));
        assert_eq!(got[1].1, summary("y"));
        assert_eq!(page.objects.get(0).unwrap().1.to_summary(), summary(md5));
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
