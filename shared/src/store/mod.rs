//! The DynamoDB adapter: one table, items keyed by `pk`/`sk`, two sparse global indexes and the
//! search indexes.
//!
//! | item | pk | sk | gsi1 (pk / sk) | gsi2 (pk / sk) |
//! |---|---|---|---|---|
//! | tenant | `TENANT#{id}` | `TENANT` | | |
//! | member | `MEMBER#{id}` | `MEMBER` | | |
//! | member, in its tenant (same attributes) | `TENANT#{tenant}` | `MEMBER#{id}` | | |
//! | key (hash → principal) | `KEY#{sha256}` | `KEY` | | |
//! | agent, by id | `AGENT#{id}` | `AGENT` | | |
//! | agent, by name (same attributes) | `TENANT#{tenant}` | `AGENT#{name}` | | |
//! | the owner's record of a key | `AGENT#{id}` or `MEMBER#{id}` | `KEY#{key_id}` | | |
//! | binding | `BINDING#{id}` | `BINDING` | `BOUT#{caller}` / callee | `BIN#{callee}` / caller |
//! | task | `TASK#{id}` | `TASK` | `QUEUE#{callee}` / created#id, while claimable | `DEADLINE#{shard}` / deadline#id, while working |
//! | push notification config of a task (`store/notify.rs`) | `TASK#{id}` | `NOTIFY#{config}` | `OUTBOX#{shard}` / due#task, until its task is finished and delivered | |
//! | conversation | `CONTEXT#{id}` | `CONTEXT` | | |
//! | call (lineage) | `CALL#{id}` | `CALL` | `ROOT#{tenant}#{root}` / at#id (older calls: `ROOT#{root}`) | |
//! | audit entry | `AUDIT#{tenant}`, or `AUDIT#{tenant}#{shard}` once the tenant's logs are spread (`domain/shards.rs`) | `{at}#{id}` | | |
//! | long-poll slot (`store/polls.rs`) | `POLLS#{agent}` | `SLOT#{n}` | | |
//! | word posting (`store/words.rs`) | `WORDS#{tenant}#{word}` | `{created}#{task}` | | |
//!
//! Every one of these keys is built, and read back, by `store/layout.rs`, whose table lists
//! every kind of item.
//!
//! Task search reads three more indexes, keyed by attributes the task items have anyway (the
//! task's agents, conversation and creation), listed in `store/search.rs`; A2A `ListTasks` reads
//! the caller's side of them (a caller's tasks on one callee); the sweeper reads `words_due`.
//!
//! The agent lives under two keys with the same attributes, written together in one transaction,
//! so that a route naming an agent by id or by name reads it with one `GetItem`.

mod agents;
mod answers;
mod audit;
mod audit_log;
mod binding_use;
mod bindings;
mod call_tree;
mod calls;
mod cards;
mod claim;
mod delivery_holds;
mod endpoint_health;
mod issuers;
pub mod item;
mod keys;
mod layout;
mod log_shards;
mod notify;
mod notify_sends;
mod open;
mod page;
mod policies;
mod polls;
mod push;
mod redrive;
mod refusals;
#[cfg(feature = "local-stack")]
pub mod schema;
pub mod search;
mod sessions;
mod task_item;
mod tasks;
mod tenancy;
mod tree_counts;
mod words;

pub use agents::AgentRefusal;
pub use answers::InputRefusal;
pub use audit::AuditEntry;
pub use audit_log::{AuditPage, AuditSearch, AUDIT_READ_UNITS};
pub use binding_use::UseTaken;
pub use bindings::{BindingWrite, TrackingChange};
pub use call_tree::ParentCall;
pub use cards::SigningKeyRecord;
pub use claim::ClaimOutcome;
pub use delivery_holds::HeldCallee;
pub use endpoint_health::HealthCount;
pub use issuers::{IssuerChange, TenantIssuers, TrustClaim};
pub use keys::{use_is_stale, KeyInfo, KeyOwner, KeyRecord, NewKey, RevokeRefusal, MAX_LIVE_KEYS};
pub use notify::NotifyRefusal;
pub use notify_sends::RewindRefusal;
pub use open::{ContextJoin, OpenRefusal, OpenTask};
pub use policies::StoredPolicies;
pub use polls::{PollSlot, SlotPool, MAX_POLLS_PER_AGENT};
pub use push::{Attempt, OutboxEntry};
pub use sessions::SessionRecord;
pub use task_item::DEADLINE_SHARDS;
pub use tasks::{OverdueEntry, PairCursor, TaskTransition};
pub use tenancy::MemberRecord;
pub use tree_counts::{CountLimit, Counter};
pub use words::WordsLane;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{Put, TransactWriteItem};
use aws_sdk_dynamodb::Client;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;

