//! Sending a task's push notifications: a config's lease, its attempts, and its progress
//! through the task's events (`delivered`, which moves only forward).

use aws_sdk_dynamodb::types::{TransactWriteItem, Update};

use super::item::{build, n, s, Reader};
use super::layout::{due_sort_key, notify_outbox_shard_partition, task_shard};
use super::notify::{conditional, config_key, is_condition_failure, LIVE_CONFIGS};
use super::task_item::OUTBOX_GRACE_SECONDS;
use super::tenancy::CountBound;
use super::{classify, Store, StoreError};
use crate::domain::notify::NotifyConfig;
use crate::domain::{clock, TaskId};

impl Store {
    /// Records that event `number` was delivered (or given up on): only forward, only while the
    /// config exists. `false` when it is gone or already past `number`. A config that delivers is
    /// live again: its outbox entry falls due after the grace time, and its idle count restarts.
    pub async fn advance_notify(
        &self,
        config: &NotifyConfig,
        number: u64,
    ) -> Result<bool, StoreError> {
        let update = self
            .client()
            .update_item()
            .table_name(self.table())
            .set_key(Some(config_key(&config.task_id, &config.id)))
            .update_expression(
                "SET delivered = :n, attempts = :zero, gsi1sk = :due REMOVE idle_rounds",
            )
            .condition_expression("attribute_exists(pk) AND delivered < :n")
            .expression_attribute_values(":n", n(number))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(
                ":due",
                s(due_sort_key(
                    &clock::after(OUTBOX_GRACE_SECONDS),
                    &config.task_id,
                )),
            );
        conditional(update.send().await)
    }

    /// Makes every config of `task_id` still on the outbox due now: the enqueue after a change
    /// failed, and the next sweep must send what it did not.
    pub async fn notify_configs_due_now(&self, task_id: &TaskId) -> Result<(), StoreError> {
        let configs = self.list_notify_configs(task_id).await?;
        let due = s(due_sort_key(&clock::now(), task_id));
        let updates = configs.iter().map(|config| {
            self.client()
                .update_item()
                .table_name(self.table())
                .set_key(Some(config_key(task_id, &config.id)))
                .update_expression("SET gsi1sk = :due")
                .condition_expression("attribute_exists(gsi1pk)")
                .expression_attribute_values(":due", due.clone())
                .send()
        });
        for result in futures::future::join_all(updates).await {
            conditional(result)?;
        }
        Ok(())
    }

    /// Counts one failed attempt at the event after `delivered` and gives the lease held with
    /// `token` back, in one write (a failed POST ends its sender's round): the attempts spent on
    /// the event now, or `None` when the config moved on, is gone, or is no longer this
    /// sender's (its lease ran out and another took it: that one counts its own).
    pub async fn count_notify_attempt(
        &self,
        config: &NotifyConfig,
        delivered: u64,
        token: &str,
    ) -> Result<Option<u64>, StoreError> {
        let output = self
            .client()
            .update_item()
            .table_name(self.table())
            .set_key(Some(config_key(&config.task_id, &config.id)))
            .update_expression(
                "SET attempts = if_not_exists(attempts, :zero) + :one \
                 REMOVE lease_token, lease_until",
            )
            .condition_expression(
                "attribute_exists(pk) AND delivered = :delivered AND lease_token = :token",
            )
            .expression_attribute_values(":delivered", n(delivered))
            .expression_attribute_values(":token", s(token))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":one", n(1))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::UpdatedNew)
            .send()
            .await;
        match output {
            Ok(output) => {
                let attributes = output.attributes.unwrap_or_default();
                Ok(Some(Reader(&attributes).n("attempts")?))
            }
            Err(error) if is_condition_failure(&error) => Ok(None),
            Err(error) => Err(classify(error)),
        }
    }

    /// Takes a config's delivery lease (one sender at a time keeps its events in order): the
    /// config as it is now that this sender holds it (its `delivered` is what the previous
    /// holder left, never a copy read before the lease), or `None` while another sender holds a
    /// live lease, or when the config is gone.
    pub async fn lease_notify(
        &self,
        config: &NotifyConfig,
        token: &str,
        seconds: u64,
    ) -> Result<Option<NotifyConfig>, StoreError> {
        let now = clock::now();
        let leased = self
            .client()
            .update_item()
            .table_name(self.table())
            .set_key(Some(config_key(&config.task_id, &config.id)))
            .update_expression("SET lease_token = :token, lease_until = :until")
            .condition_expression(
                "attribute_exists(pk) AND (attribute_not_exists(lease_until) OR lease_until < :now)",
            )
            .expression_attribute_values(":token", s(token))
            .expression_attribute_values(":until", s(clock::after(seconds)))
            .expression_attribute_values(":now", s(now))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew)
            .send()
            .await;
        match leased {
            Ok(output) => match output.attributes() {
                Some(item) => Ok(Some(NotifyConfig::try_from(item)?)),
                None => Err(StoreError::Corrupt("a lease returned no config".into())),
            },
            Err(error) if is_condition_failure(&error) => Ok(None),
            Err(error) => Err(classify(error)),
        }
    }

    /// Takes a config off the outbox index, and off its tenant's count: its task is finished and
    /// every event delivered. Once only: a config off the outbox already is left as it is.
    pub async fn retire_notify_entry(&self, config: &NotifyConfig) -> Result<(), StoreError> {
        let retire = Update::builder()
            .table_name(self.table())
            .set_key(Some(config_key(&config.task_id, &config.id)))
            .update_expression("REMOVE gsi1pk, gsi1sk")
            .condition_expression("attribute_exists(gsi1pk)");
        self.transact_if(vec![
            TransactWriteItem::builder()
                .update(build(retire.build())?)
                .build(),
            self.count_on_tenant(&config.tenant_id, LIVE_CONFIGS, -1, CountBound::None)?,
        ])
        .await
        .map(|_| ())
    }

    /// Gives a lease back, if still held with `token`.
    pub async fn release_notify(
        &self,
        config: &NotifyConfig,
        token: &str,
    ) -> Result<(), StoreError> {
        let update = self
            .client()
            .update_item()
            .table_name(self.table())
            .set_key(Some(config_key(&config.task_id, &config.id)))
            .update_expression("REMOVE lease_token, lease_until")
            .condition_expression("lease_token = :token")
            .expression_attribute_values(":token", s(token));
        conditional(update.send().await).map(|_| ())
    }
}

