//! The audit log: one item per governed decision, newest first per tenant.

use crate::domain::clock::Timestamp;
use serde_json::{json, Value};

use super::item::{key, n, opt_s, s, Item, Reader};
use super::layout::{audit_partition, audit_shard_of_partition, audit_sort_key};
use super::{classify, Store, StoreError};
use crate::domain::task::CallLineage;
use crate::domain::{
    clock, AgentId, Binding, CallId, SignedInWith, Task, TaskId, TenantId, TenantPrincipal,
};

/// The action of a task's open: one entry per task, at the task's creation.
pub const TASK_OPENED: &str = "task.open";

/// One audit entry. `reason` carries the precise cause of a refusal, which the refused caller
/// never sees.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    pub id: String,
    pub tenant_id: TenantId,
    pub at: Timestamp,
    pub actor_kind: String,
    pub actor_id: String,
    pub action: String,
    pub target: String,
    /// `allowed` or `refused`.
    pub outcome: String,
    pub reason: Option<String>,
    pub call_id: Option<CallId>,
    /// The call that caused this one (`X-Parent-Call`) and the first call of its chain, for an
    /// open and a caller's answer, allowed or refused: where the call sits in its tree.
    pub parent_call_id: Option<CallId>,
    pub root_call_id: Option<CallId>,
    pub task_id: Option<TaskId>,
    /// The two agents the entry concerns, where its target alone does not name both: a
    /// binding's caller and callee, a task's. An agent's trail (`agent=`) finds the entry by
    /// either, as by the actor and the target.
    pub caller_agent_id: Option<AgentId>,
    pub callee_agent_id: Option<AgentId>,
    /// How many times the same refusal happened in this entry's minute (refusals are recorded
    /// once a minute per caller, target and reason, so one caller cannot flood the log).
    pub count: u64,
    /// The OpenID Connect issuer and subject the actor signed in with, when it used a token.
    pub signed_in_with: Option<SignedInWith>,
    /// The tenant policies that refused the call, or would have (`would_refuse`), by name.
    pub policy: Option<String>,
    /// The partition of the tenant's log the entry is on (`domain/shards.rs`): its task's, for
    /// an entry about a task; else `0`, the log's first.
    pub shard: u16,
}

/// The length of the window in which repeated refusals share one audit entry.
pub const REFUSAL_WINDOW_SECONDS: i64 = 60;

impl AuditEntry {
    /// An entry for `actor` doing `action` on `target` now.
    pub fn new(actor: &TenantPrincipal, action: &str, target: &str) -> AuditEntry {
        let mut entry = AuditEntry::entry(
            actor.tenant_id.clone(),
            actor.kind_name(),
            actor.id(),
            action,
            target,
        );
        entry.signed_in_with.clone_from(&actor.signed_in_with);
        entry
    }

    /// An entry for the operator doing `action` on `target` in the tenant `tenant_id`.
    pub fn by_operator(tenant_id: TenantId, action: &str, target: &str) -> AuditEntry {
        AuditEntry::entry(tenant_id, "operator", "", action, target)
    }

    /// An entry for the gateway itself doing `action` on `target` in the tenant `tenant_id`
    /// (an endpoint it disabled), for `reason`.
    pub fn by_gateway(tenant_id: TenantId, action: &str, target: &str, reason: &str) -> AuditEntry {
        let mut entry = AuditEntry::entry(tenant_id, "gateway", "", action, target);
        entry.reason = Some(reason.to_owned());
        entry
    }

    fn entry(
        tenant_id: TenantId,
        actor_kind: &str,
        actor_id: &str,
        action: &str,
        target: &str,
    ) -> AuditEntry {
        AuditEntry {
            id: uuid::Uuid::new_v4().to_string(),
            tenant_id,
            at: clock::now(),
            actor_kind: actor_kind.to_owned(),
            actor_id: actor_id.to_owned(),
            action: action.to_owned(),
            target: target.to_owned(),
            outcome: "allowed".to_owned(),
            reason: None,
            call_id: None,
            parent_call_id: None,
            root_call_id: None,
            task_id: None,
            caller_agent_id: None,
            callee_agent_id: None,
            count: 1,
            signed_in_with: None,
            policy: None,
            shard: 0,
        }
    }

