//! What cards are made of besides the agent: its tool bindings, the signing keys of cards and
//! deliveries (public half in clear, private seed sealed by KMS), and the call records lineage
//! queries read.

use crate::domain::clock::Timestamp;
use crate::domain::ids::AgentId;
use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, TransactWriteItem, Update};

use super::item::{key, s, Item, Reader};
use super::layout::{
    agent_partition, signing_key_sort_key, signing_partition, tool_sort_key,
    ACTIVE_SIGNING_SORT_KEY, SIGNING_KEY_SORT_PREFIX, TOOL_COUNT_SORT_KEY, TOOL_SORT_PREFIX,
};
use super::{AuditEntry, Store, StoreError};
use crate::domain::card::Tool;
use crate::domain::clock;
use crate::domain::signing::KeyPurpose;

/// A signing key as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct SigningKeyRecord {
    pub kid: String,
    /// Base64url of the 32-byte Ed25519 public key.
    pub public_x: String,
    /// The 32-byte seed, sealed by KMS for this kid and purpose.
    pub sealed_seed: String,
    pub created_at: Timestamp,
    /// When the operator retired it: no longer published, never active again.
    pub retired_at: Option<Timestamp>,
}

fn signing_record(item: &Item) -> Result<SigningKeyRecord, StoreError> {
    let read = Reader(item);
    Ok(SigningKeyRecord {
        kid: read.s("kid")?,
        public_x: read.s("public_x")?,
        sealed_seed: read.s("sealed_seed")?,
        created_at: read.at("created_at")?,
        retired_at: read.opt_at("retired_at")?,
    })
}