/// Why a config's latest notification was not set to be sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewindRefusal {
    /// The task has no config of that id.
    Gone,
    /// It has received no event yet.
    NothingSent,
    /// A send is under way, or it changed meanwhile: again in a moment.
    Busy,
}

impl Store {
    /// Sets config `config_id` of `task_id` to receive its latest event again (`delivered` one
    /// back, its attempts renewed, due on the configs' outbox now), while no sender holds a live
    /// lease: the number of the event it will receive. A config taken off the outbox (its task
    /// finished and every event delivered) goes back on it and on its tenant's count, in one
    /// transaction, so retiring it again later counts right.
    pub async fn rewind_notify(
        &self,
        task_id: &TaskId,
        config_id: &str,
    ) -> Result<Result<u64, RewindRefusal>, StoreError> {
        let Some(item) = self.get(config_key(task_id, config_id)).await? else {
            return Ok(Err(RewindRefusal::Gone));
        };
        let config = NotifyConfig::try_from(&item)?;
        // A config stored before configs kept their start counts from the first event.
        if config.delivered <= Reader(&item).n_or("start", 0)? {
            return Ok(Err(RewindRefusal::NothingSent));
        }
        let on_outbox = item.contains_key("gsi1pk");
        let now = clock::now();
        let rewind = Update::builder()
            .table_name(self.table())
            .set_key(Some(config_key(task_id, config_id)))
            .update_expression(
                "SET delivered = :back, attempts = :zero, gsi1pk = :outbox, gsi1sk = :due \
                 REMOVE idle_rounds",
            )
            .condition_expression(format!(
                "delivered = :delivered AND (attribute_not_exists(lease_until) OR lease_until < :now) \
                 AND {}",
                if on_outbox {
                    "attribute_exists(gsi1pk)"
                } else {
                    "attribute_not_exists(gsi1pk)"
                }
            ))
            .expression_attribute_values(":back", n(config.delivered - 1))
            .expression_attribute_values(":delivered", n(config.delivered))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":now", s(&now))
            .expression_attribute_values(
                ":outbox",
                s(notify_outbox_shard_partition(task_shard(task_id))),
            )
            .expression_attribute_values(":due", s(due_sort_key(&now, task_id)));
        let mut writes = vec![TransactWriteItem::builder()
            .update(build(rewind.build())?)
            .build()];
        if !on_outbox {
            writes.push(self.count_on_tenant(
                &config.tenant_id,
                LIVE_CONFIGS,
                1,
                CountBound::None,
            )?);
        }
        if self.transact_if(writes).await? {
            Ok(Ok(config.delivered))
        } else {
            Ok(Err(RewindRefusal::Busy))
        }
    }
}
