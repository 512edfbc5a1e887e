//! A binding's use against its contract: one small item per binding holding its opens in the
//! current UTC minute and day and its open tasks, moved by one conditional write per open, so
//! concurrent opens never pass a bound. A window that has passed is started again by the first
//! open after it (a second write, once per window).

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};

use super::item::{n, Item, Reader};
use super::layout::binding_use_key;
use super::{classify, committed, Store, StoreError};
use crate::domain::contract::{Contract, QuotaExceeded, Use, UseWindows};

/// How often an open tries again after another open moved the same use first.
const USE_ATTEMPTS: usize = 4;

/// The use an admitted open took: given back if its task is not written after all.
#[derive(Debug, Clone)]
pub struct UseTaken {
    pub binding_id: String,
    pub windows: UseWindows,
    /// Whether it counts among the binding's open tasks (to be taken off when it finishes).
    pub open: bool,
}

impl Store {
    /// Counts one open through `binding_id` under `contract` at `now_ms`, or the bound it would
    /// pass (nothing counted then).
    pub async fn take_binding_use(
        &self,
        binding_id: &str,
        contract: &Contract,
        now_ms: u64,
    ) -> Result<Result<UseTaken, QuotaExceeded>, StoreError> {
        let now = UseWindows::at(now_ms);
        // Most opens find the windows current: one write.
        let mut stored = Some(Use {
            minute: now.minute,
            day: now.day,
            ..Use::default()
        });
        for _ in 0..USE_ATTEMPTS {
            match self
                .add_use(binding_id, contract, now, stored.as_ref())
                .await?
            {
                None => {
                    return Ok(Ok(UseTaken {
                        binding_id: binding_id.to_owned(),
                        windows: now,
                        open: contract.counts_open(),
                    }))
                }
                Some(found) => {
                    let current = found.unwrap_or_default().in_windows(now);
                    if let Some(exceeded) = contract.exceeded_by(&current) {
                        return Ok(Err(exceeded));
                    }
                    stored = found;
                }
            }
        }
        Err(StoreError::Unavailable(format!(
            "binding {binding_id}: its use kept changing under {USE_ATTEMPTS} attempts"
        )))
    }

    /// Adds one open to the use `stored` (`None`: no item yet), within the contract's bounds.
    /// `None` when it did; else the use as it stands (`Some(None)`: no item).
    async fn add_use(
        &self,
        binding_id: &str,
        contract: &Contract,
        now: UseWindows,
        stored: Option<&Use>,
    ) -> Result<Option<Option<Use>>, StoreError> {
        let update = UseUpdate::new(contract, now, stored);
        let sent = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(binding_use_key(binding_id)))
            .update_expression(format!("SET {}", update.set.join(", ")))
            .condition_expression(update.conditions.join(" AND "))
            .set_expression_attribute_values(Some(update.values.into_iter().collect()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let error = match sent {
            Ok(_) => return Ok(None),
            Err(error) => error,
        };
        match error.as_service_error() {
            Some(UpdateItemError::ConditionalCheckFailedException(failed)) => {
                Ok(Some(failed.item().map(use_of).transpose()?))
            }
            _ => Err(classify(error)),
        }
    }

    /// Gives back what an admitted open took, when its task was not written after all. What
    /// cannot be given back errs on the side of refusing, for the rest of its window.
    pub async fn give_back_binding_use(&self, taken: &UseTaken) {
        let request = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(binding_use_key(&taken.binding_id)))
            .update_expression(
                "SET minute_count = minute_count - :one, day_count = day_count - :one, \
                 open_tasks = open_tasks - :open",
            )
            .condition_expression(
                "minute_at = :minute AND day_at = :day AND minute_count > :zero \
                 AND open_tasks >= :open",
            )
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":open", n(u64::from(taken.open)))
            .expression_attribute_values(":minute", n(taken.windows.minute))
            .expression_attribute_values(":day", n(taken.windows.day));
        let given = committed(request.send().await);
        if !matches!(given, Ok(true)) && taken.open {
            let _ = self.binding_task_finished(&taken.binding_id).await;
        }
    }

    /// Takes a finished task off its binding's open tasks.
    pub async fn binding_task_finished(&self, binding_id: &str) -> Result<(), StoreError> {
        let sent = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(binding_use_key(binding_id)))
            .update_expression("SET open_tasks = open_tasks - :one")
            .condition_expression("open_tasks > :zero")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":zero", n(0))
            .send()
            .await;
        committed(sent).map(|_| ())
    }

    /// A binding's use as counted, `None` when nothing was ever counted.
    pub async fn binding_use(&self, binding_id: &str) -> Result<Option<Use>, StoreError> {
        let item = self.get(binding_use_key(binding_id)).await?;
        item.as_ref().map(use_of).transpose()
    }
}

