//! A tenant's policies: one item under the tenant holding them all with their version, and the
//! version on the tenant's item too, so a call reads the policies only when its tenant has some
//! (the tenant's settings, which every open reads from this process's cache, carry the version),
//! and each process compiles one version once.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::{Put, TransactWriteItem, Update};

use super::item::{key, n, s, Item, Reader};
use super::layout::{tenant_partition, POLICIES_SORT_KEY, TENANT_SORT_KEY};
use super::{AuditEntry, Store, StoreError};
use crate::domain::policy::{PolicyBook, TenantPolicy};
use crate::domain::TenantId;

/// The tenant attribute holding the version of its policies.
pub(crate) const VERSION_ATTRIBUTE: &str = "policies_version";

/// How long a compiled version is kept: versions never change, so this only bounds memory.
const BOOK_TTL: Duration = Duration::from_secs(3600);

/// A tenant's policies as stored, and their version (0 for none ever saved).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredPolicies {
    pub version: u64,
    pub policies: Vec<TenantPolicy>,
}

fn policies_key(tenant_id: &TenantId) -> Item {
    key(tenant_partition(tenant_id), POLICIES_SORT_KEY)
}

impl Store {
    /// The tenant's policies as they stand (a strongly consistent read).
    pub async fn tenant_policies(
        &self,
        tenant_id: &TenantId,
    ) -> Result<StoredPolicies, StoreError> {
        let Some(item) = self.get(policies_key(tenant_id)).await? else {
            return Ok(StoredPolicies::default());
        };
        let read = Reader(&item);
        let policies = serde_json::from_str(&read.s("policies")?)
            .map_err(|error| StoreError::Corrupt(format!("a tenant's policies: {error}")))?;
        Ok(StoredPolicies {
            version: read.n("version")?,
            policies,
        })
    }

    /// Saves the tenant's `policies` as the version after `seen`, with `audit`, in one
    /// transaction: `false`, nothing written, when another change saved a version since.
    pub async fn save_tenant_policies(
        &self,
        tenant_id: &TenantId,
        seen: u64,
        policies: &[TenantPolicy],
        audit: &[AuditEntry],
    ) -> Result<bool, StoreError> {
        let next = seen + 1;
        let text = serde_json::to_string(policies)
            .map_err(|error| StoreError::Rejected(error.to_string()))?;
        let mut item = policies_key(tenant_id);
        item.insert("version".into(), n(next));
        item.insert("policies".into(), s(&text));
        let condition = match seen {
            0 => "attribute_not_exists(pk)",
            _ => "version = :seen",
        };
        let mut put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(condition);
        if seen > 0 {
            put = put.expression_attribute_values(":seen", n(seen));
        }
        let put = put
            .build()
            .map_err(|error| StoreError::Rejected(error.to_string()))?;
        let version = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key(tenant_partition(tenant_id), TENANT_SORT_KEY)))
            .update_expression(format!("SET {VERSION_ATTRIBUTE} = :next"))
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_values(":next", n(next))
            .build()
            .map_err(|error| StoreError::Rejected(error.to_string()))?;
        let mut writes = vec![
            TransactWriteItem::builder().put(put).build(),
            TransactWriteItem::builder().update(version).build(),
        ];
        for entry in audit {
            writes.push(self.put_new(entry.to_item())?);
        }
        if !self.transact_if(writes).await? {
            return Ok(false);
        }
        // This process sees the new version at once.
        self.recent_settings.forget(tenant_id.as_str());
        Ok(true)
    }

    /// The tenant's policies of `version`, compiled, from this process's cache or read now. A
    /// version older than wanted (a change landing since the settings were read) is compiled
    /// as read: it is the newest.
    pub async fn policy_book(
        &self,
        tenant_id: &TenantId,
        version: u64,
    ) -> Result<Arc<PolicyBook>, StoreError> {
        let cache_key = format!("{tenant_id}:{version}");
        if let Some(book) = self.recent_policy_books.get(&cache_key, BOOK_TTL) {
            return Ok(book);
        }
        let stored = self.tenant_policies(tenant_id).await?;
        let book = PolicyBook::new(&stored.policies).map_err(|error| {
            StoreError::Corrupt(format!(
                "the tenant's saved policies do not compile: {error}"
            ))
        })?;
        let book = Arc::new(book);
        self.recent_policy_books
            .put(format!("{tenant_id}:{}", stored.version), book.clone());
        Ok(book)
    }
}
