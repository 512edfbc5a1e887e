//! Call lineage: each governed call's parent and root, read back by call or by tree. A call's
//! item is built here and written by the open transaction (`open.rs`) with its task.

use crate::domain::ids::TenantId;
use crate::domain::trace::TraceContext;
use crate::domain::Task;

use serde_json::{json, Value};

use aws_sdk_dynamodb::types::AttributeValue;

use super::item::{insert_trace, key, n, opt_s, s, Item, Reader};
use super::layout::{
    call_partition, call_tree_partition, call_tree_sort_key, older_call_tree_partition,
    CALL_SORT_KEY,
};
use super::{Store, StoreError};

impl Store {
    /// Every call of one lineage tree in a tenant, oldest first.
    pub async fn calls_of_root(
        &self,
        tenant_id: &TenantId,
        root_call_id: &str,
    ) -> Result<Vec<Value>, StoreError> {
        // Calls written before trees had a partition per tenant share one per root: read both.
        let (items, older) = tokio::try_join!(
            self.query_index_all("gsi1", call_tree_partition(tenant_id, root_call_id)),
            self.query_index_all("gsi1", older_call_tree_partition(root_call_id)),
        )?;
        let mut items: Vec<Item> = items
            .into_iter()
            .chain(
                older
                    .into_iter()
                    .filter(|item| Reader(item).s("tenant_id").ok().as_deref() == Some(tenant_id)),
            )
            .collect();
        items.sort_by_key(|item| Reader(item).s("gsi1sk").unwrap_or_default());
        Ok(super::page::decoded(&items, "calls", |item| {
            let read = Reader(item);
            Ok(json!({
                "call_id": read.s("call_id")?,
                "parent_call_id": read.opt_s("parent_call_id")?,
                "root_call_id": read.s("root_call_id")?,
                "task_id": read.s("task_id")?,
                "caller_agent_id": read.s("caller_agent_id")?,
                "callee_agent_id": read.s("callee_agent_id")?,
                "at": read.s("at")?,
            }))
        }))
    }
}

/// The ledger's record of the task's call, indexed by the root of its call tree.
pub(crate) fn call_item(task: &Task) -> Item {
    let mut call = key(call_partition(&task.call_id), CALL_SORT_KEY);
    call.insert("kind".into(), s("call"));
    call.insert("tenant_id".into(), s(&task.tenant_id));
    call.insert("call_id".into(), s(&task.call_id));
    call.insert(
        "parent_call_id".into(),
        opt_s(task.parent_call_id.as_deref()),
    );
    call.insert("root_call_id".into(), s(&task.root_call_id));
    call.insert("task_id".into(), s(&task.id));
    call.insert("caller_agent_id".into(), s(&task.caller_agent_id));
    call.insert("callee_agent_id".into(), s(&task.callee_agent_id));
    call.insert("at".into(), s(&task.created_at));
    // The trace a child call joins when its open brings none; without the vendors' state,
    // which the task keeps.
    let trace = task.trace.clone().map(|trace| TraceContext {
        state: None,
        ..trace
    });
    insert_trace(&mut call, trace.as_ref());
    // A root call says nothing: a call without a parent is depth 1 (`store/call_tree.rs`).
    if let Some(place) = task.tree_place.as_ref().filter(|place| place.depth > 1) {
        call.insert("depth".into(), n(u64::from(place.depth)));
    }
    if let Some(path) = task
        .tree_place
        .as_ref()
        .and_then(|place| place.path.as_ref())
    {
        call.insert(
            "path".into(),
            AttributeValue::L(path.iter().map(s).collect()),
        );
    }
    call.insert(
        "gsi1pk".into(),
        s(call_tree_partition(&task.tenant_id, &task.root_call_id)),
    );
    call.insert(
        "gsi1sk".into(),
        s(call_tree_sort_key(&task.created_at, &task.call_id)),
    );
    call
}