/// The parts of one conditional update that adds an open to a use.
struct UseUpdate {
    set: Vec<String>,
    conditions: Vec<String>,
    values: Vec<(String, AttributeValue)>,
}

impl UseUpdate {
    fn new(contract: &Contract, now: UseWindows, stored: Option<&Use>) -> UseUpdate {
        let mut update = UseUpdate {
            set: Vec::new(),
            conditions: Vec::new(),
            values: vec![(":one".into(), n(1))],
        };
        let windows = [
            (
                "minute",
                "minute_count",
                now.minute,
                stored.map(|use_| use_.minute),
                contract.rate_per_minute,
            ),
            (
                "day",
                "day_count",
                now.day,
                stored.map(|use_| use_.day),
                contract.daily_quota,
            ),
        ];
        for (window, count, current, seen, bound) in windows {
            update.window(window, count, current, seen, bound);
        }
        match (stored, contract.max_concurrent) {
            (None, max) => {
                update.set.push("open_tasks = :open".into());
                update
                    .values
                    .push((":open".into(), n(u64::from(max.is_some()))));
            }
            (Some(_), Some(max)) => {
                update
                    .set
                    .push("open_tasks = if_not_exists(open_tasks, :zero) + :one".into());
                update
                    .conditions
                    .push("(attribute_not_exists(open_tasks) OR open_tasks < :max_open)".into());
                update.values.push((":zero".into(), n(0)));
                update.values.push((":max_open".into(), n(u64::from(max))));
            }
            (Some(_), None) => {}
        }
        if stored.is_none() {
            update.conditions.push("attribute_not_exists(pk)".into());
        }
        update
    }

    /// Counts the open in one window: added to a current one (under its bound), or a window
    /// started again when the stored one has passed.
    fn window(
        &mut self,
        window: &str,
        count: &str,
        current: u64,
        seen: Option<u64>,
        bound: Option<u32>,
    ) {
        self.values.push((format!(":{window}"), n(current)));
        match seen {
            Some(seen) if seen == current => {
                self.set.push(format!("{count} = {count} + :one"));
                self.conditions.push(format!("{window}_at = :{window}"));
                if let Some(bound) = bound {
                    self.conditions.push(format!("{count} < :{window}_bound"));
                    self.values
                        .push((format!(":{window}_bound"), n(u64::from(bound))));
                }
            }
            Some(seen) => {
                self.set
                    .push(format!("{window}_at = :{window}, {count} = :one"));
                self.conditions
                    .push(format!("{window}_at = :{window}_seen"));
                self.values.push((format!(":{window}_seen"), n(seen)));
            }
            None => self
                .set
                .push(format!("{window}_at = :{window}, {count} = :one")),
        }
    }
}

fn use_of(item: &Item) -> Result<Use, StoreError> {
    let read = Reader(item);
    Ok(Use {
        minute: read.n_or("minute_at", 0)?,
        minute_count: read.n_or("minute_count", 0)?,
        day: read.n_or("day_at", 0)?,
        day_count: read.n_or("day_count", 0)?,
        open: read.n_or("open_tasks", 0)?,
    })
}
