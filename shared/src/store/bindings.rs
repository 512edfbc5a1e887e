//! Bindings: one row per (caller, callee) pair for its whole history, listed from either side
//! through the sparse indexes.

use crate::domain::clock::Timestamp;
use crate::domain::ids::AgentId;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};

use super::item::{key, opt_s, s, Item, Reader};
use super::layout::{
    binding_partition, inbound_bindings_partition, outbound_bindings_partition, BINDING_SORT_KEY,
};
use super::{AuditEntry, Store, StoreError};
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
            created_at: read.at("created_at")?,
            updated_at: read.at("updated_at")?,
        })
    }
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
