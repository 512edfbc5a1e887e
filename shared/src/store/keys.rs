//! Keys: the record under the key's hash that authenticates it, and its owner's record of it
//! (by key id) through which keys are listed, suspended and revoked.
//!
//! | item | pk | sk |
//! |---|---|---|
//! | key (hash → principal) | `KEY#{sha256}` | `KEY` |
//! | the owner's record of a key | `AGENT#{id}` or `MEMBER#{id}` | `KEY#{key_id}` |

use crate::domain::clock::Timestamp;
use crate::domain::ids::KeyId;
use crate::domain::ids::{AgentId, MemberId, TenantId};
use aws_sdk_dynamodb::types::{AttributeValue, Delete, TransactWriteItem, Update};
use serde_json::{json, Value};

use super::item::{key, opt_s, s, Reader};
use super::layout::{
    agent_partition, key_hash_partition, key_id_of_sort_key, key_sort_key, member_partition,
    KEY_SORT_KEY, KEY_SORT_PREFIX,
};
use super::{classify, AuditEntry, Store, StoreError, TransactError};
use crate::domain::{clock, Agent, AgentStatus};

/// Most live keys one agent may hold: enough to rotate without downtime, few enough that a
/// change of the agent's status updates all of them in one transaction.
pub const MAX_LIVE_KEYS: usize = 20;

/// What a key hash stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRecord {
    pub tenant_id: TenantId,
    /// `admin`, `member`, `viewer` or `agent`.
    pub principal_kind: String,
    /// The member or agent id.
    pub principal_id: String,
    pub key_id: KeyId,
    /// Set while the key's agent is paused: the key authenticates nothing until it is active.
    pub suspended: bool,
    pub last_used_at: Option<Timestamp>,
}

/// Who holds a key: the partition its owner's record of the key lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOwner<'a> {
    Agent(&'a AgentId),
    Member(&'a MemberId),
}

impl KeyOwner<'_> {
    fn partition(self) -> String {
        match self {
            KeyOwner::Agent(id) => agent_partition(id),
            KeyOwner::Member(id) => member_partition(id),
        }
    }
}

/// A key about to be stored: its record and the hash it is found by.
#[derive(Debug, Clone)]
pub struct NewKey {
    pub hash: String,
    pub record: KeyRecord,
}

/// A key as its owner's listing shows it (never the secret, never the hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    pub key_id: KeyId,
    pub hash: String,
    pub created_at: Timestamp,
    pub last_used_at: Option<Timestamp>,
    pub revoked_at: Option<Timestamp>,
}

impl KeyInfo {
    pub fn is_live(&self) -> bool {
        self.revoked_at.is_none()
    }

    pub fn to_json(&self) -> Value {
        json!({
            "key_id": self.key_id,
            "created_at": self.created_at,
            "last_used_at": self.last_used_at,
            "revoked_at": self.revoked_at,
        })
    }
}

/// Why a revocation did not happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RevokeRefusal {
    /// No live key with that id.
    NoSuchKey,
    /// It is the tenant's last live admin key.
    LastAdminKey,
}

fn build<T, E: std::fmt::Display>(built: Result<T, E>) -> Result<T, StoreError> {
    built.map_err(|error| StoreError::Rejected(error.to_string()))
}

impl Store {
    /// The items that store a new key: its hash record and its owner's record of it.
    pub(crate) fn new_key_items(&self, new: &NewKey) -> Result<Vec<TransactWriteItem>, StoreError> {
        let record = &new.record;
        let now = clock::now();
        let mut by_hash = key(key_hash_partition(&new.hash), KEY_SORT_KEY);
        by_hash.insert("tenant_id".into(), s(&record.tenant_id));
        by_hash.insert("principal_kind".into(), s(&record.principal_kind));
        by_hash.insert("principal_id".into(), s(&record.principal_id));
        by_hash.insert("key_id".into(), s(&record.key_id));
        by_hash.insert("created_at".into(), s(&now));
        if record.suspended {
            by_hash.insert("suspended".into(), AttributeValue::Bool(true));
        }
        let partition = match record.principal_kind.as_str() {
            "agent" => KeyOwner::Agent(&AgentId::from(record.principal_id.as_str())).partition(),
            _ => KeyOwner::Member(&MemberId::from(record.principal_id.as_str())).partition(),
        };
        let mut pointer = key(partition, key_sort_key(&record.key_id));
        pointer.insert("key_hash".into(), s(&new.hash));
        pointer.insert("created_at".into(), s(&now));
        Ok(vec![self.put_new(by_hash)?, self.put_new(pointer)?])
    }

