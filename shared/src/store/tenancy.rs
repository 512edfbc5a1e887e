//! Tenants, members and the key records that authenticate them and their agents.

use aws_sdk_dynamodb::types::{Delete, TransactWriteItem, Update};

use super::item::{key, s, Item, Reader};
use super::{AuditEntry, Store, StoreError, TransactError};
use crate::domain::clock;

/// What a key hash stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRecord {
    pub tenant_id: String,
    /// `admin`, `member`, `viewer` or `agent`.
    pub principal_kind: String,
    /// The member or agent id.
    pub principal_id: String,
    pub key_id: String,
}

impl Store {
    fn key_item(&self, hash: &str, record: &KeyRecord) -> Item {
        let mut item = key(format!("KEY#{hash}"), "KEY");
        item.insert("tenant_id".into(), s(&record.tenant_id));
        item.insert("principal_kind".into(), s(&record.principal_kind));
        item.insert("principal_id".into(), s(&record.principal_id));
        item.insert("key_id".into(), s(&record.key_id));
        item.insert("created_at".into(), s(clock::now()));
        item
    }

    fn member_item(tenant_id: &str, member_id: &str, name: &str, role: &str) -> Item {
        let mut item = key(format!("MEMBER#{member_id}"), "MEMBER");
        item.insert("tenant_id".into(), s(tenant_id));
        item.insert("name".into(), s(name));
        item.insert("role".into(), s(role));
        item.insert("created_at".into(), s(clock::now()));
        item
    }

    /// Creates a tenant with its first admin, whose key hash is `admin_key_hash`.
    pub async fn create_tenant(
        &self,
        tenant_id: &str,
        name: &str,
        admin_member_id: &str,
        admin_key_hash: &str,
    ) -> Result<(), StoreError> {
        let mut tenant = key(format!("TENANT#{tenant_id}"), "TENANT");
        tenant.insert("name".into(), s(name));
        tenant.insert("created_at".into(), s(clock::now()));
        let record = KeyRecord {
            tenant_id: tenant_id.into(),
            principal_kind: "admin".into(),
            principal_id: admin_member_id.into(),
            key_id: admin_member_id.into(),
        };
        self.transact(vec![
            self.put_new(tenant)?,
            self.put_new(Self::member_item(
                tenant_id,
                admin_member_id,
                "admin",
                "admin",
            ))?,
            self.put_new(self.key_item(admin_key_hash, &record))?,
        ])
        .await
    }

    /// Creates a member with role `admin`, `member` or `viewer`, and its key.
    pub async fn create_member(
        &self,
        tenant_id: &str,
        member_id: &str,
        name: &str,
        role: &str,
        key_hash: &str,
        audit: &AuditEntry,
    ) -> Result<(), StoreError> {
        let record = KeyRecord {
            tenant_id: tenant_id.into(),
            principal_kind: role.into(),
            principal_id: member_id.into(),
            key_id: member_id.into(),
        };
        self.transact(vec![
            self.put_new(Self::member_item(tenant_id, member_id, name, role))?,
            self.put_new(self.key_item(key_hash, &record))?,
            self.put_new(audit.to_item())?,
        ])
        .await
    }

    /// Whether a member exists in the tenant.
    pub async fn member_exists(
        &self,
        tenant_id: &str,
        member_id: &str,
    ) -> Result<bool, StoreError> {
        let output = self
            .get(key(format!("MEMBER#{member_id}"), "MEMBER"))
            .await?;
        Ok(match output.as_ref() {
            Some(item) => Reader(item).s("tenant_id")? == tenant_id,
            None => false,
        })
    }

    /// The principal behind a key hash, if the key exists and is not revoked.
    pub async fn lookup_key(&self, hash: &str) -> Result<Option<KeyRecord>, StoreError> {
        let output = self.get(key(format!("KEY#{hash}"), "KEY")).await?;
        let Some(item) = output.as_ref() else {
            return Ok(None);
        };
        let read = Reader(item);
        Ok(Some(KeyRecord {
            tenant_id: read.s("tenant_id")?,
            principal_kind: read.s("principal_kind")?,
            principal_id: read.s("principal_id")?,
            key_id: read.s("key_id")?,
        }))
    }

    /// Stores a new agent key: the hash record that authenticates, and the agent's own record of
    /// it (by key id) that revocation finds it through.
    pub async fn put_agent_key(
        &self,
        tenant_id: &str,
        agent_id: &str,
        key_id: &str,
        key_hash: &str,
        audit: &AuditEntry,
    ) -> Result<(), StoreError> {
        let record = KeyRecord {
            tenant_id: tenant_id.into(),
            principal_kind: "agent".into(),
            principal_id: agent_id.into(),
            key_id: key_id.into(),
        };
        let mut pointer = key(format!("AGENT#{agent_id}"), format!("KEY#{key_id}"));
        pointer.insert("key_hash".into(), s(key_hash));
        pointer.insert("created_at".into(), s(clock::now()));
        self.transact(vec![
            self.put_new(self.key_item(key_hash, &record))?,
            self.put_new(pointer)?,
            self.put_new(audit.to_item())?,
        ])
        .await
    }

    /// Revokes an agent key: the hash record is deleted (the key stops authenticating) and the
    /// agent's record of it is kept, marked with when it was revoked. Returns the revoked key's
    /// hash, or `None` when the agent has no such live key.
    pub async fn revoke_agent_key(
        &self,
        agent_id: &str,
        key_id: &str,
        audit: &AuditEntry,
    ) -> Result<Option<String>, StoreError> {
        let pointer_key = key(format!("AGENT#{agent_id}"), format!("KEY#{key_id}"));
        let output = self.get(pointer_key.clone()).await?;
        let Some(item) = output.as_ref() else {
            return Ok(None);
        };
        let read = Reader(item);
        if read.opt_s("revoked_at")?.is_some() {
            return Ok(None);
        }
        let hash = read.s("key_hash")?;
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key(format!("KEY#{hash}"), "KEY")))
            .build()
            .map_err(|error| StoreError::Rejected(error.to_string()))?;
        let mark = Update::builder()
            .table_name(&self.table)
            .set_key(Some(pointer_key))
            .update_expression("SET revoked_at = :now")
            .condition_expression("attribute_not_exists(revoked_at)")
            .expression_attribute_values(":now", s(clock::now()))
            .build()
            .map_err(|error| StoreError::Rejected(error.to_string()))?;
        match self
            .transact_checked(vec![
                TransactWriteItem::builder().delete(delete).build(),
                TransactWriteItem::builder().update(mark).build(),
                self.put_new(audit.to_item())?,
            ])
            .await
        {
            Ok(()) => Ok(Some(hash)),
            // A concurrent revoke of the same key got there first.
            Err(TransactError::Canceled(_)) => Ok(None),
            Err(TransactError::Store(error)) => Err(error),
        }
    }
}
