//! Bindings: the one permission on the agent-to-agent edge ("may this caller open a task on this
//! callee"), and the precise reasons a task open is refused.

use super::clock::Timestamp;
use serde::Serialize;
use uuid::Uuid;

use super::contract::{BindingLimits, Contract};
use super::ids::{AgentId, TenantId};
pub use super::refusal::RefusalReason;
use super::{Agent, AgentStatus};

/// Namespace for binding ids. A binding's id is derived from its (caller, callee) pair, so the
/// pair has exactly one row for its whole history and the open path can address it directly.
const BINDING_NAMESPACE: Uuid = Uuid::from_u128(0x6f1b_52a4_3e0c_4f0e_9a57_b1d2_0c4e_8a11);

/// The id of the binding from `caller_id` to `callee_id`.
pub fn binding_id(caller_id: &str, callee_id: &str) -> String {
    Uuid::new_v5(
        &BINDING_NAMESPACE,
        format!("{caller_id}->{callee_id}").as_bytes(),
    )
    .to_string()
}

/// A binding as stored and returned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Binding {
    pub id: String,
    #[serde(skip)]
    pub tenant_id: TenantId,
    pub caller_agent_id: AgentId,
    pub callee_agent_id: AgentId,
    /// How the binding came to be: `api` for every grant through the API.
    pub source: String,
    pub revoked: bool,
    /// When the callee's side approved; `null` while pending.
    pub approved_at: Option<Timestamp>,
    /// The call-tree limits of calls made through it, in place of the tenant's.
    pub limits: BindingLimits,
    /// What the caller may do on the callee through it.
    pub contract: Contract,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Binding {
    pub fn is_live(&self) -> bool {
        !self.revoked && self.approved_at.is_some()
    }

    /// A grant of `caller` → `callee` at `now` over the pair's `existing` row: a new binding, a
    /// revoked one made anew, or a pending one approved; approved at once when the granter also
    /// speaks for the callee (`approve_now`), pending otherwise. `None` when the grant changes
    /// nothing (the binding is live, or pending and still not approvable).
    pub fn grant(
        existing: Option<Binding>,
        caller: &Agent,
        callee: &Agent,
        approve_now: bool,
        now: &str,
    ) -> Option<Binding> {
        let approved_at = approve_now.then(|| Timestamp::from(now));
        let Some(mut binding) = existing else {
            return Some(Binding {
                id: binding_id(&caller.id, &callee.id),
                tenant_id: caller.tenant_id.clone(),
                caller_agent_id: caller.id.clone(),
                callee_agent_id: callee.id.clone(),
                source: "api".into(),
                revoked: false,
                approved_at,
                limits: BindingLimits::default(),
                contract: Contract::default(),
                created_at: now.into(),
                updated_at: now.into(),
            });
        };
        if binding.revoked {
            binding.revoked = false;
            binding.approved_at = approved_at;
        } else if binding.approved_at.is_none() && approve_now {
            binding.approved_at = approved_at;
        } else {
            return None;
        }
        binding.updated_at = now.into();
        Some(binding)
    }
}

/// Decides whether `caller_tenant` may open a task on `callee` through `binding`.
pub fn admit(
    caller_tenant: &str,
    callee: Option<&Agent>,
    binding: Option<&Binding>,
) -> Result<(), RefusalReason> {
    let callee = callee.ok_or(RefusalReason::UnknownCallee)?;
    if callee.tenant_id != caller_tenant {
        return Err(RefusalReason::OtherTenant);
    }
    match binding {
        None => return Err(RefusalReason::NoBinding),
        Some(binding) if binding.revoked => return Err(RefusalReason::BindingRevoked),
        Some(binding) if binding.approved_at.is_none() => {
            return Err(RefusalReason::BindingPending)
        }
        Some(_) => {}
    }
    match callee.status {
        AgentStatus::Active => Ok(()),
        AgentStatus::Paused => Err(RefusalReason::CalleePaused),
        AgentStatus::Retired => Err(RefusalReason::CalleeRetired),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn callee(status: AgentStatus) -> Agent {
        Agent {
            status,
            ..Agent::sample("callee", "t1", "callee")
        }
    }

    fn binding(revoked: bool, approved: bool) -> Binding {
        Binding {
            id: binding_id("caller", "callee"),
            tenant_id: "t1".into(),
            caller_agent_id: "caller".into(),
            callee_agent_id: "callee".into(),
            source: "api".into(),
            revoked,
            approved_at: approved.then(|| "2026-01-01T00:00:00.000000Z".into()),
            limits: BindingLimits::default(),
            contract: Contract::default(),
            created_at: crate::domain::clock::Timestamp::default(),
            updated_at: crate::domain::clock::Timestamp::default(),
        }
    }

    #[test]
    fn each_refusal_has_its_own_reason() {
        let active = callee(AgentStatus::Active);
        let live = binding(false, true);
        assert_eq!(admit("t1", Some(&active), Some(&live)), Ok(()));
        let cases = [
            (admit("t1", None, Some(&live)), RefusalReason::UnknownCallee),
            (
                admit("t2", Some(&active), Some(&live)),
                RefusalReason::OtherTenant,
            ),
            (admit("t1", Some(&active), None), RefusalReason::NoBinding),
            (
                admit("t1", Some(&active), Some(&binding(false, false))),
                RefusalReason::BindingPending,
            ),
            (
                admit("t1", Some(&active), Some(&binding(true, true))),
                RefusalReason::BindingRevoked,
            ),
            (
                admit("t1", Some(&callee(AgentStatus::Paused)), Some(&live)),
                RefusalReason::CalleePaused,
            ),
            (
                admit("t1", Some(&callee(AgentStatus::Retired)), Some(&live)),
                RefusalReason::CalleeRetired,
            ),
        ];
        for (outcome, reason) in cases {
            assert_eq!(outcome, Err(reason));
        }
    }

    #[test]
    fn a_pair_always_maps_to_the_same_binding_and_direction_matters() {
        assert_eq!(binding_id("a", "b"), binding_id("a", "b"));
        assert_ne!(binding_id("a", "b"), binding_id("b", "a"));
    }

    #[test]
    fn a_grant_creates_renews_or_approves_and_otherwise_changes_nothing() {
        let caller = Agent {
            id: "caller".into(),
            ..callee(AgentStatus::Active)
        };
        let target = callee(AgentStatus::Active);
        let now = "2026-01-02T00:00:00.000000Z";

        let new = Binding::grant(None, &caller, &target, false, now).unwrap();
        assert_eq!(new.id, binding_id("caller", "callee"));
        assert_eq!((new.revoked, new.approved_at.as_deref()), (false, None));
        assert_eq!(
            (new.created_at.as_str(), new.updated_at.as_str()),
            (now, now)
        );
        let approved = Binding::grant(None, &caller, &target, true, now).unwrap();
        assert_eq!(approved.approved_at.as_deref(), Some(now));

        let renewed = Binding::grant(Some(binding(true, true)), &caller, &target, false, now);
        let renewed = renewed.unwrap();
        assert!(!renewed.revoked);
        assert_eq!(
            renewed.approved_at, None,
            "a renewed grant waits for approval again"
        );
        assert_eq!(renewed.updated_at, now);

        let pending = Binding::grant(Some(binding(false, false)), &caller, &target, true, now);
        assert_eq!(pending.unwrap().approved_at.as_deref(), Some(now));

        for unchanged in [binding(false, true), binding(false, false)] {
            let approvable = unchanged.approved_at.is_some();
            assert_eq!(
                Binding::grant(Some(unchanged), &caller, &target, approvable, now),
                None
            );
        }
    }
}
