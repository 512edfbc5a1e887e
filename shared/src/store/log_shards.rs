//! A tenant's hot logs, its audit log and its word postings, spread over partitions
//! (`domain/shards.rs`): the tenant item says how many, and a throttled write of either doubles
//! the count. A task's audit entries and postings all go to the partition its id hashes to under
//! the count its open read (`Task::log_shard`).

use super::item::{n, s};
use super::layout::{tenant_partition, TENANT_SORT_KEY};
use super::{committed, Store, StoreError};
use crate::domain::shards::ShardCount;
use crate::domain::TenantId;

/// The tenant item's attribute that holds how many partitions its logs are spread over.
pub(crate) const LOG_SHARDS_ATTRIBUTE: &str = "log_shards";

impl Store {
    /// Spreads `tenant_id`'s logs over twice as many partitions as `from`, unless another
    /// write did already (or it is at its most); the new count, as it now stands.
    pub async fn spread_logs(
        &self,
        tenant_id: &TenantId,
        from: ShardCount,
    ) -> Result<ShardCount, StoreError> {
        let Some(to) = from.doubled() else {
            return Ok(from);
        };
        let condition = match from == ShardCount::ONE {
            true => "attribute_exists(pk) AND (attribute_not_exists(#shards) OR #shards = :from)",
            false => "attribute_exists(pk) AND #shards = :from",
        };
        let sent = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(tenant_partition(tenant_id)))
            .key("sk", s(TENANT_SORT_KEY))
            .update_expression("SET #shards = :to")
            .condition_expression(condition)
            .expression_attribute_names("#shards", LOG_SHARDS_ATTRIBUTE)
            .expression_attribute_values(":from", n(u64::from(from.get())))
            .expression_attribute_values(":to", n(u64::from(to.get())))
            .send()
            .await;
        let spread = committed(sent)?;
        // Read back, and kept for this process's next open, which then reads nothing.
        let now = self.tenant_settings(tenant_id).await?.unwrap_or_default();
        self.recent_settings.put(tenant_id.as_str().to_owned(), now);
        if spread {
            tracing::warn!(tenant_id = %tenant_id, partitions = to.get(), "tenant logs throttled: spread over more partitions");
        }
        Ok(now.log_shards)
    }

    /// After a write of `tenant_id`'s audit entries or postings was throttled: its logs are
    /// spread further, from the count this process wrote with. Its own failure is logged, never
    /// answered (the throttled write's error is).
    pub(crate) async fn logs_throttled(&self, tenant_id: &TenantId) {
        let spread = match self.recent_tenant_settings(tenant_id).await {
            Ok(settings) => self.spread_logs(tenant_id, settings.log_shards).await,
            Err(error) => Err(error),
        };
        if let Err(error) = spread {
            tracing::error!(tenant_id = %tenant_id, error = %error, "tenant logs not spread");
        }
    }
}
