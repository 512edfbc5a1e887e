//! A task's push notification configs: one item each in the task's partition
//! (`TASK#{task}` / `NOTIFY#{config}`), counted on the task item (`notify_configs`) by the same
//! transaction that adds or removes one, so a write of the task knows at once whether anyone
//! listens. A config's `delivered` moves only forward, by conditional writes, so a retry never
//! sends an event again and two workers never move it back.

use aws_sdk_dynamodb::types::{Delete, Put, TransactWriteItem, Update};

use super::item::build;
use super::item::{key, n, s, Item, Reader};
use super::layout::{
    due_sort_key, notify_config_sort_key, notify_outbox_shard_partition, task_partition,
    task_shard, NOTIFY_CONFIG_SORT_PREFIX,
};
use super::task_item::{task_key, OUTBOX_GRACE_SECONDS};
use super::tenancy::CountBound;
use super::{classify, AuditEntry, Store, StoreError};
use crate::domain::notify::{NotifyConfig, MAX_CONFIGS_PER_TASK};
use crate::domain::{clock, Task, TaskId, TenantId};

pub(crate) fn config_key(task_id: &TaskId, config_id: &str) -> Item {
    key(task_partition(task_id), notify_config_sort_key(config_id))
}

/// Why a new config was not added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotifyRefusal {
    /// The task holds [`MAX_CONFIGS_PER_TASK`] already.
    Full,
    /// The task changed since it was read (or is gone): read it again.
    TaskMoved,
    /// A config of this id exists: replace it instead.
    Exists,
    /// The tenant holds its most configs with events still to send.
    TenantFull,
}

#[derive(Clone, Copy)]
enum Slot {
    Task,
    Config,
    Tenant,
    Audit,
}

/// The tenant's count of configs with events to send (`store/tenancy.rs`).
pub(super) const LIVE_CONFIGS: &str = "live_configs";

fn to_item(config: &NotifyConfig) -> Item {
    let mut item = config_key(&config.task_id, &config.id);
    item.insert("kind".into(), s("notify_config"));
    item.insert("tenant_id".into(), s(&config.tenant_id));
    item.insert("task_id".into(), s(&config.task_id));
    item.insert("config_id".into(), s(&config.id));
    item.insert("url".into(), s(&config.url));
    // The token only sealed: a config in the clear is never stored.
    for (name, value) in [
        ("sealed_token", &config.sealed_token),
        ("scheme", &config.scheme),
        ("sealed_credentials", &config.sealed_credentials),
    ] {
        if let Some(value) = value {
            item.insert(name.into(), s(value));
        }
    }
    item.insert("created_at".into(), s(&config.created_at));
    item.insert("delivered".into(), n(config.delivered));
    // Where it started: a replay sends only an event it received (`rewind_notify`).
    item.insert("start".into(), n(config.delivered));
    item.insert("attempts".into(), n(config.attempts));
    if let Some(at) = config.expires_at {
        item.insert("expires_at".into(), n(at));
    }
    // On the configs' outbox until the task's last event is delivered: a notification whose
    // enqueue was lost is sent again by the sweeper (see `sweeper::sweep_outbox`).
    item.insert(
        "gsi1pk".into(),
        s(notify_outbox_shard_partition(task_shard(&config.task_id))),
    );
    item.insert(
        "gsi1sk".into(),
        s(due_sort_key(
            &clock::after(OUTBOX_GRACE_SECONDS),
            &config.task_id,
        )),
    );
    item
}

impl TryFrom<&Item> for NotifyConfig {
    type Error = StoreError;

    fn try_from(item: &Item) -> Result<NotifyConfig, StoreError> {
        let read = Reader(item);
        let number = |name: &str| match item.get(name) {
            Some(_) => read.n(name),
            None => Ok(0),
        };
        Ok(NotifyConfig {
            tenant_id: read.id("tenant_id")?,
            task_id: read.id("task_id")?,
            id: read.s("config_id")?,
            url: read.s("url")?,
            token: read.opt_s("token")?,
            sealed_token: read.opt_s("sealed_token")?,
            scheme: read.opt_s("scheme")?,
            sealed_credentials: read.opt_s("sealed_credentials")?,
            created_at: read.at("created_at")?,
            delivered: number("delivered")?,
            attempts: number("attempts")?,
            expires_at: match item.get("expires_at") {
                Some(_) => Some(read.n("expires_at")?),
                None => None,
            },
        })
    }
}

