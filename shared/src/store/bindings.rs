//! Bindings: one row per (caller, callee) pair for its whole history, listed from either side
//! through the sparse indexes.

use crate::domain::clock::Timestamp;
use crate::domain::ids::{AgentId, TenantId};
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};

use super::item::{key, n, opt_s, s, Item, Reader};
use super::layout::{
    binding_partition, inbound_bindings_partition, outbound_bindings_partition, tenant_partition,
    BINDING_SORT_KEY, TENANT_SORT_KEY,
};
use super::{AuditEntry, Store, StoreError};
use crate::domain::contract::{BindingLimits, Contract};
use crate::domain::Binding;

fn binding_key(binding_id: &str) -> Item {
    key(binding_partition(binding_id), BINDING_SORT_KEY)
}

fn to_item(binding: &Binding) -> Item {
    let mut item = binding_key(&binding.id);
    item.insert("kind".into(), s("binding"));
    item.insert("id".into(), s(&binding.id));
    item.insert("tenant_id".into(), s(&binding.tenant_id));
    item.insert("caller_agent_id".into(), s(&binding.caller_agent_id));
    item.insert("callee_agent_id".into(), s(&binding.callee_agent_id));
    item.insert("source".into(), s(&binding.source));
    item.insert("revoked".into(), AttributeValue::Bool(binding.revoked));
    item.insert(
        "approved".into(),
        AttributeValue::Bool(binding.approved_at.is_some()),
    );
    item.insert("approved_at".into(), opt_s(binding.approved_at.as_deref()));
    if binding.limits != BindingLimits::default() {
        item.insert("limits".into(), s(to_json_text(&binding.limits)));
    }
    if binding.contract != Contract::default() {
        item.insert("contract".into(), s(to_json_text(&binding.contract)));
    }
    item.insert("created_at".into(), s(&binding.created_at));
    item.insert("updated_at".into(), s(&binding.updated_at));
    item.insert(
        "gsi1pk".into(),
        s(outbound_bindings_partition(&binding.caller_agent_id)),
    );
    item.insert("gsi1sk".into(), s(&binding.callee_agent_id));
    item.insert(
        "gsi2pk".into(),
        s(inbound_bindings_partition(&binding.callee_agent_id)),
    );
    item.insert("gsi2sk".into(), s(&binding.caller_agent_id));
    item
}

impl TryFrom<&Item> for Binding {
    type Error = StoreError;

    fn try_from(item: &Item) -> Result<Binding, StoreError> {
        let read = Reader(item);
        Ok(Binding {
            id: read.s("id")?,
            tenant_id: read.id("tenant_id")?,
            caller_agent_id: read.id("caller_agent_id")?,
            callee_agent_id: read.id("callee_agent_id")?,
            source: read.s("source")?,
            revoked: read.bool("revoked")?,
            approved_at: read.opt_at("approved_at")?,
            limits: stored_terms(&read, "limits")?,
            contract: stored_terms(&read, "contract")?,
            created_at: read.at("created_at")?,
            updated_at: read.at("updated_at")?,
        })
    }
}

/// A binding's limits or contract as its item keeps them (JSON text); absent is none.
fn stored_terms<T: Default + serde::de::DeserializeOwned>(
    read: &Reader<'_>,
    name: &str,
) -> Result<T, StoreError> {
    match read.opt_json(name)? {
        None => Ok(T::default()),
        Some(value) => serde_json::from_value(value)
            .map_err(|error| StoreError::Corrupt(format!("attribute {name}: {error}"))),
    }
}

fn to_json_text(value: &impl serde::Serialize) -> String {
    serde_json::to_value(value).map_or_else(|_| "{}".to_owned(), |value| value.to_string())
}

/// The tenant attribute counting its bindings whose limits need every call tracked.
pub(crate) const TRACKING_ATTRIBUTE: &str = "tracking_bindings";

/// A change of the tenant's count of tracking bindings: from `seen` (as read) to `next`, at
/// `now_ms`.
#[derive(Debug, Clone, Copy)]
pub struct TrackingChange {
    pub seen: u64,
    pub next: u64,
    pub now_ms: u64,
}

/// A binding to write, and the `updated_at` it had when read (`None` for a new row).
pub struct BindingWrite {
    pub binding: Binding,
    pub previous_updated_at: Option<Timestamp>,
}

impl Store {
    pub async fn get_binding(&self, binding_id: &str) -> Result<Option<Binding>, StoreError> {
        let output = self.get(binding_key(binding_id)).await?;
        output.as_ref().map(Binding::try_from).transpose()
    }

