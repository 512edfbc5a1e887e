//! Tenants and their members (the people behind admin, member and viewer keys).

use crate::domain::clock::Timestamp;
use crate::domain::ids::{MemberId, TenantId};
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};

use std::collections::HashMap;

use super::item::{b, key, n, s, Item, Reader};
use super::keys::NewKey;
use super::layout::{
    member_partition, member_sort_key, tenant_partition, MEMBER_SORT_KEY, MEMBER_SORT_PREFIX,
    TENANT_SORT_KEY,
};
use super::{AuditEntry, Store, StoreError};
use crate::domain::call_tree::CallTreeLimits;
use crate::domain::shards::ShardCount;
use crate::domain::{clock, TenantSettings};

/// A member as the tenant's listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberRecord {
    pub member_id: MemberId,
    pub name: String,
    /// `admin`, `member` or `viewer`.
    pub role: String,
    pub created_at: Timestamp,
}

fn member_items(tenant_id: &TenantId, member: &MemberRecord) -> [Item; 2] {
    let mut by_id = key(member_partition(&member.member_id), MEMBER_SORT_KEY);
    by_id.insert("tenant_id".into(), s(tenant_id));
    by_id.insert("member_id".into(), s(&member.member_id));
    by_id.insert("name".into(), s(&member.name));
    by_id.insert("role".into(), s(&member.role));
    by_id.insert("created_at".into(), s(&member.created_at));
    let mut in_tenant = by_id.clone();
    in_tenant.insert("pk".into(), s(tenant_partition(tenant_id)));
    in_tenant.insert("sk".into(), s(member_sort_key(&member.member_id)));
    [by_id, in_tenant]
}

impl TryFrom<&Item> for MemberRecord {
    type Error = StoreError;

    fn try_from(item: &Item) -> Result<MemberRecord, StoreError> {
        let read = Reader(item);
        Ok(MemberRecord {
            member_id: read.id("member_id")?,
            name: read.s("name")?,
            role: read.s("role")?,
            created_at: read.at("created_at")?,
        })
    }
}

impl Store {
    /// Creates a tenant with its first admin and the admin's key, and the audit entry of it.
    /// The tenant counts its live admin keys, so the last one can never be revoked.
    pub async fn create_tenant(
        &self,
        tenant_id: &TenantId,
        name: &str,
        admin: &MemberRecord,
        admin_key: &NewKey,
        audit: &AuditEntry,
    ) -> Result<(), StoreError> {
        let mut tenant = tenant_key(tenant_id);
        tenant.insert("name".into(), s(name));
        tenant.insert("created_at".into(), s(clock::now()));
        tenant.insert("admin_keys".into(), n(1));
        let [by_id, in_tenant] = member_items(tenant_id, admin);
        let mut items = vec![
            self.put_new(tenant)?,
            self.put_new(by_id)?,
            self.put_new(in_tenant)?,
            self.put_new(audit.to_item())?,
        ];
        items.extend(self.new_key_items(admin_key)?);
        self.transact(items).await
    }

    /// Creates a member with role `admin`, `member` or `viewer`, and its key.
    pub async fn create_member(
        &self,
        tenant_id: &TenantId,
        member: &MemberRecord,
        member_key: &NewKey,
        audit: &AuditEntry,
    ) -> Result<(), StoreError> {
        let [by_id, in_tenant] = member_items(tenant_id, member);
        let mut items = vec![
            self.put_new(by_id)?,
            self.put_new(in_tenant)?,
            self.put_new(audit.to_item())?,
        ];
        items.extend(self.new_key_items(member_key)?);
        if member.role == "admin" {
            items.push(self.count_admin_keys(tenant_id, 1)?);
        }
        self.transact(items).await
    }

    /// A transaction item that moves the tenant's count of live admin keys by `change`; a
    /// decrease only while another admin key stays live.
    pub(crate) fn count_admin_keys(
        &self,
        tenant_id: &TenantId,
        change: i64,
    ) -> Result<TransactWriteItem, StoreError> {
        let bound = if change < 0 {
            CountBound::Above(1)
        } else {
            CountBound::None
        };
        self.count_on_tenant(tenant_id, "admin_keys", change, bound)
    }