    /// The entry, of the call `lineage` names: its id, its parent and its root.
    pub fn of_call(mut self, lineage: &CallLineage) -> AuditEntry {
        self.call_id = Some(lineage.call_id.clone());
        self.parent_call_id.clone_from(&lineage.parent_call_id);
        self.root_call_id = Some(lineage.root_call_id.clone());
        self
    }

    /// The entry, about `task`: the task, its call and the call's lineage.
    fn about(mut self, task: &Task) -> AuditEntry {
        self.task_id = Some(task.id.clone());
        self.shard = task.log_shard;
        self.caller_agent_id = Some(task.caller_agent_id.clone());
        self.callee_agent_id = Some(task.callee_agent_id.clone());
        self.of_call(&task.lineage())
    }

    /// An entry for `actor` doing `action` on `binding`, naming its caller and its callee.
    pub fn for_binding(actor: &TenantPrincipal, action: &str, binding: &Binding) -> AuditEntry {
        let mut entry = AuditEntry::new(actor, action, &binding.id);
        entry.caller_agent_id = Some(binding.caller_agent_id.clone());
        entry.callee_agent_id = Some(binding.callee_agent_id.clone());
        entry
    }

    /// An entry for `actor` doing `action` on `task`, with the task's call and its lineage.
    pub fn for_task(actor: &TenantPrincipal, action: &str, task: &Task) -> AuditEntry {
        AuditEntry::new(actor, action, &task.id).about(task)
    }

    /// The entry of a task's open: its caller opened it on its callee, at its creation. Its id
    /// follows from the task's, so the entry can be written again (`store/open.rs`) as the same
    /// item.
    pub fn task_opened(task: &Task) -> AuditEntry {
        let mut entry = AuditEntry::entry(
            task.tenant_id.clone(),
            "agent",
            &task.caller_agent_id,
            TASK_OPENED,
            &task.callee_agent_id,
        );
        entry.id = uuid::Uuid::new_v5(
            &uuid::Uuid::NAMESPACE_OID,
            format!("task.open#{}", task.id).as_bytes(),
        )
        .to_string();
        entry.at = task.created_at.clone();
        entry.signed_in_with.clone_from(&task.caller_signed_in_with);
        entry.about(task)
    }

    /// Where the entry sorts in its tenant's log: `{at}#{id}`.
    pub fn sort_key(&self) -> String {
        audit_sort_key(&self.at, &self.id)
    }

    pub fn refused(mut self, reason: &str) -> AuditEntry {
        self.outcome = "refused".to_owned();
        self.reason = Some(reason.to_owned());
        self
    }

    /// The entry of a call the tenant policies `names` forbid: `refused` by enforced ones, or
    /// `would_refuse` by tried ones (the call goes on).
    pub fn by_policies(mut self, names: &[String], enforced: bool) -> AuditEntry {
        self.outcome = if enforced { "refused" } else { "would_refuse" }.to_owned();
        self.reason = Some("policy".to_owned());
        self.policy = Some(names.join(","));
        self
    }

