//! The precise reasons a task open is refused: the caller sees one answer, the audit log the
//! reason.

/// Why a task open was refused. The caller only ever sees `403 not_permitted`; this goes to the
/// audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalReason {
    UnknownCallee,
    OtherTenant,
    NoBinding,
    BindingPending,
    BindingRevoked,
    CalleePaused,
    CalleeRetired,
    /// The call would be deeper in its tree than the tenant's `max_call_depth`.
    DepthExceeded,
    /// The call would reach an agent already on its own path to the root (`refuse_cycles`).
    Cycle,
    /// Its parent call has opened `max_fan_out` tasks already.
    FanOutExceeded,
    /// Its tree holds `max_open_in_tree` open tasks already.
    TreeOpenLimit,
    /// The binding's contract lists skills, and the open names none of them.
    SkillNotAllowed,
    /// An enforced tenant policy forbids the call (the audit entry names it).
    Policy,
    /// The binding's contract's rate, concurrency or daily quota is reached (a `429`, not the
    /// gate's `403`).
    QuotaExceeded,
}

impl RefusalReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalReason::UnknownCallee => "unknown_callee",
            RefusalReason::OtherTenant => "other_tenant",
            RefusalReason::NoBinding => "no_binding",
            RefusalReason::BindingPending => "binding_pending",
            RefusalReason::BindingRevoked => "binding_revoked",
            RefusalReason::CalleePaused => "callee_paused",
            RefusalReason::CalleeRetired => "callee_retired",
            RefusalReason::DepthExceeded => "depth_exceeded",
            RefusalReason::Cycle => "cycle",
            RefusalReason::FanOutExceeded => "fan_out_exceeded",
            RefusalReason::TreeOpenLimit => "tree_open_limit",
            RefusalReason::SkillNotAllowed => "skill_not_allowed",
            RefusalReason::QuotaExceeded => "quota_exceeded",
            RefusalReason::Policy => "policy",
        }
    }
}
