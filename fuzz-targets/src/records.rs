//! The set engine's records: a version record's body and its listing
//! projection.

use record_format::projection::{self, listing_of_body};
use record_format::record::{decode, encode, ObjectRecord};

/// Version record bodies: one that decodes round-trips, and its listing
/// projection reads back.
pub fn object_record(data: &[u8]) {
    let _ = listing_of_body(data);
    let Ok(r) = decode::<ObjectRecord>(data) else {
        return;
    };
    let again: ObjectRecord = decode(&encode(&r)).expect("round trip");
    assert_eq!(again, r);
    let _ = r.data_ids().count();
    let listing = projection::encode(&r);
    projection::view(&listing).expect("a record's own projection reads back");
}

/// Listing projections: one that reads renders back to the same summary,
/// and the short read of its order agrees with the full one.
pub fn projection(data: &[u8]) {
    let Ok(v) = projection::view(data) else {
        let _ = projection::order_of(data);
        return;
    };
    let summary = v.to_summary();
    let again = projection::of_summary(&summary);
    let back = projection::view(&again).expect("a rendered projection reads back");
    assert_eq!(back.to_summary(), summary);
    let order = projection::order_of(data).expect("the order of a projection that reads");
    assert_eq!(order, (v.mtime_ns, v.version_id, v.delete_marker));
}