use crate::domain::TenantSettings;
use item::Item;

/// The default of `FORGEBENCH_INDEX_UNITS`: every word a task keeps
/// ([`crate::domain::words::MAX_TASK_WORDS`]) at one unit a posting.
pub const DEFAULT_INDEX_UNITS: u64 = crate::domain::words::MAX_TASK_WORDS as u64;

/// The shortest interval a long poll waits between reads of its queue, by default
/// (`FORGEBENCH_CLAIM_POLL_MS`).
pub const DEFAULT_CLAIM_POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// The table and the client that reaches it.
#[derive(Clone, Debug)]
pub struct Store {
    client: Client,
    table: String,
    /// Queue pages this process read for claims and has not used up (`store/claim.rs`).
    claim_pages: claim::ClaimPages,
    /// Agents this process read by id lately ([`Store::recent_agent`]).
    recent_agents: std::sync::Arc<crate::cache::ExpiringCache<crate::domain::Agent>>,
    /// Tenants' settings this process read lately ([`Store::recent_tenant_settings`]).
    recent_settings: std::sync::Arc<crate::cache::ExpiringCache<TenantSettings>>,
    /// Tenants' policies this process compiled lately, by tenant and version
    /// ([`Store::policy_book`]).
    recent_policy_books: std::sync::Arc<
        crate::cache::ExpiringCache<std::sync::Arc<crate::domain::policy::PolicyBook>>,
    >,
    /// How long those are trusted.
    settings_ttl: std::time::Duration,
    /// Long-poll slot pools this process found full lately (`store/polls.rs`).
    full_pools: std::sync::Arc<crate::cache::ExpiringCache<()>>,
    /// Long-poll slots this process holds (`store/polls.rs`).
    held_slots: polls::HeldSlots,
    /// The most write units one write of a message's postings spends (`store/words.rs`).
    index_units: u64,
}

/// What can go wrong talking to the table, sorted by what the caller should do about it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The service could not be reached, timed out, throttled or failed on its side; nothing
    /// that was asked took effect unless it was a single atomic write that the retry re-sent.
    #[error("DynamoDB unavailable: {0}")]
    Unavailable(String),
    /// The service throttled the request: a partition (or the table) past what it serves a
    /// second. Nothing that was asked took effect, but what a batch had written before.
    #[error("DynamoDB throttled: {0}")]
    Throttled(String),
    /// An item would exceed DynamoDB's item size limit.
    #[error("item too large")]
    TooLarge,
    /// A stored item did not have the shape this code writes.
    #[error("corrupt item: {0}")]
    Corrupt(String),
    /// Anything else the service refused (a bug on our side, not the client's).
    #[error("DynamoDB refused the request: {0}")]
    Rejected(String),
}

/// Whether a single conditional write took effect: `true` when it did, `false` when its
/// condition failed (nothing written), any other failure sorted by [`classify`].
pub(crate) fn committed<O, E>(
    sent: Result<O, SdkError<E, HttpResponse>>,
) -> Result<bool, StoreError>
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match sent {
        Ok(_) => Ok(true),
        Err(error)
            if error
                .as_service_error()
                .and_then(ProvideErrorMetadata::code)
                == Some("ConditionalCheckFailedException") =>
        {
            Ok(false)
        }
        Err(error) => Err(classify(error)),
    }
}

/// Sorts an SDK error into a [`StoreError`]. Conditional failures and transaction cancellations
/// are handled at their call sites before this is reached.
pub(crate) fn classify<E>(error: SdkError<E, HttpResponse>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match &error {
        SdkError::ServiceError(context) => {
            let service = context.err();
            let code = service.code().unwrap_or("Unknown");
            let message = service.message().unwrap_or_default();
            if context.raw().status().is_server_error() {
                // Whatever its body says (a bare 500 names no code): the service failing.
                return StoreError::Unavailable(format!(
                    "{} {code}: {message}",
                    context.raw().status()
                ));
            }
            match code {
                "ThrottlingException" | "ProvisionedThroughputExceededException" => {
                    StoreError::Throttled(format!("{code}: {message}"))
                }
                "RequestLimitExceeded"
                | "InternalServerError"
                | "ServiceUnavailable"
                | "TransactionInProgressException" => {
                    StoreError::Unavailable(format!("{code}: {message}"))
                }
                "ValidationException" if message.contains("size") => StoreError::TooLarge,
                _ => StoreError::Rejected(format!("{code}: {message}")),
            }
        }
        SdkError::ConstructionFailure(_) => StoreError::Rejected(format!("{error:?}")),
        // Dispatch failures, timeouts and unreadable responses: the service is not answering.
        _ => StoreError::Unavailable(error.to_string()),
    }
}