    /// Writes bindings all together, each only if unchanged since it was read. Returns `false`,
    /// writing nothing, when any of them changed in between.
    pub async fn save_bindings(
        &self,
        writes: &[BindingWrite],
        audit: &[AuditEntry],
    ) -> Result<bool, StoreError> {
        let mut items = Vec::with_capacity(writes.len());
        for write in writes {
            let builder = Put::builder()
                .table_name(&self.table)
                .set_item(Some(to_item(&write.binding)));
            let builder = match &write.previous_updated_at {
                None => builder.condition_expression("attribute_not_exists(pk)"),
                Some(seen) => builder
                    .condition_expression("updated_at = :seen")
                    .expression_attribute_values(":seen", s(seen)),
            };
            let put = builder
                .build()
                .map_err(|error| StoreError::Rejected(error.to_string()))?;
            items.push(TransactWriteItem::builder().put(put).build());
        }
        for entry in audit {
            items.push(self.put_new(entry.to_item())?);
        }
        self.transact_if(items).await
    }

    /// How many of the tenant's bindings have limits that need every call tracked
    /// (`BindingLimits::needs_tracking`), read now.
    pub async fn bindings_tracking(&self, tenant_id: &TenantId) -> Result<u64, StoreError> {
        let item = self
            .get(key(tenant_partition(tenant_id), TENANT_SORT_KEY))
            .await?;
        match item {
            Some(item) => Reader(&item).n_or(TRACKING_ATTRIBUTE, 0),
            None => Ok(0),
        }
    }

    /// Writes a binding's new limits or contract with its audit entry, and the tenant's count
    /// of tracking bindings when it changes; `false`, writing nothing, when the binding or that
    /// count changed since they were read.
    pub async fn save_binding_terms(
        &self,
        write: &BindingWrite,
        audit: &AuditEntry,
        tracking: Option<TrackingChange>,
    ) -> Result<bool, StoreError> {
        let mut items = Vec::with_capacity(3);
        let Some(seen) = &write.previous_updated_at else {
            return Err(StoreError::Rejected(
                "a binding's terms change an existing binding".into(),
            ));
        };
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(to_item(&write.binding)))
            .condition_expression("updated_at = :seen")
            .expression_attribute_values(":seen", s(seen))
            .build()
            .map_err(|error| StoreError::Rejected(error.to_string()))?;
        items.push(TransactWriteItem::builder().put(put).build());
        if let Some(change) = tracking {
            items.push(self.tracking_update(&write.binding.tenant_id, change)?);
        }
        items.push(self.put_new(audit.to_item())?);
        let saved = self.transact_if(items).await?;
        if saved && tracking.is_some() {
            self.recent_settings
                .forget(write.binding.tenant_id.as_str());
        }
        Ok(saved)
    }

    /// Moves the tenant's count of tracking bindings from what was read; when it goes from none
    /// to some or back, counting starts again (`call_tree_counts_since`): opens were not
    /// counted while nothing tracked them, and a root's children are counted beside its tree's
    /// open tasks only while those are (`CallTreeLimits::changed_to`).
    fn tracking_update(
        &self,
        tenant_id: &TenantId,
        change: TrackingChange,
    ) -> Result<TransactWriteItem, StoreError> {
        let mut expression = format!("SET {TRACKING_ATTRIBUTE} = :next");
        let starts = (change.seen == 0) != (change.next == 0);
        if starts {
            expression.push_str(", call_tree_counts_since = :now");
        }
        let condition = if change.seen == 0 {
            format!("attribute_exists(pk) AND (attribute_not_exists({TRACKING_ATTRIBUTE}) OR {TRACKING_ATTRIBUTE} = :seen)")
        } else {
            format!("{TRACKING_ATTRIBUTE} = :seen")
        };
        let mut update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key(tenant_partition(tenant_id), TENANT_SORT_KEY)))
            .update_expression(expression)
            .condition_expression(condition)
            .expression_attribute_values(":next", n(change.next))
            .expression_attribute_values(":seen", n(change.seen));
        if starts {
            update = update.expression_attribute_values(":now", n(change.now_ms));
        }
        let update = update
            .build()
            .map_err(|error| StoreError::Rejected(error.to_string()))?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// Bindings where `agent_id` is the caller (`outbound`) or the callee (inbound).
    pub async fn list_bindings(
        &self,
        agent_id: &AgentId,
        outbound: bool,
    ) -> Result<Vec<Binding>, StoreError> {
        let (index, pk) = if outbound {
            ("gsi1", outbound_bindings_partition(agent_id))
        } else {
            ("gsi2", inbound_bindings_partition(agent_id))
        };
        let items = self.query_index_all(index, pk).await?;
        Ok(super::page::decoded(&items, "bindings", Binding::try_from))
    }
}