impl Store {
    /// The agent's tool count moved from `seen` (the tools a read just listed) to `next`,
    /// only while it is still `seen`, or absent (tools written before the count existed, which
    /// that same read counted). Concurrent grants thus never take an agent past the cap.
    fn tool_count(
        &self,
        agent_id: &AgentId,
        seen: usize,
        next: usize,
    ) -> Result<TransactWriteItem, StoreError> {
        let update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key(agent_partition(agent_id), TOOL_COUNT_SORT_KEY)))
            .update_expression("SET n = :next")
            .condition_expression("attribute_not_exists(n) OR n = :seen")
            .expression_attribute_values(":next", AttributeValue::N(next.to_string()))
            .expression_attribute_values(":seen", AttributeValue::N(seen.to_string()))
            .build()
            .map_err(|error| StoreError::Rejected(error.to_string()))?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// Sets one tool binding: replaces it when `existing` names it among the agent's `existing`
    /// tools, else adds it and counts it. Returns `false`, writing nothing, when the tools
    /// changed since `existing` was read.
    pub async fn put_tool(
        &self,
        agent_id: &AgentId,
        tool: &Tool,
        existing: &[Tool],
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        let mut item = key(agent_partition(agent_id), tool_sort_key(&tool.name));
        item.insert("kind".into(), s("tool"));
        item.insert("name".into(), s(&tool.name));
        item.insert("description".into(), s(&tool.description));
        item.insert(
            "tags".into(),
            AttributeValue::L(tool.tags.iter().map(s).collect()),
        );
        let replacing = existing.iter().any(|known| known.name == tool.name);
        let put = aws_sdk_dynamodb::types::Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(if replacing {
                "attribute_exists(pk)"
            } else {
                "attribute_not_exists(pk)"
            })
            .build()
            .map_err(|error| StoreError::Rejected(error.to_string()))?;
        let mut items = vec![
            TransactWriteItem::builder().put(put).build(),
            self.put_new(audit.to_item())?,
        ];
        if !replacing {
            items.push(self.tool_count(agent_id, existing.len(), existing.len() + 1)?);
        }
        self.transact_if(items).await
    }

    /// Removes tool `tool`, one of the agent's `existing` tools, and counts it out. Returns
    /// `false`, writing nothing, when the tools changed since `existing` was read.
    pub async fn delete_tool(
        &self,
        agent_id: &AgentId,
        tool: &str,
        existing: &[Tool],
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        let delete = aws_sdk_dynamodb::types::Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key(agent_partition(agent_id), tool_sort_key(tool))))
            .condition_expression("attribute_exists(pk)")
            .build()
            .map_err(|error| StoreError::Rejected(error.to_string()))?;
        let seen = existing.len();
        self.transact_if(vec![
            TransactWriteItem::builder().delete(delete).build(),
            self.put_new(audit.to_item())?,
            self.tool_count(agent_id, seen, seen.saturating_sub(1))?,
        ])
        .await
    }

    /// An agent's tool bindings, by name.
    pub async fn list_tools(&self, agent_id: &AgentId) -> Result<Vec<Tool>, StoreError> {
        let items = self
            .query_prefix(agent_partition(agent_id), TOOL_SORT_PREFIX)
            .await?;
        items
            .iter()
            .map(|item| {
                let read = Reader(item);
                let tags = match item.get("tags") {
                    Some(AttributeValue::L(tags)) => tags
                        .iter()
                        .filter_map(|tag| tag.as_s().ok().cloned())
                        .collect(),
                    _ => Vec::new(),
                };
                Ok(Tool {
                    name: read.s("name")?,
                    description: read.s("description")?,
                    tags,
                })
            })
            .collect()
    }

    /// The kid of the active key of `purpose`, if one was made.
    pub async fn active_signing_kid(
        &self,
        purpose: KeyPurpose,
    ) -> Result<Option<String>, StoreError> {
        let output = self
            .get(key(signing_partition(purpose), ACTIVE_SIGNING_SORT_KEY))
            .await?;
        output
            .as_ref()
            .map(|item| Reader(item).s("kid"))
            .transpose()
    }

    /// One key of `purpose`, by kid.
    pub async fn signing_key(
        &self,
        purpose: KeyPurpose,
        kid: &str,
    ) -> Result<Option<SigningKeyRecord>, StoreError> {
        let item = self
            .get(key(signing_partition(purpose), signing_key_sort_key(kid)))
            .await?;
        item.as_ref().map(signing_record).transpose()
    }

    fn signing_item(purpose: KeyPurpose, record: &SigningKeyRecord) -> Item {
        let mut item = key(
            signing_partition(purpose),
            signing_key_sort_key(&record.kid),
        );
        item.insert("kind".into(), s("signing-key"));
        item.insert("kid".into(), s(&record.kid));
        item.insert("public_x".into(), s(&record.public_x));
        item.insert("sealed_seed".into(), s(&record.sealed_seed));
        item.insert("created_at".into(), s(&record.created_at));
        item
    }

    /// Stores a new key of `purpose` and makes it the active one, if the active key is still
    /// `previous` (`None`: no key yet). Returns `false`, writing nothing, when another writer got
    /// there first.
    pub async fn activate_signing_key(
        &self,
        purpose: KeyPurpose,
        record: &SigningKeyRecord,
        previous: Option<&str>,
    ) -> Result<bool, StoreError> {
        let mut active = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key(
                signing_partition(purpose),
                ACTIVE_SIGNING_SORT_KEY,
            )))
            .update_expression("SET kid = :kid, updated_at = :now")
            .expression_attribute_values(":kid", s(&record.kid))
            .expression_attribute_values(":now", s(clock::now()));
        active = match previous {
            None => active.condition_expression("attribute_not_exists(pk)"),
            Some(previous) => active
                .condition_expression("kid = :previous")
                .expression_attribute_values(":previous", s(previous)),
        };
        let active = active
            .build()
            .map_err(|error| StoreError::Rejected(error.to_string()))?;
        self.transact_if(vec![
            self.put_new(Self::signing_item(purpose, record))?,
            TransactWriteItem::builder().update(active).build(),
        ])
        .await
    }

    /// Every key of `purpose` ever made, retired ones included, oldest first.
    pub async fn signing_keys(
        &self,
        purpose: KeyPurpose,
    ) -> Result<Vec<SigningKeyRecord>, StoreError> {
        let items = self
            .query_prefix(
                signing_partition(purpose).to_owned(),
                SIGNING_KEY_SORT_PREFIX,
            )
            .await?;
        let mut records = items
            .iter()
            .map(signing_record)
            .collect::<Result<Vec<_>, StoreError>>()?;
        records.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        Ok(records)
    }

    /// Marks key `kid` of `purpose` retired, only while it exists, is not retired yet and is not
    /// the active key. Returns `false`, writing nothing, when one of those does not hold.
    pub async fn retire_signing_key(
        &self,
        purpose: KeyPurpose,
        kid: &str,
    ) -> Result<bool, StoreError> {
        let retire = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key(
                signing_partition(purpose),
                signing_key_sort_key(kid),
            )))
            .update_expression("SET retired_at = :now")
            .condition_expression("attribute_exists(pk) AND attribute_not_exists(retired_at)")
            .expression_attribute_values(":now", s(clock::now()))
            .build()
            .map_err(|error| StoreError::Rejected(error.to_string()))?;
        let not_active = ConditionCheck::builder()
            .table_name(&self.table)
            .set_key(Some(key(
                signing_partition(purpose),
                ACTIVE_SIGNING_SORT_KEY,
            )))
            .condition_expression("kid <> :kid")
            .expression_attribute_values(":kid", s(kid))
            .build()
            .map_err(|error| StoreError::Rejected(error.to_string()))?;
        self.transact_if(vec![
            TransactWriteItem::builder().update(retire).build(),
            TransactWriteItem::builder()
                .condition_check(not_active)
                .build(),
        ])
        .await
    }
}
