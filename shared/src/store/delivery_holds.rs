//! The hold on a callee's push deliveries, as the sweeper reads and moves it
//! (`domain::delivery_hold`): its marks read from the agent's item, a trial started and a hold
//! ended each by conditional writes on both of the agent's copies, so that two sweeps at once
//! start one trial, and an end never erases a hold marked since.

use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;

use super::agents::{id_key, name_key};
use super::item::{n, s, Item, Reader};
use super::{committed, Store, StoreError};
use crate::domain::delivery_hold::DeliveryHold;
use crate::domain::ids::{AgentId, TaskId, TenantId};

/// A callee whose hold a sweep may move: its id, its tenant and its name (the key of its second
/// copy, which the open reads).
pub struct HeldCallee<'a> {
    pub tenant_id: &'a TenantId,
    pub agent_id: &'a AgentId,
    pub name: &'a str,
}

impl Store {
    /// Agent `agent_id`'s name and hold marks, read strongly; `None` when the agent is gone.
    pub async fn delivery_hold(
        &self,
        agent_id: &AgentId,
    ) -> Result<Option<(String, DeliveryHold)>, StoreError> {
        let Some(item) = self.get(id_key(agent_id)).await? else {
            return Ok(None);
        };
        let read = Reader(&item);
        let hold = DeliveryHold {
            held_until: read.opt_n("push_held_until")?,
            trial_until: read.opt_n("push_trial_until")?,
            trial_task: read.opt_s("push_trial_task")?,
        };
        Ok(Some((read.s("name")?, hold)))
    }

    /// Starts a trial of `trial_task`'s delivery after the hold that ended at `ended`: both
    /// marks set to `trial_until`, on each copy whose hold is still the one that ended. Whether
    /// the copy by id took it: only the sweep that did sends the trial.
    pub async fn start_delivery_trial(
        &self,
        callee: &HeldCallee<'_>,
        ended: u64,
        trial_until: u64,
        trial_task: &TaskId,
    ) -> Result<bool, StoreError> {
        let [by_id, by_name] = self.both_copies(callee).map(|update| {
            update
                .update_expression(
                    "SET push_held_until = :trial, push_trial_until = :trial, \
                     push_trial_task = :task",
                )
                .condition_expression("id = :id AND push_held_until = :ended")
                .expression_attribute_values(":ended", n(ended))
                .expression_attribute_values(":trial", n(trial_until))
                .expression_attribute_values(":task", s(trial_task))
                .send()
        });
        let (by_id, by_name) = tokio::join!(by_id, by_name);
        committed(by_name)?;
        committed(by_id)
    }

    /// Ends the hold whose trial ended at `trial_until` with no new hold marked since: both marks
    /// removed, on each copy that still holds that trial. Whether the copy by id did.
    pub async fn end_delivery_hold(
        &self,
        callee: &HeldCallee<'_>,
        trial_until: u64,
    ) -> Result<bool, StoreError> {
        let [by_id, by_name] = self.both_copies(callee).map(|update| {
            update
                .update_expression("REMOVE push_held_until, push_trial_until, push_trial_task")
                .condition_expression(
                    "id = :id AND push_held_until = :trial AND push_trial_until = :trial",
                )
                .expression_attribute_values(":trial", n(trial_until))
                .send()
        });
        let (by_id, by_name) = tokio::join!(by_id, by_name);
        committed(by_name)?;
        committed(by_id)
    }

    /// An update of each of the callee's two copies, conditioned on its id by the caller.
    fn both_copies(&self, callee: &HeldCallee<'_>) -> [UpdateItemFluentBuilder; 2] {
        let keys: [Item; 2] = [
            id_key(callee.agent_id),
            name_key(callee.tenant_id, callee.name),
        ];
        keys.map(|key| {
            self.client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key))
                .expression_attribute_values(":id", s(callee.agent_id))
        })
    }
}
