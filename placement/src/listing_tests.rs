//! Listing a store of three sets against an in-memory model: random keys
//! (some under shared prefixes), versions and delete markers, listed by
//! random prefixes in pages of 1–1000 keys, with writes between pages.
//! Every key visible before the listing and untouched while it ran is
//! listed exactly once (with its versions, newest first, when listing
//! versions); every page is in order, without a key twice, under the
//! prefix, and no longer than asked.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use disk_engine::ListStart;
use proptest::prelude::*;

use crate::model::Versioning;
use crate::store::{Store, StoreOptions};
use crate::store_tests::open_sets;

/// One store for every case (each case has a bucket of its own), and the
/// runtime it runs on.
struct Shared {
    rt: tokio::runtime::Runtime,
    store: Arc<Store>,
    _dir: tempfile::TempDir,
    next: std::sync::atomic::AtomicUsize,
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let pool = open_sets(dir.path(), 3, 2);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let store = rt
            .block_on(async { Store::for_pool(pool, StoreOptions::default()) })
            .unwrap();
        Shared {
            rt,
            store,
            _dir: dir,
            next: Default::default(),
        }
    })
}

#[derive(Clone, Debug)]
enum Op {
    Put(String),
    Delete(String),
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof!["[ab]/[a-d]{1,3}", "[ab]/[a-c]/[a-c]{1,2}", "[a-d]{1,4}",]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![3 => key().prop_map(Op::Put), 1 => key().prop_map(Op::Delete)]
}

/// A key's versions, newest first: (version id, delete marker).
type Versions = Vec<(Option<uuid::Uuid>, bool)>;
type Model = BTreeMap<String, Versions>;

async fn apply(store: &Store, bucket: &str, op: &Op, model: &mut Model) {
    match op {
        Op::Put(k) => {
            let body: erasure_set::BodyStream = Box::pin(futures::stream::iter(vec![Ok(
                Bytes::from(k.clone().into_bytes()),
            )]));
            let staged = store.write_data(bucket, k, body, None).await.unwrap();
            let o = crate::store_tests::commit(store, bucket, k, staged)
                .await
                .unwrap();
            model
                .entry(k.clone())
                .or_default()
                .insert(0, (o.version_id, false));
        }
        Op::Delete(k) => {
            let out = store.delete_object(bucket, k, None).await.unwrap();
            let id = out.version.and_then(|v| v.id());
            model.entry(k.clone()).or_default().insert(0, (id, true));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn listings_across_sets_show_every_visible_key_once_in_order(
        before in proptest::collection::vec(op(), 1..120),
        during in proptest::collection::vec(op(), 0..12),
        prefix in prop_oneof![Just(""), Just("a"), Just("a/"), Just("b/a"), Just("c")],
        page in prop_oneof![1usize..8, 8usize..40, Just(1000usize)],
        versions in any::<bool>(),
    ) {
        let sh = shared();
        let n = sh.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let bucket = format!("case{n}");
        let store = &sh.store;
        sh.rt.block_on(async {
            store.create_bucket(&bucket, "us-east-1").await.unwrap();
            store.update_bucket(&bucket, |b| { b.versioning = Versioning::Enabled; Ok(()) }).await.unwrap();
            let mut model = Model::new();
            for op in &before {
                apply(store, &bucket, op, &mut model).await;
            }
            let at_start = model.clone();
            let mut touched = std::collections::HashSet::new();
            let mut listed: Vec<(String, Versions)> = Vec::new();
            let mut start = ListStart::Beginning;
            let mut during = during.iter();
            loop {
                let (entries, next) = if versions {
                    let p = store.list_versions(&bucket, prefix, start.clone(), page).await.unwrap();
                    let e: Vec<_> = p.entries.into_iter()
                        .map(|(k, vs)| (k, vs.iter().map(|v| (v.version_id, v.delete_marker)).collect()))
                        .collect();
                    (e, p.next)
                } else {
                    let p = store.list_objects(&bucket, prefix, start.clone(), page).await.unwrap();
                    let e: Vec<_> = p.entries.into_iter().map(|(k, v)| (k, vec![(v.version_id, false)])).collect();
                    (e, p.next)
                };
                assert!(entries.len() <= page, "{} > {page}", entries.len());
                listed.extend(entries);
                if let Some(op) = during.next() {
                    let (Op::Put(k) | Op::Delete(k)) = op;
                    touched.insert(k.clone());
                    apply(store, &bucket, op, &mut model).await;
                }
                match next {
                    Some(k) => start = ListStart::After(k.into_bytes()),
                    None => break,
                }
            }
            for w in listed.windows(2) {
                assert!(w[0].0 < w[1].0, "{} then {}", w[0].0, w[1].0);
            }
            for (k, _) in &listed {
                assert!(k.starts_with(prefix), "{k} outside {prefix:?}");
            }
            let got: BTreeMap<&str, &Vec<_>> = listed.iter().map(|(k, v)| (k.as_str(), v)).collect();
            for (k, vs) in at_start.iter().filter(|(k, _)| k.starts_with(prefix) && !touched.contains(*k)) {
                let want: Versions = match versions {
                    true => vs.clone(),
                    false if vs[0].1 => continue,
                    false => vec![vs[0]],
                };
                assert_eq!(got.get(k.as_str()).copied(), Some(&want), "{k}");
            }
            // Nothing listed that was never visible.
            for (k, _) in &listed {
                assert!(model.contains_key(k), "{k} never written");
                if !versions && !touched.contains(k) {
                    assert!(!at_start[k][0].1, "{k} is a delete marker");
                }
            }
        });
    }
}
