//! A parent call's place in its tree, read for the call-tree limits: its depth and, when cycles
//! are refused, its path. The limits' counts are in `tree_counts.rs`.

use aws_sdk_dynamodb::types::AttributeValue;

use super::item::{key, Item, Reader};
use super::layout::{call_partition, CALL_SORT_KEY};
use super::{Store, StoreError};
use crate::domain::call_tree::{TreePlace, MAX_CALL_DEPTH_CEILING};
use crate::domain::clock::Timestamp;
use crate::domain::ids::{AgentId, CallId, TenantId};
use crate::domain::trace::TraceContext;

/// A parent call of this tenant's ledger: its tree's root and its place there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentCall {
    pub root_call_id: CallId,
    /// The agent that made the call.
    pub caller_agent_id: AgentId,
    pub place: TreePlace,
    /// When the parent call was opened.
    pub opened_at: Timestamp,
    /// The trace the parent call's open continued, which a child open that brings none joins.
    pub trace: Option<TraceContext>,
}

impl Store {
    /// `parent_call_id` as this tenant's ledger holds it, `None` when it holds no such call.
    /// A call written before calls kept their depth is placed by walking up its parents.
    pub async fn parent_call(
        &self,
        tenant_id: &TenantId,
        parent_call_id: &CallId,
    ) -> Result<Option<ParentCall>, StoreError> {
        let Some(item) = self.call_of_tenant(tenant_id, parent_call_id).await? else {
            return Ok(None);
        };
        let read = Reader(&item);
        let depth = match stored_depth(&item)? {
            Some(depth) => depth,
            None => self.depth_by_walking(tenant_id, &item).await?,
        };
        let path = match item.get("path") {
            Some(AttributeValue::L(agents)) => Some(
                agents
                    .iter()
                    .map(|agent| match agent {
                        AttributeValue::S(id) => Ok(AgentId::from(id.clone())),
                        _ => Err(StoreError::Corrupt(
                            "a call's path holds a non-string".into(),
                        )),
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            _ => None,
        };
        Ok(Some(ParentCall {
            root_call_id: read.id("root_call_id")?,
            caller_agent_id: read.id("caller_agent_id")?,
            place: TreePlace { depth, path },
            opened_at: read.at("at")?,
            trace: read.trace()?,
        }))
    }

    async fn call_of_tenant(
        &self,
        tenant_id: &TenantId,
        call_id: &str,
    ) -> Result<Option<Item>, StoreError> {
        let item = self
            .get(key(call_partition(call_id), CALL_SORT_KEY))
            .await?;
        Ok(item.filter(|item| Reader(item).s("tenant_id").ok().as_deref() == Some(tenant_id)))
    }

    /// The depth of a call that does not say it: a call without a parent, or whose parent the
    /// ledger does not hold, is 1 or 2; else one more than its parent, read up to the deepest
    /// limit a tenant may set (a chain longer than that is past every limit anyway).
    async fn depth_by_walking(&self, tenant_id: &TenantId, call: &Item) -> Result<u32, StoreError> {
        let mut depth = 1;
        let mut parent = Reader(call).opt_s("parent_call_id")?;
        while let Some(parent_id) = parent {
            depth += 1;
            if depth > MAX_CALL_DEPTH_CEILING {
                break;
            }
            let Some(item) = self.call_of_tenant(tenant_id, &parent_id).await? else {
                break;
            };
            if let Some(known) = stored_depth(&item)? {
                return Ok(known.saturating_add(depth - 1));
            }
            parent = Reader(&item).opt_s("parent_call_id")?;
        }
        Ok(depth)
    }
}

/// The depth a call item keeps, if it was written after calls kept theirs.
fn stored_depth(call: &Item) -> Result<Option<u32>, StoreError> {
    Ok(Reader(call)
        .opt_n("depth")?
        .map(|depth| u32::try_from(depth).unwrap_or(u32::MAX)))
}
