//! A page of a tenant's audit log, newest first, merged from every partition it is spread over
//! (`store/log_shards.rs`).
//!
//! Every partition holds entries sorted by `{at}#{id}`, the same order the log pages in; a page
//! reads the partitions side by side and keeps only what is final: an entry is in its place
//! once every partition still being read has read down to it, so a page never skips or
//! repeats an entry, whatever the count when each was written (the count only grows, and a
//! page reads it fresh).

use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::types::ReturnConsumedCapacity;

use super::audit::AuditEntry;
use super::item::{key, s, Item, Reader};
use super::layout::{audit_partition, audit_sort_key_past};
use super::{classify, Store, StoreError};
use crate::domain::TenantId;

/// The read capacity after which a page of the audit log reads no further: a filter that
/// keeps few entries costs at most this much per page (its next page goes on from there).
pub const AUDIT_READ_UNITS: f64 = 100.0;

/// How many entries one filtered read evaluates at most.
const AUDIT_FILTERED_READ: usize = 500;

/// What a page of the audit log is asked for. `agent` is an agent's id.
#[derive(Debug)]
pub struct AuditSearch<'a> {
    pub tenant_id: &'a TenantId,
    /// The sort key of the last entry a previous page covered.
    pub after: Option<&'a str>,
    pub limit: usize,
    pub agent: Option<&'a str>,
    pub action: Option<&'a str>,
    pub outcome: Option<&'a str>,
    pub since: Option<&'a str>,
}

/// A page of the audit log.
#[derive(Debug, Default)]
pub struct AuditPage {
    pub entries: Vec<AuditEntry>,
    /// The sort key to page on from (`{at}#{id}`), when more may follow.
    pub next: Option<String>,
    /// The read capacity the page cost, as the store reports it.
    pub read_units: f64,
}

/// One partition of the log as a page reads it.
struct PartitionRead {
    partition: String,
    start: Option<Item>,
    /// The sort key of the last entry it evaluated (kept or filtered out); `None` before.
    reached: Option<String>,
    done: bool,
}

impl Store {
    /// A page of a tenant's audit log, newest first: the entries the search's filters keep,
    /// read on (filtered in the store) until the page holds `limit` of them, the log ends, or
    /// the page has spent [`AUDIT_READ_UNITS`]. Returns the page and the sort key to page on
    /// from when more may follow: the last entry's when the page is full, else the lowest one
    /// every partition has read down to, so paging never skips or repeats an entry.
    pub async fn list_audit(&self, search: &AuditSearch<'_>) -> Result<AuditPage, StoreError> {
        let mut page = AuditPage::default();
        if let (Some(after), Some(since)) = (search.after, search.since) {
            // The log pages newest first: past a cursor at or before `since` nothing is newer
            // than `since`, and the store refuses a start outside the key's range.
            if after <= audit_sort_key_past(since).as_str() {
                return Ok(page);
            }
        }
        let shards = self.tenant_settings(search.tenant_id).await?;
        let shards = shards.unwrap_or_default().log_shards;
        let mut reads: Vec<PartitionRead> = shards
            .shards()
            .map(|shard| {
                let partition = audit_partition(search.tenant_id, shard);
                PartitionRead {
                    start: search.after.map(|after| key(partition.clone(), after)),
                    partition,
                    reached: None,
                    done: false,
                }
            })
            .collect();
        let mut found = Vec::new();
        loop {
            page.read_units += self.read_round(search, &mut reads, &mut found).await?;
            let frontier = frontier(&reads);
            let final_count = found
                .iter()
                .filter(|entry| is_final(entry, frontier.as_deref()))
                .count();
            if final_count >= search.limit
                || frontier.is_none()
                || page.read_units >= AUDIT_READ_UNITS
            {
                return Ok(finish(page, found, frontier, search.limit));
            }
        }
    }

