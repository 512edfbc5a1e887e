//! Refusals on the audit log: one entry a minute per actor, action, target and reason (and
//! policy), counted, so a caller repeating a refused call cannot flood the log.

use super::audit::{AuditEntry, REFUSAL_WINDOW_SECONDS};
use super::item::{n, s};
use super::layout::{audit_partition, audit_sort_key};
use super::{classify, Store, StoreError};
use crate::domain::clock::{self, Timestamp};

/// Namespace of the ids of refusal entries, derived from what was refused and its minute.
const REFUSAL_NAMESPACE: uuid::Uuid =
    uuid::Uuid::from_u128(0x6f1d_2a90_5b3c_4e7d_9a18_c2e4_7b05_f3a1);

/// The start of the minute `at` (a formatted moment) falls in, formatted the same way.
fn refusal_window(at: &str) -> Timestamp {
    match clock::parse(at) {
        Some(moment) => {
            let seconds = moment.unix_timestamp();
            let start = seconds - seconds.rem_euclid(REFUSAL_WINDOW_SECONDS);
            time::OffsetDateTime::from_unix_timestamp(start)
                .map_or_else(|_| at.into(), clock::format)
        }
        None => at.into(),
    }
}

impl Store {
    /// Records a refusal, once per minute for the same actor, action, target and reason: the
    /// first refusal of the minute writes the entry, the rest count on it, so a caller repeating a
    /// refused call grows one entry a minute, not one a request.
    pub async fn record_refusal(&self, entry: &AuditEntry) -> Result<(), StoreError> {
        let window = refusal_window(&entry.at);
        let identity = format!(
            "{}|{}|{}|{}|{}",
            entry.actor_id,
            entry.action,
            entry.target,
            entry.reason.as_deref().unwrap_or_default(),
            window
        );
        // A policy's entries (refused or would_refuse) are counted per policy and outcome;
        // every other refusal keeps the identity it always had.
        let identity = match &entry.policy {
            Some(policy) => format!("{identity}|{}|{policy}", entry.outcome),
            None => identity,
        };
        let id = uuid::Uuid::new_v5(&REFUSAL_NAMESPACE, identity.as_bytes()).to_string();
        let mut first = entry.clone();
        first.id = id.clone();
        first.at = window.clone();
        let item = first.to_item();
        let mut names = Vec::new();
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(audit_partition(&entry.tenant_id, entry.shard)))
            .key("sk", s(audit_sort_key(&window, &id)));
        for (index, (name, value)) in item
            .into_iter()
            .filter(|(name, _)| !matches!(name.as_str(), "pk" | "sk" | "count"))
            .enumerate()
        {
            names.push(format!("#a{index} = if_not_exists(#a{index}, :v{index})"));
            update = update
                .expression_attribute_names(format!("#a{index}"), name)
                .expression_attribute_values(format!(":v{index}"), value);
        }
        update
            .update_expression(format!("SET {} ADD #count :one", names.join(", ")))
            .expression_attribute_names("#count", "count")
            .expression_attribute_values(":one", n(1))
            .send()
            .await
            .map(|_| ())
            .map_err(classify)
    }
}