/// Why one item of a canceled transaction failed.
#[derive(Debug, Clone)]
pub(crate) struct CancelReason {
    /// `ConditionalCheckFailed`, `None` (this item was fine), or another DynamoDB code.
    pub code: String,
    /// The item as it was, for items written with `ReturnValuesOnConditionCheckFailure`.
    pub item: Option<Item>,
}

impl CancelReason {
    pub fn condition_failed(&self) -> bool {
        self.code == "ConditionalCheckFailed"
    }
}

/// A transaction either failed a condition (with one reason per item, in order) or hit the store.
#[derive(Debug)]
pub(crate) enum TransactError {
    Canceled(Vec<CancelReason>),
    Store(StoreError),
}

impl From<TransactError> for StoreError {
    fn from(error: TransactError) -> Self {
        match error {
            TransactError::Store(error) => error,
            TransactError::Canceled(reasons) => {
                let codes: Vec<&str> = reasons.iter().map(|reason| reason.code.as_str()).collect();
                StoreError::Rejected(format!("transaction canceled: {codes:?}"))
            }
        }
    }
}

/// The first item of a named transaction whose condition failed: its slot, and the item as it
/// stood when the write asked for it (`ReturnValuesOnConditionCheckFailure`).
#[derive(Debug)]
pub(crate) struct FailedSlot<S> {
    pub slot: S,
    pub item: Option<Item>,
}

impl Store {
    /// Runs a transaction whose items are named by `slot`, so that a canceled one is read by name
    /// rather than by position: `Ok(Err(failed))` names the first item whose condition failed
    /// (nothing written); a cancellation with no failed condition is the store's error.
    pub(crate) async fn transact_slots<S: Copy>(
        &self,
        items: Vec<(S, TransactWriteItem)>,
    ) -> Result<Result<(), FailedSlot<S>>, StoreError> {
        let (slots, items): (Vec<S>, Vec<TransactWriteItem>) = items.into_iter().unzip();
        match self.transact_checked(items).await {
            Ok(()) => Ok(Ok(())),
            Err(TransactError::Store(error)) => Err(error),
            Err(TransactError::Canceled(reasons)) => {
                let failed = slots
                    .iter()
                    .zip(&reasons)
                    .find(|(_, reason)| reason.condition_failed())
                    .map(|(slot, reason)| FailedSlot {
                        slot: *slot,
                        item: reason.item.clone(),
                    });
                failed
                    .map(Err)
                    .ok_or_else(|| TransactError::Canceled(reasons).into())
            }
        }
    }

    /// A transaction item that creates `item`, failing if its key is taken.
    pub(crate) fn put_new(&self, item: Item) -> Result<TransactWriteItem, StoreError> {
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .build()
            .map_err(|error| StoreError::Rejected(error.to_string()))?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    /// Runs a transaction whose conditions are not expected to fail.
    pub(crate) async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<(), StoreError> {
        self.transact_checked(items).await.map_err(StoreError::from)
    }

    /// Runs a transaction whose conditions guard against concurrent writers: `true` when it
    /// committed, `false` (nothing written) when a condition failed.
    pub(crate) async fn transact_if(
        &self,
        items: Vec<TransactWriteItem>,
    ) -> Result<bool, StoreError> {
        match self.transact_checked(items).await {
            Ok(()) => Ok(true),
            Err(TransactError::Canceled(_)) => Ok(false),
            Err(TransactError::Store(error)) => Err(error),
        }
    }

    /// Runs a transaction, returning per-item reasons when a condition cancels it.
    pub(crate) async fn transact_checked(
        &self,
        items: Vec<TransactWriteItem>,
    ) -> Result<(), TransactError> {
        let error = match self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await
        {
            Ok(_) => return Ok(()),
            Err(error) => error,
        };
        if let Some(TransactWriteItemsError::TransactionCanceledException(canceled)) =
            error.as_service_error()
        {
            let reasons: Vec<CancelReason> = canceled
                .cancellation_reasons()
                .iter()
                .map(|reason| CancelReason {
                    code: reason.code().unwrap_or("None").to_owned(),
                    item: reason.item().cloned(),
                })
                .collect();
            let retryable = reasons.iter().any(|reason| {
                matches!(
                    reason.code.as_str(),
                    "TransactionConflict" | "ThrottlingError" | "ProvisionedThroughputExceeded"
                )
            });
            if retryable {
                return Err(TransactError::Store(StoreError::Unavailable(format!(
                    "transaction conflict: {reasons:?}"
                ))));
            }
            if reasons
                .iter()
                .any(|reason| reason.code == "ValidationError")
            {
                return Err(TransactError::Store(StoreError::TooLarge));
            }
            return Err(TransactError::Canceled(reasons));
        }
        Err(TransactError::Store(classify(error)))
    }

    /// One item by key, strongly consistent.
    pub(crate) async fn get(&self, key: Item) -> Result<Option<Item>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        Ok(output.item)
    }

