//! Who is asking: the principal behind a key, and what each kind of principal may do.
//!
//! The operator stands outside every tenant (it creates tenants, nothing inside them); every
//! other key belongs to one tenant, and a [`TenantPrincipal`] carries that tenant.

use super::ids::{AgentId, MemberId, TenantId};
use super::Agent;

/// The principal behind an authenticated key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// The deployment's operator: creates tenants, nothing inside them.
    Operator,
    /// A person or an agent of one tenant.
    Tenant(TenantPrincipal),
}

impl Principal {
    /// The kind as the audit log names it.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Principal::Operator => "operator",
            Principal::Tenant(principal) => principal.kind_name(),
        }
    }

    /// The tenant principal, or `None` for the operator.
    pub fn in_tenant(&self) -> Option<&TenantPrincipal> {
        match self {
            Principal::Operator => None,
            Principal::Tenant(principal) => Some(principal),
        }
    }
}

/// What a key of a tenant stands for. People carry their role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrincipalKind {
    Admin { member_id: MemberId },
    Member { member_id: MemberId },
    Viewer { member_id: MemberId },
    Agent { agent_id: AgentId },
}

/// A principal of one tenant: who it is and in which tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantPrincipal {
    pub tenant_id: TenantId,
    pub kind: PrincipalKind,
    /// The OpenID Connect identity it signed in with, when it used a token and not a key.
    pub signed_in_with: Option<SignedInWith>,
}

/// The issuer and subject of the token a principal signed in with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedInWith {
    pub issuer: String,
    pub subject: String,
}

impl TenantPrincipal {
    /// The kind as the audit log names it.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            PrincipalKind::Admin { .. } => "admin",
            PrincipalKind::Member { .. } => "member",
            PrincipalKind::Viewer { .. } => "viewer",
            PrincipalKind::Agent { .. } => "agent",
        }
    }

    /// The member or agent id behind the key.
    pub fn id(&self) -> &str {
        match &self.kind {
            PrincipalKind::Admin { member_id }
            | PrincipalKind::Member { member_id }
            | PrincipalKind::Viewer { member_id } => member_id,
            PrincipalKind::Agent { agent_id } => agent_id,
        }
    }

    pub fn is_admin(&self) -> bool {
        matches!(self.kind, PrincipalKind::Admin { .. })
    }

    /// The agent id, when the key is an agent's.
    pub fn agent_id(&self) -> Option<&AgentId> {
        match &self.kind {
            PrincipalKind::Agent { agent_id } => Some(agent_id),
            _ => None,
        }
    }

    /// The member id, when the key is a person's.
    pub fn member_id(&self) -> Option<&MemberId> {
        match &self.kind {
            PrincipalKind::Admin { member_id }
            | PrincipalKind::Member { member_id }
            | PrincipalKind::Viewer { member_id } => Some(member_id),
            PrincipalKind::Agent { .. } => None,
        }
    }

    /// Whether this principal may manage `agent`: an admin of its tenant, or the member who owns it.
    pub fn speaks_for(&self, agent: &Agent) -> bool {
        if self.tenant_id != agent.tenant_id {
            return false;
        }
        match &self.kind {
            PrincipalKind::Admin { .. } => true,
            PrincipalKind::Member { member_id } => {
                agent.owner_member_id.as_ref() == Some(member_id)
            }
            _ => false,
        }
    }

    /// Whether this principal may read `agent` and its bindings: any person of the tenant, or the
    /// agent itself.
    pub fn may_read_agent(&self, agent: &Agent) -> bool {
        if self.tenant_id != agent.tenant_id {
            return false;
        }
        match &self.kind {
            PrincipalKind::Admin { .. }
            | PrincipalKind::Member { .. }
            | PrincipalKind::Viewer { .. } => true,
            PrincipalKind::Agent { agent_id } => *agent_id == agent.id,
        }
    }

    /// Whether this principal reads every task of its tenant (the console roles).
    pub fn reads_all_tasks(&self) -> bool {
        matches!(
            self.kind,
            PrincipalKind::Admin { .. } | PrincipalKind::Viewer { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(tenant: &str, owner: Option<&str>) -> Agent {
        Agent {
            owner_member_id: owner.map(Into::into),
            ..Agent::sample("a1", tenant, "worker")
        }
    }

    fn person(tenant: &str, kind: PrincipalKind) -> TenantPrincipal {
        TenantPrincipal {
            tenant_id: tenant.into(),
            kind,
            signed_in_with: None,
        }
    }

    #[test]
    fn only_an_admin_or_the_owner_speaks_for_an_agent() {
        let owned = agent("t1", Some("m1"));
        let admin = person(
            "t1",
            PrincipalKind::Admin {
                member_id: "x".into(),
            },
        );
        let owner = person(
            "t1",
            PrincipalKind::Member {
                member_id: "m1".into(),
            },
        );
        let other = person(
            "t1",
            PrincipalKind::Member {
                member_id: "m2".into(),
            },
        );
        let viewer = person(
            "t1",
            PrincipalKind::Viewer {
                member_id: "m1".into(),
            },
        );
        let foreign_admin = person(
            "t2",
            PrincipalKind::Admin {
                member_id: "x".into(),
            },
        );
        assert!(admin.speaks_for(&owned));
        assert!(owner.speaks_for(&owned));
        assert!(!other.speaks_for(&owned));
        assert!(!viewer.speaks_for(&owned));
        assert!(!foreign_admin.speaks_for(&owned));
    }

    #[test]
    fn an_agent_reads_only_itself_and_nobody_reads_across_tenants() {
        let target = agent("t1", None);
        let itself = person(
            "t1",
            PrincipalKind::Agent {
                agent_id: "a1".into(),
            },
        );
        let sibling = person(
            "t1",
            PrincipalKind::Agent {
                agent_id: "a2".into(),
            },
        );
        let foreign_viewer = person(
            "t2",
            PrincipalKind::Viewer {
                member_id: "v".into(),
            },
        );
        assert!(itself.may_read_agent(&target));
        assert!(!sibling.may_read_agent(&target));
        assert!(!foreign_viewer.may_read_agent(&target));
    }
}
