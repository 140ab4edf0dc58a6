//! Merging the pages of one listing read from every set of a pool: each
//! set's page is sorted and complete up to where it says to continue, a
//! key lives in exactly one set, so the merged page is every entry up to
//! the nearest of those bounds, in order, cut at the page size. What the
//! merge costs grows with the number of sets: each is asked for a full
//! page, and only the nearest bound's worth of them is used.

/// One set's page: entries with their sort keys in order, and the last key
/// it covers when more may follow.
pub(crate) struct SetPage<K, T> {
    pub(crate) entries: Vec<(K, T)>,
    pub(crate) next: Option<K>,
}

/// The merged page of at most `max` entries, in key order, and the key to
/// continue after when more may follow (in any set).
pub(crate) fn merge_pages<K: Ord + Clone, T>(
    pages: Vec<SetPage<K, T>>,
    max: usize,
) -> (Vec<(K, T)>, Option<K>) {
    let bound = pages.iter().filter_map(|p| p.next.clone()).min();
    let mut all: Vec<(K, T)> = pages
        .into_iter()
        .flat_map(|p| p.entries)
        .filter(|(k, _)| bound.as_ref().is_none_or(|b| k <= b))
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    if all.len() > max {
        all.truncate(max);
        let next = all.last().map(|(k, _)| k.clone());
        return (all, next);
    }
    (all, bound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn page(keys: &[&str], next: Option<&str>) -> SetPage<String, ()> {
        SetPage {
            entries: keys.iter().map(|k| (k.to_string(), ())).collect(),
            next: next.map(str::to_string),
        }
    }

    fn keys(merged: &(Vec<(String, ())>, Option<String>)) -> Vec<&str> {
        merged.0.iter().map(|(k, _)| k.as_str()).collect()
    }

    #[test]
    fn a_truncated_set_bounds_the_page() {
        let m = merge_pages(
            vec![page(&["a", "c", "e"], Some("e")), page(&["b", "f"], None)],
            10,
        );
        assert_eq!(keys(&m), vec!["a", "b", "c", "e"]);
        assert_eq!(m.1.as_deref(), Some("e"));
        let m = merge_pages(vec![page(&["a", "c"], None), page(&["b", "d"], None)], 3);
        assert_eq!(keys(&m), vec!["a", "b", "c"]);
        assert_eq!(m.1.as_deref(), Some("c"));
        let m = merge_pages(vec![page(&["a"], None), page(&["b"], None)], 2);
        assert_eq!(m.1, None);
    }

    proptest! {
        /// Paging through sets of random keys with random page sizes (each
        /// set answering pages no longer than asked, some shorter) lists
        /// every key once, in order.
        #[test]
        fn paging_lists_every_key_once_in_order(
            keys in proptest::collection::btree_set("[a-d]{1,4}", 0..60),
            sets in 1usize..5,
            max in 1usize..8,
            short in 0usize..3,
        ) {
            let keys: Vec<String> = keys.into_iter().collect();
            let mut per_set: Vec<Vec<String>> = vec![Vec::new(); sets];
            for (i, k) in keys.iter().enumerate() {
                per_set[(i * 7 + k.len()) % sets].push(k.clone());
            }
            let mut after: Option<String> = None;
            let mut seen = Vec::new();
            for _ in 0..1000 {
                let pages = per_set.iter().enumerate().map(|(s, ks)| {
                    let rest: Vec<&String> = ks.iter().filter(|k| after.as_ref().is_none_or(|a| *k > a)).collect();
                    let room = if s % 2 == 0 { max.saturating_sub(short).max(1) } else { max };
                    let taken: Vec<(String, ())> = rest.iter().take(room).map(|k| ((*k).clone(), ())).collect();
                    let next = (rest.len() > room).then(|| taken.last().unwrap().0.clone());
                    SetPage { entries: taken, next }
                }).collect();
                let (entries, next) = merge_pages(pages, max);
                prop_assert!(entries.len() <= max);
                seen.extend(entries.into_iter().map(|(k, _)| k));
                match next {
                    Some(n) => after = Some(n),
                    None => break,
                }
            }
            prop_assert_eq!(seen, keys);
        }
    }
}