    /// A transaction item that moves `counter` (an attribute of the tenant's item: `admin_keys`,
    /// `live_agents`, `live_configs`) by `change`, within `bound`.
    pub(crate) fn count_on_tenant(
        &self,
        tenant_id: &TenantId,
        counter: &str,
        change: i64,
        bound: CountBound,
    ) -> Result<TransactWriteItem, StoreError> {
        let update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(tenant_key(tenant_id)))
            .update_expression("ADD #counter :change")
            .expression_attribute_names("#counter", counter)
            .expression_attribute_values(":change", s_number(change));
        let update = match bound {
            CountBound::None => update.condition_expression("attribute_exists(pk)"),
            CountBound::Below(max) => update
                .condition_expression(
                    "attribute_exists(pk) AND (attribute_not_exists(#counter) OR #counter < :bound)",
                )
                .expression_attribute_values(":bound", n(max)),
            CountBound::Above(min) => update
                .condition_expression("#counter > :bound")
                .expression_attribute_values(":bound", n(min)),
        };
        let update = update
            .build()
            .map_err(|error| StoreError::Rejected(error.to_string()))?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// Whether a member exists in the tenant.
    pub async fn member_exists(
        &self,
        tenant_id: &TenantId,
        member_id: &MemberId,
    ) -> Result<bool, StoreError> {
        Ok(self.find_member(tenant_id, member_id).await?.is_some())
    }