    /// The principal behind a key hash, if the key exists and is not revoked.
    pub async fn lookup_key(&self, hash: &str) -> Result<Option<KeyRecord>, StoreError> {
        let output = self
            .get(key(key_hash_partition(hash), KEY_SORT_KEY))
            .await?;
        let Some(item) = output.as_ref() else {
            return Ok(None);
        };
        let read = Reader(item);
        Ok(Some(KeyRecord {
            tenant_id: read.id("tenant_id")?,
            principal_kind: read.s("principal_kind")?,
            principal_id: read.s("principal_id")?,
            key_id: read.id("key_id")?,
            suspended: matches!(item.get("suspended"), Some(AttributeValue::Bool(true))),
            last_used_at: read.opt_at("last_used_at")?,
        }))
    }

    /// Notes that a key was used now (only its `last_used_at`; nothing else is touched, which is
    /// all the read-only functions' policies allow).
    pub async fn note_key_use(&self, hash: &str) -> Result<(), StoreError> {
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(key_hash_partition(hash), KEY_SORT_KEY)))
            .update_expression("SET last_used_at = :now")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_values(":now", s(clock::now()))
            .send()
            .await
            .map(|_| ())
            .or_else(|error| {
                if error
                    .as_service_error()
                    .is_some_and(|service| service.is_conditional_check_failed_exception())
                {
                    Ok(())
                } else {
                    Err(classify(error))
                }
            })
    }

    /// Stores a new agent key with its audit entry.
    ///
    /// The same transaction moves the agent (both copies) on from `seen`, its version as read,
    /// and holds only while it is not retired: a status change that read the agent's keys
    /// before this key existed then fails its own version check instead of leaving this key
    /// live on a retired agent. `false`, nothing written, when the agent changed since it was
    /// read.
    pub async fn put_agent_key(
        &self,
        new: &NewKey,
        audit: &AuditEntry,
        seen: &Agent,
    ) -> Result<bool, StoreError> {
        let mut items = self.new_key_items(new)?;
        items.push(self.put_new(audit.to_item())?);
        items.extend(self.agent_moved_on(seen)?);
        let stored = self.transact_if(items).await;
        self.recent_agents.forget(seen.id.as_str());
        stored
    }

    /// Stores a new member key with its audit entry (and counts it, for an admin).
    pub async fn put_member_key(&self, new: &NewKey, audit: &AuditEntry) -> Result<(), StoreError> {
        let mut items = self.new_key_items(new)?;
        items.push(self.put_new(audit.to_item())?);
        if new.record.principal_kind == "admin" {
            items.push(self.count_admin_keys(&new.record.tenant_id, 1)?);
        }
        self.transact(items).await
    }

    /// Every key an owner ever held, live and revoked, with when each was last used.
    pub async fn owner_keys(&self, owner: KeyOwner<'_>) -> Result<Vec<KeyInfo>, StoreError> {
        let pointers = self
            .query_prefix(owner.partition(), KEY_SORT_PREFIX)
            .await?;
        let keys = pointers.iter().map(|item| {
            let read = Reader(item);
            async move {
                let hash: String = read.s("key_hash")?;
                let revoked_at = read.opt_at("revoked_at")?;
                let last_used_at = match revoked_at {
                    Some(_) => read.opt_at("last_used_at")?,
                    None => match self.lookup_key(&hash).await? {
                        Some(record) => record.last_used_at,
                        None => None,
                    },
                };
                Ok::<_, StoreError>(KeyInfo {
                    key_id: key_id_of_sort_key(&read.s("sk")?),
                    hash,
                    created_at: read.at("created_at")?,
                    last_used_at,
                    revoked_at,
                })
            }
        });
        futures::future::try_join_all(keys).await
    }

    /// Revokes one key of `owner`: its hash record is deleted (it stops authenticating) and the
    /// owner's record of it kept, marked revoked. For an admin's key (`admin_of` names its
    /// tenant) the tenant's count of live admin keys goes down in the same transaction, which
    /// holds only while another stays. Returns the revoked key's hash.
    pub async fn revoke_key(
        &self,
        owner: KeyOwner<'_>,
        key_id: &KeyId,
        audit: &AuditEntry,
        admin_of: Option<&TenantId>,
    ) -> Result<Result<String, RevokeRefusal>, StoreError> {
        let also = admin_of
            .map(|tenant_id| self.count_admin_keys(tenant_id, -1))
            .transpose()?;
        let keys = self.owner_keys(owner).await?;
        let Some(found) = keys
            .into_iter()
            .find(|info| info.key_id == key_id && info.is_live())
        else {
            return Ok(Err(RevokeRefusal::NoSuchKey));
        };
        let mut items = self.revoke_items(owner, &found)?;
        items.push(self.put_new(audit.to_item())?);
        let counted = also.is_some();
        items.extend(also);
        match self.transact_checked(items).await {
            Ok(()) => Ok(Ok(found.hash)),
            Err(TransactError::Canceled(reasons)) => {
                let last_admin = counted
                    && reasons
                        .last()
                        .is_some_and(|reason| reason.condition_failed());
                Ok(Err(if last_admin {
                    RevokeRefusal::LastAdminKey
                } else {
                    // A concurrent revoke of the same key got there first.
                    RevokeRefusal::NoSuchKey
                }))
            }
            Err(TransactError::Store(error)) => Err(error),
        }
    }

    /// The items that revoke one live key: delete its hash record, mark its owner's record.
    pub(crate) fn revoke_items(
        &self,
        owner: KeyOwner<'_>,
        info: &KeyInfo,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let delete = build(
            Delete::builder()
                .table_name(&self.table)
                .set_key(Some(key(key_hash_partition(&info.hash), KEY_SORT_KEY)))
                .build(),
        )?;
        let mark = build(
            Update::builder()
                .table_name(&self.table)
                .set_key(Some(key(owner.partition(), key_sort_key(&info.key_id))))
                .update_expression("SET revoked_at = :now, last_used_at = :last_used")
                .condition_expression("attribute_not_exists(revoked_at)")
                .expression_attribute_values(":now", s(clock::now()))
                .expression_attribute_values(":last_used", opt_s(info.last_used_at.as_deref()))
                .build(),
        )?;
        Ok(vec![
            TransactWriteItem::builder().delete(delete).build(),
            TransactWriteItem::builder().update(mark).build(),
        ])
    }

    /// The items that suspend (or restore) a live key while its agent is paused (or active
    /// again); the key must still exist.
    pub(crate) fn suspend_items(
        &self,
        info: &KeyInfo,
        suspended: bool,
    ) -> Result<TransactWriteItem, StoreError> {
        let update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key(key_hash_partition(&info.hash), KEY_SORT_KEY)))
            .condition_expression("attribute_exists(pk)");
        let update = if suspended {
            update
                .update_expression("SET suspended = :true")
                .expression_attribute_values(":true", AttributeValue::Bool(true))
        } else {
            update.update_expression("REMOVE suspended")
        };
        Ok(TransactWriteItem::builder()
            .update(build(update.build())?)
            .build())
    }
}

