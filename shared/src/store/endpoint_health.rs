//! A push endpoint's health counters, one small item under its agent (`AGENT#{id}`, `HEALTH`):
//! two UTC days of attempts and the current run of failures (docs/api.md, "Operating
//! deliveries"). Written by the push worker, read by the health route, reset by an admin's
//! enabling and forgotten when the endpoint's URL changes.

use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{Delete, ReturnValue, TransactWriteItem, Update};

use super::item::{build, key, n, s, Item, Reader};
use super::layout::{agent_partition, ENDPOINT_HEALTH_SORT_KEY};
use super::{classify, Store, StoreError};
use crate::domain::endpoint_health::HealthCounters;
use crate::domain::AgentId;

fn health_key(agent_id: &AgentId) -> Item {
    key(agent_partition(agent_id), ENDPOINT_HEALTH_SORT_KEY)
}

/// What one write adds to an endpoint's counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthCount {
    /// The UTC day the attempts were made (`YYYY-MM-DD`).
    pub day: String,
    /// When the write is made.
    pub at: String,
    /// Successes counted since the process's last write.
    pub ok: u64,
    /// The failure this write records, with its error; `None` for successes only.
    pub failure: Option<String>,
    /// Whether the run of failures ends here: a success the process saw after a failure, or
    /// the first it saw at all.
    pub ends_failures: bool,
}

impl HealthCount {
    /// The update's expression beside the day's counters, which the caller sets or adds.
    fn run_of_failures(&self) -> &'static str {
        match (&self.failure, self.ends_failures) {
            (Some(_), _) => {
                "last_error = :error, last_failure_at = :at, \
                 failing_since = if_not_exists(failing_since, :at), \
                 consecutive_failures = if_not_exists(consecutive_failures, :zero) + :one"
            }
            (None, true) => "last_success_at = :at, consecutive_failures = :zero",
            (None, false) => "last_success_at = :at",
        }
    }

    fn removes(&self) -> &'static str {
        match (&self.failure, self.ends_failures) {
            (None, true) => " REMOVE failing_since",
            _ => "",
        }
    }

    /// Binds the values `expression` (the update's and its condition's) names.
    fn values(&self, update: UpdateItemFluentBuilder, expression: &str) -> UpdateItemFluentBuilder {
        let failed = u64::from(self.failure.is_some());
        let values = [
            (":day", s(&self.day)),
            (":at", s(&self.at)),
            (":ok", n(self.ok)),
            (":failed", n(failed)),
            (":zero", n(0)),
            (":one", n(1)),
            (":error", s(self.failure.as_deref().unwrap_or_default())),
        ];
        values
            .into_iter()
            .filter(|(name, _)| expression.contains(name))
            .fold(update, |update, (name, value)| {
                update.expression_attribute_values(name, value)
            })
    }
}

fn counters_of(item: &Item) -> Result<HealthCounters, StoreError> {
    let read = Reader(item);
    Ok(HealthCounters {
        day: read.opt_s("day")?,
        ok: read.n_or("ok", 0)?,
        failed: read.n_or("failed", 0)?,
        prev_day: read.opt_s("prev_day")?,
        prev_ok: read.n_or("prev_ok", 0)?,
        prev_failed: read.n_or("prev_failed", 0)?,
        consecutive_failures: read.n_or("consecutive_failures", 0)?,
        failing_since: read.opt_s("failing_since")?,
        last_error: read.opt_s("last_error")?,
        last_failure_at: read.opt_s("last_failure_at")?,
        last_success_at: read.opt_s("last_success_at")?,
    })
}

impl Store {
    /// The endpoint health of `agent_id` (all zero before its first attempt).
    pub async fn endpoint_health(&self, agent_id: &AgentId) -> Result<HealthCounters, StoreError> {
        match self.get(health_key(agent_id)).await? {
            Some(item) => counters_of(&item),
            None => Ok(HealthCounters::default()),
        }
    }