    /// Every item of partition `pk` whose sort key starts with `prefix`, strongly consistent,
    /// all pages.
    pub(crate) async fn query_prefix(
        &self,
        pk: String,
        prefix: &str,
    ) -> Result<Vec<Item>, StoreError> {
        self.client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
            .expression_attribute_values(":pk", item::s(pk))
            .expression_attribute_values(":prefix", item::s(prefix))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send()
            .collect::<Result<Vec<_>, _>>()
            .await
            .map_err(classify)
    }

    /// Every item on `index` under partition `pk`, page after page.
    pub(crate) async fn query_index_all(
        &self,
        index: &str,
        pk: String,
    ) -> Result<Vec<Item>, StoreError> {
        self.client
            .query()
            .table_name(&self.table)
            .index_name(index)
            .key_condition_expression(format!("{index}pk = :pk"))
            .expression_attribute_values(":pk", item::s(pk))
            .into_paginator()
            .items()
            .send()
            .collect::<Result<Vec<_>, _>>()
            .await
            .map_err(classify)
    }

    /// Up to `limit` items on `index` under partition `pk` whose sort key sorts before `before`
    /// (the sweeps: entries that fell due).
    pub(crate) async fn query_due(
        &self,
        index: &str,
        pk: String,
        before: &str,
        limit: i32,
    ) -> Result<Vec<Item>, StoreError> {
        let output = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(index)
            .key_condition_expression(format!("{index}pk = :pk AND {index}sk < :before"))
            .expression_attribute_values(":pk", item::s(pk))
            .expression_attribute_values(":before", item::s(before))
            .limit(limit)
            .send()
            .await
            .map_err(classify)?;
        Ok(output.items.unwrap_or_default())
    }

    pub fn new(client: Client, table: impl Into<String>) -> Store {
        Store {
            client,
            table: table.into(),
            claim_pages: claim::ClaimPages::new(DEFAULT_CLAIM_POLL_INTERVAL),
            recent_agents: Default::default(),
            recent_settings: Default::default(),
            recent_policy_books: Default::default(),
            settings_ttl: tenancy::SETTINGS_TTL,
            full_pools: Default::default(),
            held_slots: Default::default(),
            index_units: DEFAULT_INDEX_UNITS,
        }
    }

    /// The store, taking a queue a claim found empty as empty for the other claims of this
    /// process for `interval`, the shortest a long poll waits between reads
    /// (`FORGEBENCH_CLAIM_POLL_MS`; see `store/claim.rs`).
    pub fn with_claim_poll_interval(mut self, interval: std::time::Duration) -> Store {
        self.claim_pages = claim::ClaimPages::new(interval);
        self
    }

    /// The store, spending at most `units` write units on one write of a message's postings
    /// (`FORGEBENCH_INDEX_UNITS`): a message's later words are not indexed.
    pub fn with_index_units(mut self, units: u64) -> Store {
        self.index_units = units;
        self
    }

    /// The store, trusting a tenant's settings it read for `ttl` (the key cache's time, so a
    /// change reaches other processes as a revoked key does).
    pub fn with_settings_ttl(mut self, ttl: std::time::Duration) -> Store {
        self.settings_ttl = ttl;
        self
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    pub fn client(&self) -> &Client {
        &self.client
    }
}