impl Store {
    /// Updates an agent like [`Store::update_agent`] and, when its status changed to
    /// `new_status`, its live keys in the same transaction: paused suspends them, active again
    /// restores them, retired revokes them. Returns the hashes of the keys it touched, or `None`
    /// (nothing written) when another write changed the agent first.
    pub async fn update_agent_and_keys(
        &self,
        agent: &Agent,
        audit: &AuditEntry,
        new_status: Option<AgentStatus>,
    ) -> Result<Option<Vec<String>>, StoreError> {
        let Some(status) = new_status else {
            return Ok(self.update_agent(agent, audit).await?.then(Vec::new));
        };
        let owner = KeyOwner::Agent(&agent.id);
        let live: Vec<KeyInfo> = self
            .owner_keys(owner)
            .await?
            .into_iter()
            .filter(KeyInfo::is_live)
            .collect();
        let mut writes = Vec::new();
        for info in &live {
            match status {
                AgentStatus::Retired => writes.extend(self.revoke_items(owner, info)?),
                status => writes.push(self.suspend_items(info, status == AgentStatus::Paused)?),
            }
        }
        if status == AgentStatus::Retired {
            // A retired agent leaves room for another under the tenant's limit.
            writes.push(self.uncount_agent(agent)?);
        }
        let updated = self.update_agent_with(agent, audit, writes).await?;
        Ok(updated.then(|| live.into_iter().map(|info| info.hash).collect()))
    }
}

/// Whether a key last used at `last_used_at` should have its use noted again now: never used, or
/// not within the last hour (so a busy key costs one write an hour, not one a request).
pub fn use_is_stale(last_used_at: Option<&str>) -> bool {
    last_used_at.is_none_or(|at| at < clock::ago(3600).as_str())
}
