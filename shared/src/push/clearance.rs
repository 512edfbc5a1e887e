//! What a push job needs before it may POST (`push/fair_share.rs` grants it).

use std::time::Duration;

use crate::domain::ids::TenantId;
use crate::store::PollSlot;

/// Leave for one POST (or one round of POSTs) of a tenant's to one receiver domain.
pub(super) struct Clearance {
    pub(super) tenant_id: TenantId,
    pub(super) domain: String,
    /// The slot of the tenant's pushes in flight it holds; none for a domain known to answer
    /// in time (`Breakers::needs_slot`).
    pub(super) slot: Option<PollSlot>,
    /// The time each POST is given.
    pub(super) time: Duration,
}

/// Whether a job may POST now.
pub(super) enum Cleared {
    Go(Clearance),
    /// Not now: come back after this long.
    HoldBack(Duration),
}