    /// The member of this tenant with this id.
    pub async fn find_member(
        &self,
        tenant_id: &TenantId,
        member_id: &MemberId,
    ) -> Result<Option<MemberRecord>, StoreError> {
        let output = self
            .get(key(member_partition(member_id), MEMBER_SORT_KEY))
            .await?;
        match output.as_ref() {
            Some(item) if Reader(item).id::<TenantId>("tenant_id")? == tenant_id => {
                let mut member = item.clone();
                member
                    .entry("member_id".into())
                    .or_insert_with(|| s(member_id));
                MemberRecord::try_from(&member).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// Every member of a tenant.
    pub async fn list_members(
        &self,
        tenant_id: &TenantId,
    ) -> Result<Vec<MemberRecord>, StoreError> {
        let items = self
            .query_prefix(tenant_partition(tenant_id), MEMBER_SORT_PREFIX)
            .await?;
        Ok(super::page::decoded(
            &items,
            "members",
            MemberRecord::try_from,
        ))
    }
}

/// What a move of a tenant's counter must keep (besides the tenant existing).
#[derive(Debug, Clone, Copy)]
pub(crate) enum CountBound {
    /// Nothing more.
    None,
    /// The counter is below this before the move (an increase up to a limit).
    Below(u64),
    /// The counter is above this before the move (a decrease that leaves some).
    Above(u64),
}

/// A signed number attribute.
fn s_number(value: i64) -> aws_sdk_dynamodb::types::AttributeValue {
    aws_sdk_dynamodb::types::AttributeValue::N(value.to_string())
}

/// How long this process trusts a tenant's settings it read, unless it changed them itself,
/// when the store is not told otherwise ([`Store::with_settings_ttl`]).
pub const SETTINGS_TTL: std::time::Duration = std::time::Duration::from_secs(10);

impl Store {
    /// The tenant's settings (the defaults for a tenant that never changed them); `None` for no
    /// such tenant.
    pub async fn tenant_settings(
        &self,
        tenant_id: &TenantId,
    ) -> Result<Option<TenantSettings>, StoreError> {
        let Some(item) = self.get(tenant_key(tenant_id)).await? else {
            return Ok(None);
        };
        Ok(Some(settings_of(&item)?))
    }

    /// The tenant's settings as this process read them less than the settings' TTL ago, or read
    /// now: a change made through this process is seen at once, one made elsewhere within the
    /// TTL. A tenant that is gone has the defaults.
    pub async fn recent_tenant_settings(
        &self,
        tenant_id: &TenantId,
    ) -> Result<TenantSettings, StoreError> {
        if let Some(settings) = self
            .recent_settings
            .get(tenant_id.as_str(), self.settings_ttl)
        {
            return Ok(settings);
        }
        let settings = self.tenant_settings(tenant_id).await?.unwrap_or_default();
        self.recent_settings
            .put(tenant_id.as_str().to_owned(), settings);
        Ok(settings)
    }

    /// Saves the tenant's settings with the audit entries of the change, in one transaction,
    /// if they still stand as `seen` (what the change was made from): `false`, nothing written,
    /// when another change landed since (a settings change, or a binding that started the
    /// counts again), so that no change puts back what another one just set.
    pub async fn save_tenant_settings(
        &self,
        tenant_id: &TenantId,
        seen: &TenantSettings,
        settings: TenantSettings,
        audit: &[AuditEntry],
    ) -> Result<bool, StoreError> {
        let (mut values, condition) = unchanged_since(seen);
        let mut set = vec![
            "word_search = :word_search".to_owned(),
            "refuse_cycles = :refuse_cycles".to_owned(),
        ];
        values.insert(":word_search".to_owned(), b(settings.word_search));
        let limits = settings.call_tree;
        values.insert(":refuse_cycles".to_owned(), b(limits.refuse_cycles));
        let mut remove = Vec::new();
        for (name, limit) in settings_numbers(&settings) {
            match limit {
                Some(limit) => {
                    set.push(format!("{name} = :{name}"));
                    values.insert(format!(":{name}"), n(limit));
                }
                None => remove.push(name),
            }
        }
        let mut expression = format!("SET {}", set.join(", "));
        if !remove.is_empty() {
            expression.push_str(&format!(" REMOVE {}", remove.join(", ")));
        }
        let update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(tenant_key(tenant_id)))
            .update_expression(expression)
            .condition_expression(condition)
            .set_expression_attribute_values(Some(values))
            .build()
            .map_err(|error| StoreError::Rejected(error.to_string()))?;
        let mut writes = vec![TransactWriteItem::builder().update(update).build()];
        for entry in audit {
            writes.push(self.put_new(entry.to_item())?);
        }
        if !self.transact_if(writes).await? {
            return Ok(false);
        }
        self.recent_settings
            .put(tenant_id.as_str().to_owned(), settings);
        Ok(true)
    }
}

/// The numeric settings as stored, each `None` when the item leaves it out.
fn settings_numbers(settings: &TenantSettings) -> [(&'static str, Option<u64>); 4] {
    let limits = &settings.call_tree;
    [
        ("max_call_depth", Some(u64::from(limits.max_call_depth))),
        ("call_tree_counts_since", Some(limits.counts_since)),
        ("max_fan_out", limits.max_fan_out.map(u64::from)),
        ("max_open_in_tree", limits.max_open_in_tree.map(u64::from)),
    ]
}

/// The condition that the tenant's item still holds the settings `seen`, with its values: each
/// setting as seen, or, where `seen` has the default, left out (as a tenant that never changed
/// it has it).
fn unchanged_since(seen: &TenantSettings) -> (HashMap<String, AttributeValue>, String) {
    let defaults = TenantSettings::default();
    let mut values = HashMap::new();
    let mut conditions = vec!["attribute_exists(pk)".to_owned()];
    let flags = [
        ("word_search", seen.word_search, defaults.word_search),
        (
            "refuse_cycles",
            seen.call_tree.refuse_cycles,
            defaults.call_tree.refuse_cycles,
        ),
    ];
    let flags = flags.map(|(name, value, default)| (name, Some(b(value)), value == default));
    let numbers = settings_numbers(seen)
        .into_iter()
        .zip(settings_numbers(&defaults));
    let numbers = numbers.map(|((name, value), (_, default))| {
        (name, value.map(n), value.is_none() || value == default)
    });
    for (name, value, may_be_absent) in flags.into_iter().chain(numbers) {
        let mut condition = match value {
            Some(value) => {
                values.insert(format!(":seen_{name}"), value);
                format!("{name} = :seen_{name}")
            }
            None => format!("attribute_not_exists({name})"),
        };
        if may_be_absent && condition.contains('=') {
            condition = format!("(attribute_not_exists({name}) OR {condition})");
        }
        conditions.push(condition);
    }
    (values, conditions.join(" AND "))
}

/// A tenant's settings as its item holds them; a setting never changed has its default.
fn settings_of(item: &Item) -> Result<TenantSettings, StoreError> {
    let read = Reader(item);
    let defaults = TenantSettings::default();
    let limit = |name: &str| -> Result<Option<u32>, StoreError> {
        Ok(read
            .opt_n(name)?
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX)))
    };
    Ok(TenantSettings {
        word_search: read.bool_or("word_search", defaults.word_search)?,
        call_tree: CallTreeLimits {
            max_call_depth: limit("max_call_depth")?.unwrap_or(defaults.call_tree.max_call_depth),
            refuse_cycles: read.bool_or("refuse_cycles", defaults.call_tree.refuse_cycles)?,
            max_fan_out: limit("max_fan_out")?,
            max_open_in_tree: limit("max_open_in_tree")?,
            counts_since: read.n_or("call_tree_counts_since", 0)?,
            tracked_by_bindings: read.n_or(super::bindings::TRACKING_ATTRIBUTE, 0)? > 0,
        },
        policies_version: read.n_or(super::policies::VERSION_ATTRIBUTE, 0)?,
        log_shards: ShardCount::from_stored(read.n_or(super::log_shards::LOG_SHARDS_ATTRIBUTE, 1)?),
    })
}

fn tenant_key(tenant_id: &TenantId) -> Item {
    key(tenant_partition(tenant_id), TENANT_SORT_KEY)
}