    /// One read of each partition still being read, side by side: what their filters keep
    /// goes to `found`; the read capacity spent.
    async fn read_round(
        &self,
        search: &AuditSearch<'_>,
        reads: &mut [PartitionRead],
        found: &mut Vec<AuditEntry>,
    ) -> Result<f64, StoreError> {
        let going = reads.iter().filter(|read| !read.done).count().max(1);
        let queries = reads.iter_mut().filter(|read| !read.done).map(|read| {
            let query = self.audit_query(search, read, going);
            async move { (read, query.send().await) }
        });
        let mut units = 0.0;
        for (read, sent) in futures::future::join_all(queries).await {
            let output = sent.map_err(classify)?;
            units += super::item::units(output.consumed_capacity());
            found.extend(super::page::decoded(
                output.items(),
                "audit",
                AuditEntry::try_from,
            ));
            let last = output.last_evaluated_key;
            read.reached = last.as_ref().map(|key| Reader(key).s("sk")).transpose()?;
            read.done = last.is_none();
            read.start = last;
        }
        Ok(units)
    }

    /// One read of one partition for `search`, from where it stands, the filters in the store,
    /// taking its share of the page when `going` partitions are read side by side.
    fn audit_query(
        &self,
        search: &AuditSearch<'_>,
        read: &PartitionRead,
        going: usize,
    ) -> QueryFluentBuilder {
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .expression_attribute_values(":pk", s(&read.partition))
            .scan_index_forward(false)
            .consistent_read(true)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .set_exclusive_start_key(read.start.clone());
        query = match search.since {
            Some(since) => query
                .key_condition_expression("pk = :pk AND sk > :since")
                .expression_attribute_values(":since", s(audit_sort_key_past(since))),
            None => query.key_condition_expression("pk = :pk"),
        };
        let (query, filtered) = with_filters(query, search);
        // A read takes one entry past the page, so a full page knows whether more follow;
        // filtered, it evaluates a larger stretch, of which only what the filters keep comes
        // back. Side by side, each partition takes its share of that, and at least two.
        let size = match filtered {
            false => search.limit + 1,
            true => AUDIT_FILTERED_READ.max(search.limit + 1),
        };
        let share = size.div_ceil(going).max(2).min(size);
        query.limit(i32::try_from(share).unwrap_or(i32::MAX))
    }
}

/// The search's filters on a read of the log; and whether it has any.
fn with_filters(
    mut query: QueryFluentBuilder,
    search: &AuditSearch<'_>,
) -> (QueryFluentBuilder, bool) {
    let mut filters = Vec::new();
    if let Some(action) = search.action {
        filters.push("begins_with(#action, :action)");
        query = query
            .expression_attribute_names("#action", "action")
            .expression_attribute_values(":action", s(action));
    }
    if let Some(outcome) = search.outcome {
        filters.push("#outcome = :outcome");
        query = query
            .expression_attribute_names("#outcome", "outcome")
            .expression_attribute_values(":outcome", s(outcome));
    }
    if let Some(agent) = search.agent {
        filters.push(
            "(actor_id = :agent OR #target = :agent OR caller_agent_id = :agent \
             OR callee_agent_id = :agent)",
        );
        query = query
            .expression_attribute_names("#target", "target")
            .expression_attribute_values(":agent", s(agent));
    }
    if filters.is_empty() {
        return (query, false);
    }
    (query.filter_expression(filters.join(" AND ")), true)
}

/// The sort key above which every partition has read everything: the highest one a partition
/// still being read has reached; `None` when every partition is read to its end.
fn frontier(reads: &[PartitionRead]) -> Option<String> {
    reads
        .iter()
        .filter(|read| !read.done)
        .map(|read| read.reached.clone().unwrap_or_default())
        .max()
}

/// Whether `entry`'s place is final: no partition still being read can hold an entry above it.
fn is_final(entry: &AuditEntry, frontier: Option<&str>) -> bool {
    frontier.is_none_or(|frontier| entry.sort_key().as_str() >= frontier)
}

/// The page: the `limit` newest final entries, and the cursor after them when more may follow
/// (past the last of them when the page is full, else at the frontier).
fn finish(
    mut page: AuditPage,
    mut found: Vec<AuditEntry>,
    frontier: Option<String>,
    limit: usize,
) -> AuditPage {
    found.retain(|entry| is_final(entry, frontier.as_deref()));
    found.sort_by_key(|entry| std::cmp::Reverse(entry.sort_key()));
    let more_found = found.len() > limit;
    found.truncate(limit);
    page.next = match (found.len() == limit, more_found || frontier.is_some()) {
        (true, true) => found.last().map(AuditEntry::sort_key),
        (false, _) => frontier,
        (true, false) => None,
    };
    page.entries = found;
    page
}