impl Store {
    /// Adds a config to `seen` (the task as read, whose event count the config starts at): one
    /// transaction that counts it on the task, only while the task has room and has not changed
    /// since it was read, counts it on the tenant, only while the tenant holds fewer than
    /// `tenant_max` configs with events to send, and puts it, only if its id is new on the task.
    pub async fn add_notify_config(
        &self,
        seen: &Task,
        config: &NotifyConfig,
        tenant_max: u64,
        audit: &AuditEntry,
    ) -> Result<Result<(), NotifyRefusal>, StoreError> {
        let unchanged = if seen.event_count() == 0 {
            "(attribute_not_exists(events) OR size(events) = :count)"
        } else {
            "size(events) = :count"
        };
        let count = Update::builder()
            .table_name(self.table())
            .set_key(Some(task_key(&seen.id)))
            .update_expression("SET notify_configs = if_not_exists(notify_configs, :zero) + :one")
            .condition_expression(format!(
                "attribute_exists(pk) AND {unchanged} \
                 AND (attribute_not_exists(notify_configs) OR notify_configs < :max)"
            ))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":count", n(seen.event_count()))
            .expression_attribute_values(":max", n(MAX_CONFIGS_PER_TASK))
            .return_values_on_condition_check_failure(
                aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure::AllOld,
            );
        let put = Put::builder()
            .table_name(self.table())
            .set_item(Some(to_item(config)))
            .condition_expression("attribute_not_exists(pk)");
        // The config first: a taken id is reported as such even when the task is full.
        let items = vec![
            (
                Slot::Config,
                TransactWriteItem::builder()
                    .put(build(put.build())?)
                    .build(),
            ),
            (
                Slot::Task,
                TransactWriteItem::builder()
                    .update(build(count.build())?)
                    .build(),
            ),
            (
                Slot::Tenant,
                self.count_on_tenant(
                    &config.tenant_id,
                    LIVE_CONFIGS,
                    1,
                    CountBound::Below(tenant_max),
                )?,
            ),
            (Slot::Audit, self.put_new(audit.to_item())?),
        ];
        Ok(match self.transact_slots(items).await? {
            Ok(()) => Ok(()),
            Err(failed) => Err(match failed.slot {
                Slot::Config => NotifyRefusal::Exists,
                Slot::Tenant => NotifyRefusal::TenantFull,
                // A new entry's id is new: read again and tried again, as for a moved task.
                Slot::Audit => NotifyRefusal::TaskMoved,
                Slot::Task => match failed.item.as_ref().map(Task::try_from) {
                    Some(Ok(task))
                        if task.event_count() == seen.event_count()
                            && task.notify_configs >= MAX_CONFIGS_PER_TASK =>
                    {
                        NotifyRefusal::Full
                    }
                    _ => NotifyRefusal::TaskMoved,
                },
            }),
        })
    }

    /// Replaces an existing config's destination and credentials, keeping how far its delivery
    /// got, with `audit` in the same transaction; `false` when it no longer exists.
    pub async fn replace_notify_config(
        &self,
        config: &NotifyConfig,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        let mut item = to_item(config);
        item.remove("delivered");
        item.remove("attempts");
        let mut sets = Vec::new();
        let mut removes = Vec::new();
        let mut update = Update::builder()
            .table_name(self.table())
            .set_key(Some(config_key(&config.task_id, &config.id)))
            .condition_expression("attribute_exists(pk)");
        for name in ["url", "sealed_token", "scheme", "sealed_credentials"] {
            // Through names, as some of them are reserved words.
            update = update.expression_attribute_names(format!("#{name}"), name);
            match item.remove(name) {
                Some(value) => {
                    sets.push(format!("#{name} = :{name}"));
                    update = update.expression_attribute_values(format!(":{name}"), value);
                }
                None => removes.push(format!("#{name}")),
            }
        }
        let mut expression = format!("SET {}", sets.join(", "));
        if !removes.is_empty() {
            expression.push_str(&format!(" REMOVE {}", removes.join(", ")));
        }
        let update = build(update.update_expression(expression).build())?;
        let replaced = TransactWriteItem::builder().update(update).build();
        self.transact_if(vec![replaced, self.put_new(audit.to_item())?])
            .await
    }

    /// One config of a task.
    pub async fn get_notify_config(
        &self,
        task_id: &TaskId,
        config_id: &str,
    ) -> Result<Option<NotifyConfig>, StoreError> {
        let item = self.get(config_key(task_id, config_id)).await?;
        item.as_ref().map(NotifyConfig::try_from).transpose()
    }

    /// Every config of a task, by id.
    pub async fn list_notify_configs(
        &self,
        task_id: &TaskId,
    ) -> Result<Vec<NotifyConfig>, StoreError> {
        let items = self
            .query_prefix(task_partition(task_id), NOTIFY_CONFIG_SORT_PREFIX)
            .await?;
        let now = clock::unix_now();
        Ok(
            super::page::decoded(&items, "notification configs", NotifyConfig::try_from)
                .into_iter()
                .filter(|config| config.expires_at.is_none_or(|at| at > now))
                .collect(),
        )
    }

    /// Deletes a config and uncounts it on its task, and on its tenant while it still had events
    /// to send: `false` when there was none.
    pub async fn delete_notify_config(
        &self,
        tenant_id: &TenantId,
        task_id: &TaskId,
        config_id: &str,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        let delete = |live: bool| -> Result<TransactWriteItem, StoreError> {
            let condition = if live {
                "attribute_exists(gsi1pk)"
            } else {
                "attribute_exists(pk) AND attribute_not_exists(gsi1pk)"
            };
            let delete = Delete::builder()
                .table_name(self.table())
                .set_key(Some(config_key(task_id, config_id)))
                .condition_expression(condition);
            Ok(TransactWriteItem::builder()
                .delete(build(delete.build())?)
                .build())
        };
        let uncount = || -> Result<TransactWriteItem, StoreError> {
            let update = Update::builder()
                .table_name(self.table())
                .set_key(Some(task_key(task_id)))
                .update_expression("SET notify_configs = notify_configs - :one")
                .condition_expression("notify_configs > :zero")
                .expression_attribute_values(":zero", n(0))
                .expression_attribute_values(":one", n(1));
            Ok(TransactWriteItem::builder()
                .update(build(update.build())?)
                .build())
        };
        let audited = || self.put_new(audit.to_item());
        let live = vec![
            delete(true)?,
            uncount()?,
            self.count_on_tenant(tenant_id, LIVE_CONFIGS, -1, CountBound::None)?,
            audited()?,
        ];
        if self.transact_if(live).await? {
            return Ok(true);
        }
        // Off the outbox already (every event sent): the tenant counted it off then.
        self.transact_if(vec![delete(false)?, uncount()?, audited()?])
            .await
    }
}

pub(super) type UpdateResult = Result<
    aws_sdk_dynamodb::operation::update_item::UpdateItemOutput,
    aws_sdk_dynamodb::error::SdkError<
        aws_sdk_dynamodb::operation::update_item::UpdateItemError,
        aws_smithy_runtime_api::http::Response,
    >,
>;

pub(super) fn is_condition_failure(
    error: &aws_sdk_dynamodb::error::SdkError<
        aws_sdk_dynamodb::operation::update_item::UpdateItemError,
        aws_smithy_runtime_api::http::Response,
    >,
) -> bool {
    matches!(
        error.as_service_error(),
        Some(aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(_))
    )
}

/// A conditional update's outcome: `true` applied, `false` its condition failed.
pub(super) fn conditional(result: UpdateResult) -> Result<bool, StoreError> {
    match result {
        Ok(_) => Ok(true),
        Err(error) if is_condition_failure(&error) => Ok(false),
        Err(error) => Err(classify(error)),
    }
}
