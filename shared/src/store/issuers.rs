//! A tenant's trusted issuers: one item holds them all (a tenant trusts few, each listing few
//! subjects), changed by a conditional write on its version, and one claim item per (issuer,
//! audience) pair names the tenant that trusts it, which is how a token finds its tenant.

use aws_sdk_dynamodb::types::{Delete, Put, TransactWriteItem};

use super::item::{build, key, n, s, Item, Reader};
use super::layout::{tenant_partition, trust_partition, ISSUERS_SORT_KEY, TRUST_SORT_KEY};
use super::{AuditEntry, Store, StoreError};
use crate::domain::issuer::TrustedIssuer;
use crate::domain::TenantId;

/// A tenant's trusted issuers as read, with the version a change must find unchanged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TenantIssuers {
    pub issuers: Vec<TrustedIssuer>,
    /// 0 when the tenant never trusted an issuer.
    pub version: u64,
}

/// The tenant that trusts an (issuer, audience) pair, and the issuer's id there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustClaim {
    pub tenant_id: TenantId,
    pub issuer_id: String,
}

/// What a change of a tenant's issuers does to the pairs it claims.
#[derive(Debug, Clone, Copy)]
pub enum IssuerChange<'a> {
    /// A new issuer: its pair is claimed, unless another tenant holds it.
    Added(&'a TrustedIssuer),
    /// An issuer's subjects changed: the pair stays as it is.
    Changed,
    /// An issuer is gone: its pair is given up.
    Removed(&'a TrustedIssuer),
}

impl Store {
    /// The tenant's trusted issuers.
    pub async fn tenant_issuers(&self, tenant_id: &TenantId) -> Result<TenantIssuers, StoreError> {
        let Some(item) = self
            .get(key(tenant_partition(tenant_id), ISSUERS_SORT_KEY))
            .await?
        else {
            return Ok(TenantIssuers::default());
        };
        let read = Reader(&item);
        let issuers = serde_json::from_str(&read.s("issuers")?)
            .map_err(|error| StoreError::Corrupt(format!("trusted issuers: {error}")))?;
        Ok(TenantIssuers {
            issuers,
            version: read.n("version")?,
        })
    }

    /// The tenant that claimed the pair (`issuer`, `audience`), if one did.
    pub async fn trust_claim(
        &self,
        issuer: &str,
        audience: &str,
    ) -> Result<Option<TrustClaim>, StoreError> {
        let Some(item) = self
            .get(key(trust_partition(issuer, audience), TRUST_SORT_KEY))
            .await?
        else {
            return Ok(None);
        };
        let read = Reader(&item);
        Ok(Some(TrustClaim {
            tenant_id: read.id("tenant_id")?,
            issuer_id: read.s("issuer_id")?,
        }))
    }

    /// Replaces the tenant's issuers `seen` by `next`, claims or gives up the pair `change`
    /// names, and records `audit`, in one transaction. `false`, writing nothing, when the
    /// issuers changed since `seen` was read or another tenant holds the pair being claimed.
    pub async fn save_issuers(
        &self,
        tenant_id: &TenantId,
        seen: &TenantIssuers,
        next: &[TrustedIssuer],
        change: IssuerChange<'_>,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        let mut items = vec![
            self.put_issuers(tenant_id, seen.version, next)?,
            self.put_new(audit.to_item())?,
        ];
        match change {
            IssuerChange::Added(issuer) => {
                items.push(self.put_new(claim_item(tenant_id, issuer))?);
            }
            IssuerChange::Changed => {}
            IssuerChange::Removed(issuer) => items.push(self.give_up_claim(tenant_id, issuer)?),
        }
        self.transact_if(items).await
    }

    fn put_issuers(
        &self,
        tenant_id: &TenantId,
        seen_version: u64,
        next: &[TrustedIssuer],
    ) -> Result<TransactWriteItem, StoreError> {
        let issuers = serde_json::to_string(next)
            .map_err(|error| StoreError::Rejected(format!("trusted issuers: {error}")))?;
        let mut item = key(tenant_partition(tenant_id), ISSUERS_SORT_KEY);
        item.insert("kind".into(), s("issuers"));
        item.insert("issuers".into(), s(issuers));
        item.insert("version".into(), n(seen_version + 1));
        let put = Put::builder().table_name(&self.table).set_item(Some(item));
        let put = if seen_version == 0 {
            put.condition_expression("attribute_not_exists(pk)")
        } else {
            put.condition_expression("version = :seen")
                .expression_attribute_values(":seen", n(seen_version))
        };
        Ok(TransactWriteItem::builder()
            .put(build(put.build())?)
            .build())
    }

    fn give_up_claim(
        &self,
        tenant_id: &TenantId,
        issuer: &TrustedIssuer,
    ) -> Result<TransactWriteItem, StoreError> {
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key(
                trust_partition(&issuer.issuer, &issuer.audience),
                TRUST_SORT_KEY,
            )))
            .condition_expression("tenant_id = :tenant")
            .expression_attribute_values(":tenant", s(tenant_id))
            .build();
        Ok(TransactWriteItem::builder().delete(build(delete)?).build())
    }
}

fn claim_item(tenant_id: &TenantId, issuer: &TrustedIssuer) -> Item {
    let mut item = key(
        trust_partition(&issuer.issuer, &issuer.audience),
        TRUST_SORT_KEY,
    );
    item.insert("kind".into(), s("trust"));
    item.insert("tenant_id".into(), s(tenant_id));
    item.insert("issuer_id".into(), s(&issuer.id));
    item.insert("issuer".into(), s(&issuer.issuer));
    item.insert("audience".into(), s(&issuer.audience));
    item
}
