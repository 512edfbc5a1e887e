//! The table's layout: the keys of its items, built in one place.

use crate::domain::{TaskId, TenantId};

/// The partition of one tenant's postings of `word`.
pub(crate) fn posting_partition(tenant: &TenantId, word: &str) -> String {
    format!("WORDS#{tenant}#{word}")
}

/// A posting's sort key: the task's place in a search with words (its creation, then its id).
pub(crate) fn posting_sort_key(created_at: &str, task_id: &TaskId) -> String {
    format!("{created_at}#{task_id}")
}