    pub fn to_item(&self) -> Item {
        let partition = audit_partition(&self.tenant_id, self.shard);
        let mut item = key(partition, self.sort_key());
        item.insert("kind".into(), s("audit"));
        item.insert("id".into(), s(&self.id));
        item.insert("tenant_id".into(), s(&self.tenant_id));
        item.insert("at".into(), s(&self.at));
        item.insert("actor_kind".into(), s(&self.actor_kind));
        item.insert("actor_id".into(), s(&self.actor_id));
        item.insert("action".into(), s(&self.action));
        item.insert("target".into(), s(&self.target));
        item.insert("outcome".into(), s(&self.outcome));
        item.insert("reason".into(), opt_s(self.reason.as_deref()));
        item.insert("call_id".into(), opt_s(self.call_id.as_deref()));
        item.insert("task_id".into(), opt_s(self.task_id.as_deref()));
        item.insert("count".into(), n(self.count));
        // Written only when known, so entries of other actions stay as small as they were.
        if let Some(parent) = &self.parent_call_id {
            item.insert("parent_call_id".into(), s(parent));
        }
        if let Some(root) = &self.root_call_id {
            item.insert("root_call_id".into(), s(root));
        }
        if let Some(caller) = &self.caller_agent_id {
            item.insert("caller_agent_id".into(), s(caller));
        }
        if let Some(callee) = &self.callee_agent_id {
            item.insert("callee_agent_id".into(), s(callee));
        }
        if let Some(policy) = &self.policy {
            item.insert("policy".into(), s(policy));
        }
        if let Some(token) = &self.signed_in_with {
            item.insert("token_issuer".into(), s(&token.issuer));
            item.insert("token_subject".into(), s(&token.subject));
        }
        item
    }

    /// The API view of the entry; `actor_name` is the actor's name where one is known.
    pub fn to_json(&self, actor_name: Option<&str>) -> Value {
        let mut actor = json!({"kind": self.actor_kind, "id": self.actor_id, "name": actor_name});
        if let Some(token) = &self.signed_in_with {
            actor["signed_in_with"] = json!({"issuer": token.issuer, "subject": token.subject});
        }
        json!({
            "id": self.id,
            "at": self.at,
            "actor": actor,
            "action": self.action,
            "target": self.target,
            "outcome": self.outcome,
            "reason": self.reason,
            "policy": self.policy,
            "call_id": self.call_id,
            "parent_call_id": self.parent_call_id,
            "root_call_id": self.root_call_id,
            "task_id": self.task_id,
            "caller_agent_id": self.caller_agent_id,
            "callee_agent_id": self.callee_agent_id,
            "count": self.count,
        })
    }
}

impl TryFrom<&Item> for AuditEntry {
    type Error = StoreError;

    fn try_from(item: &Item) -> Result<AuditEntry, StoreError> {
        let read = Reader(item);
        Ok(AuditEntry {
            id: read.s("id")?,
            tenant_id: read.id("tenant_id")?,
            at: read.at("at")?,
            actor_kind: read.s("actor_kind")?,
            actor_id: read.s("actor_id")?,
            action: read.s("action")?,
            target: read.s("target")?,
            outcome: read.s("outcome")?,
            reason: read.opt_s("reason")?,
            call_id: read.opt_id("call_id")?,
            parent_call_id: read.opt_id("parent_call_id")?,
            root_call_id: read.opt_id("root_call_id")?,
            task_id: read.opt_id("task_id")?,
            caller_agent_id: read.opt_id("caller_agent_id")?,
            callee_agent_id: read.opt_id("callee_agent_id")?,
            count: match item.get("count") {
                Some(_) => read.n("count")?,
                None => 1,
            },
            signed_in_with: match (read.opt_s("token_issuer")?, read.opt_s("token_subject")?) {
                (Some(issuer), Some(subject)) => Some(SignedInWith { issuer, subject }),
                _ => None,
            },
            policy: read.opt_s("policy")?,
            shard: audit_shard_of_partition(&read.s("pk")?),
        })
    }
}

impl Store {
    /// Records one entry on its own (refusals and management actions).
    /// A throttled write of an entry about a task spreads the tenant's log further
    /// (`store/audit_log.rs`); entries about no task stay on the log's first partition, where
    /// spreading would not move them.
    pub async fn record_audit(&self, entry: &AuditEntry) -> Result<(), StoreError> {
        let written = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(entry.to_item()))
            .send()
            .await
            .map(|_| ())
            .map_err(classify);
        if let (Err(StoreError::Throttled(_)), Some(_)) = (&written, &entry.task_id) {
            self.logs_throttled(&entry.tenant_id).await;
        }
        written
    }
}
