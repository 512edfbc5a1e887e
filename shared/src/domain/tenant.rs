//! A tenant's settings: what its admins choose for the whole tenant.

use serde::Serialize;

use super::call_tree::CallTreeLimits;
use super::shards::ShardCount;

/// The settings of one tenant; a tenant that never changed them has the defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TenantSettings {
    /// Whether the words of the tenant's task messages are indexed for `q` searches (postings,
    /// docs/api.md "Task search"). On by default; a tenant that does not want its message words
    /// copied into an index, or paid for, turns it off.
    pub word_search: bool,
    /// The limits on its trees of calls (docs/api.md "Governance").
    pub call_tree: CallTreeLimits,
    /// The version of the tenant's policies (docs/api.md, "Tenant policies"): 0 while it has
    /// none, so a call of a tenant without policies reads nothing more.
    pub policies_version: u64,
    /// How many partitions the tenant's logs (audit entries, word postings) are spread over
    /// (`domain/shards.rs`): one until a write of them is throttled, never chosen by the tenant.
    #[serde(skip)]
    pub log_shards: ShardCount,
}

impl Default for TenantSettings {
    fn default() -> Self {
        TenantSettings {
            word_search: true,
            call_tree: CallTreeLimits::default(),
            policies_version: 0,
            log_shards: ShardCount::ONE,
        }
    }
}