    /// Adds `count` to the endpoint's counters: to its day's when they are that day's, else
    /// starting the day (the counted day becoming the previous one). The counters after it.
    pub async fn count_endpoint_attempts(
        &self,
        agent_id: &AgentId,
        count: &HealthCount,
    ) -> Result<HealthCounters, StoreError> {
        for _ in 0..2 {
            if let Some(counters) = self.count_same_day(agent_id, count).await? {
                return Ok(counters);
            }
            if let Some(counters) = self.count_new_day(agent_id, count).await? {
                return Ok(counters);
            }
        }
        // A later day is counted already (another process's clock is ahead): nothing to add to.
        Err(StoreError::Rejected(format!(
            "the endpoint health of {agent_id} counts a day after {}",
            count.day
        )))
    }

    async fn count_same_day(
        &self,
        agent_id: &AgentId,
        count: &HealthCount,
    ) -> Result<Option<HealthCounters>, StoreError> {
        let expression = format!(
            "SET {} ADD ok :ok, failed :failed{}",
            count.run_of_failures(),
            count.removes()
        );
        self.count_with(agent_id, count, expression, "#day = :day")
            .await
    }

    async fn count_new_day(
        &self,
        agent_id: &AgentId,
        count: &HealthCount,
    ) -> Result<Option<HealthCounters>, StoreError> {
        let expression = format!(
            "SET prev_day = if_not_exists(#day, :day), prev_ok = if_not_exists(ok, :zero), \
             prev_failed = if_not_exists(failed, :zero), #day = :day, ok = :ok, \
             failed = :failed, {}{}",
            count.run_of_failures(),
            count.removes()
        );
        let condition = "attribute_not_exists(#day) OR #day < :day";
        self.count_with(agent_id, count, expression, condition)
            .await
    }

    /// The counters `expression` under `condition` left, or `None` when the condition failed.
    async fn count_with(
        &self,
        agent_id: &AgentId,
        count: &HealthCount,
        expression: String,
        condition: &str,
    ) -> Result<Option<HealthCounters>, StoreError> {
        let named = format!("{expression} {condition}");
        let update = self
            .health_update(agent_id)
            .update_expression(expression)
            .condition_expression(condition);
        self.counted(count.values(update, &named)).await
    }

    fn health_update(&self, agent_id: &AgentId) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(health_key(agent_id)))
            .expression_attribute_names("#day", "day")
            .return_values(ReturnValue::AllNew)
    }

    /// The counters an update left, or `None` when its condition failed.
    async fn counted(
        &self,
        update: UpdateItemFluentBuilder,
    ) -> Result<Option<HealthCounters>, StoreError> {
        match update.send().await {
            Ok(output) => counters_of(&output.attributes.unwrap_or_default()).map(Some),
            Err(error)
                if error
                    .as_service_error()
                    .is_some_and(|error| error.is_conditional_check_failed_exception()) =>
            {
                Ok(None)
            }
            Err(error) => Err(classify(error)),
        }
    }

    /// The write that ends the endpoint's run of failures, beside an admin's enabling.
    pub(crate) fn end_endpoint_failures(
        &self,
        agent_id: &AgentId,
    ) -> Result<TransactWriteItem, StoreError> {
        let update = build(
            Update::builder()
                .table_name(&self.table)
                .set_key(Some(health_key(agent_id)))
                .update_expression("SET consecutive_failures = :zero REMOVE failing_since")
                .expression_attribute_values(":zero", n(0))
                .build(),
        )?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// The write that forgets the endpoint's health, beside a change of its URL.
    pub(crate) fn forget_endpoint_health(
        &self,
        agent_id: &AgentId,
    ) -> Result<TransactWriteItem, StoreError> {
        let delete = build(
            Delete::builder()
                .table_name(&self.table)
                .set_key(Some(health_key(agent_id)))
                .build(),
        )?;
        Ok(TransactWriteItem::builder().delete(delete).build())
    }
}
