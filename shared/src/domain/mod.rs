//! The gateway's domain: entities, validated inputs and the rules that decide who may do what.
//! Nothing here knows about DynamoDB, SQS, KMS or HTTP; the adapters and handlers sit on top.

pub mod agent;
pub mod binding;
pub mod call_tree;
pub mod card;
pub mod change;
pub mod clock;
pub mod content;
pub mod contract;
pub mod cursor;
pub mod delivery_hold;
pub mod endpoint_health;
pub mod events;
pub mod headers;
pub mod ids;
pub mod issuer;
pub mod jcs;
pub mod keys;
pub mod media;
pub mod message;
pub mod notify;
pub mod pace;
pub mod policy;
pub mod principal;
pub mod refusal;
pub mod result;
pub mod retry;
pub mod search;
pub mod session;
pub mod shards;
pub mod signing;
pub mod state;
pub mod task;
pub mod tenant;
pub mod trace;
pub mod transitions;
pub mod words;

pub use agent::{Agent, AgentName, AgentRef, AgentStatus};
pub use binding::{Binding, RefusalReason};
pub use ids::{AgentId, CallId, ContextId, KeyId, MemberId, TaskId, TenantId};
pub use message::{Message, Part};
pub use principal::{Principal, PrincipalKind, SignedInWith, TenantPrincipal};
pub use task::{Task, TaskState};
pub use tenant::TenantSettings;

/// A validation failure in client input; its text is safe to show to the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

impl Invalid {
    pub fn new(message: impl Into<String>) -> Self {
        Invalid(message.into())
    }
}
