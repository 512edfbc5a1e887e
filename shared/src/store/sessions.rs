//! Console sessions: the hash of a session token → the hash of the member key it was opened
//! with. Every request made with the session authenticates that key again, so revoking the key
//! (or pausing nothing: member keys are not paused) ends its sessions too.
//!
//! | item | pk | sk |
//! |---|---|---|
//! | session | `SESSION#{sha256}` | `SESSION` |
//!
//! `expires_at` (epoch seconds) is the table's TTL attribute: DynamoDB deletes a session some
//! time after it ends; reads treat it as gone from that second on.

use super::item::{key, n, s, Reader};
use super::layout::{session_partition, SESSION_SORT_KEY};
use super::{classify, Store, StoreError};
use crate::domain::clock;

/// What a live session stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    /// The hash of the member key the session was opened with.
    pub key_hash: String,
    /// When the session ends (epoch seconds).
    pub expires_at: u64,
}

fn session_key(hash: &str) -> super::item::Item {
    key(session_partition(hash), SESSION_SORT_KEY)
}

impl Store {
    /// Records a new session.
    pub async fn put_session(&self, hash: &str, record: &SessionRecord) -> Result<(), StoreError> {
        let mut item = session_key(hash);
        item.insert("key_hash".into(), s(&record.key_hash));
        item.insert("expires_at".into(), n(record.expires_at));
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await
            .map(|_| ())
            .map_err(classify)
    }

    /// The session under `hash`, if it exists and has not ended.
    pub async fn session(&self, hash: &str) -> Result<Option<SessionRecord>, StoreError> {
        let Some(item) = self.get(session_key(hash)).await? else {
            return Ok(None);
        };
        let read = Reader(&item);
        let record = SessionRecord {
            key_hash: read.s("key_hash")?,
            expires_at: read.n("expires_at")?,
        };
        Ok((record.expires_at > clock::unix_now()).then_some(record))
    }

    /// Ends a session (nothing if it is gone already).
    pub async fn delete_session(&self, hash: &str) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(session_key(hash)))
            .send()
            .await
            .map(|_| ())
            .map_err(classify)
    }
}
