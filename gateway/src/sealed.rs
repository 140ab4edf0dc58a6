//! What the store holds sealed under the master key: users' secrets and
//! remote tiers' keys.

use crate::iam::USER_PREFIX;
use crate::tiers::TIER_DOCS;

/// Whether `store` holds anything sealed under the master key: if not, a
/// lost master key loses nothing.
pub async fn holds_sealed_secrets(store: &placement::Store) -> Result<bool, placement::Error> {
    for prefix in [USER_PREFIX, TIER_DOCS] {
        if store.has_system_docs(prefix).await? {
            return Ok(true);
        }
    }
    Ok(false)
}
