//! The audit log: one item per governed decision, newest first per tenant.

use serde_json::{json, Value};

use super::item::{key, opt_s, s, Item, Reader};
use super::{classify, Store, StoreError};
use crate::domain::{clock, Principal};

/// One audit entry. `reason` carries the precise cause of a refusal, which the refused caller
/// never sees.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    pub id: String,
    pub tenant_id: String,
    pub at: String,
    pub actor_kind: String,
    pub actor_id: String,
    pub action: String,
    pub target: String,
    /// `allowed` or `refused`.
    pub outcome: String,
    pub reason: Option<String>,
    pub call_id: Option<String>,
    pub task_id: Option<String>,
}

impl AuditEntry {
    /// An entry for `actor` doing `action` on `target` now.
    pub fn new(actor: &Principal, action: &str, target: &str) -> AuditEntry {
        AuditEntry {
            id: uuid::Uuid::new_v4().to_string(),
            tenant_id: actor.tenant_id.clone(),
            at: clock::now(),
            actor_kind: actor.kind_name().to_owned(),
            actor_id: actor.id().to_owned(),
            action: action.to_owned(),
            target: target.to_owned(),
            outcome: "allowed".to_owned(),
            reason: None,
            call_id: None,
            task_id: None,
        }
    }

    pub fn refused(mut self, reason: &str) -> AuditEntry {
        self.outcome = "refused".to_owned();
        self.reason = Some(reason.to_owned());
        self
    }

    pub fn to_item(&self) -> Item {
        let mut item = key(
            format!("AUDIT#{}", self.tenant_id),
            format!("{}#{}", self.at, self.id),
        );
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
        item
    }

    /// The API view of the entry.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "at": self.at,
            "actor": {"kind": self.actor_kind, "id": self.actor_id},
            "action": self.action,
            "target": self.target,
            "outcome": self.outcome,
            "reason": self.reason,
            "call_id": self.call_id,
            "task_id": self.task_id,
        })
    }
}

impl TryFrom<&Item> for AuditEntry {
    type Error = StoreError;

    fn try_from(item: &Item) -> Result<AuditEntry, StoreError> {
        let read = Reader(item);
        Ok(AuditEntry {
            id: read.s("id")?,
            tenant_id: read.s("tenant_id")?,
            at: read.s("at")?,
            actor_kind: read.s("actor_kind")?,
            actor_id: read.s("actor_id")?,
            action: read.s("action")?,
            target: read.s("target")?,
            outcome: read.s("outcome")?,
            reason: read.opt_s("reason")?,
            call_id: read.opt_s("call_id")?,
            task_id: read.opt_s("task_id")?,
        })
    }
}

impl Store {
    /// Records one entry on its own (refusals and management actions).
    pub async fn record_audit(&self, entry: &AuditEntry) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(entry.to_item()))
            .send()
            .await
            .map(|_| ())
            .map_err(classify)
    }

    /// A page of a tenant's audit log, newest first, starting after the sort key `after`.
    /// Returns the entries and the sort key of the last one when more may follow.
    pub async fn list_audit(
        &self,
        tenant_id: &str,
        after: Option<&str>,
        limit: i32,
    ) -> Result<(Vec<AuditEntry>, Option<String>), StoreError> {
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(format!("AUDIT#{tenant_id}")))
            .scan_index_forward(false)
            .consistent_read(true)
            .limit(limit);
        if let Some(after) = after {
            query = query.set_exclusive_start_key(Some(key(format!("AUDIT#{tenant_id}"), after)));
        }
        let output = query.send().await.map_err(classify)?;
        let entries = output
            .items()
            .iter()
            .map(AuditEntry::try_from)
            .collect::<Result<Vec<_>, _>>()?;
        let next = output
            .last_evaluated_key()
            .and_then(|key| Reader(key).s("sk").ok());
        Ok((entries, next))
    }
}
