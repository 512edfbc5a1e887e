//! A task's item: how a [`Task`] is written to and read from the table, its keys and index
//! shards, and the size rules every write that adds bodies keeps.

use crate::domain::ids::{CallId, TaskId, TenantId};
use crate::domain::SignedInWith;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::AttributeValue;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::item::{insert_trace, json, key, n, s, Item, Reader};
use super::layout::{
    due_sort_key, outbox_shard_partition, queue_partition, queue_sort_key, shown_context,
    stored_context, task_id_of_partition, task_partition, task_shard, TASK_SORT_KEY,
};
use super::StoreError;
use crate::domain::content::{PackedBody, Stored, MAX_TASK_CONTENT_BYTES};
use crate::domain::events::Change;
use crate::domain::task::Delivery;
use crate::domain::{clock, Message, Task, TaskState};

pub(crate) fn task_key(task_id: &TaskId) -> Item {
    key(task_partition(task_id), TASK_SORT_KEY)
}

/// The task an item under a task's partition belongs to, from its `pk` (`TASK#{id}`), as an index
/// entry of keys only carries it; an item under another partition is a corrupt `what`.
pub(crate) fn task_id_of(item: &Item, what: &str) -> Result<TaskId, StoreError> {
    let pk = Reader(item).s("pk")?;
    task_id_of_partition(&pk).ok_or_else(|| StoreError::Corrupt(format!("{what} {pk}")))
}

/// What a write that moves `updated_at` but leaves the state and status message as they were
/// sets beside it: the status time, kept as the last change's (`to_item`).
pub(crate) const KEEP_STATUS_TIME: &str =
    "status_timestamp = if_not_exists(status_timestamp, updated_at)";

/// How long a push task may wait for its first delivery attempt before the sweeper re-enqueues it.
pub const OUTBOX_GRACE_SECONDS: u64 = 60;

/// Every shard of the deadline index, for the sweeper.
pub const DEADLINE_SHARDS: [char; 16] = [
    '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b', 'c', 'd', 'e', 'f',
];

/// A packed body as the item stores it: its JSON text, inline or a reference.
pub(crate) fn body_text(body: &PackedBody) -> AttributeValue {
    s(body.text())
}

/// The condition that keeps a task's bodies within [`MAX_TASK_CONTENT_BYTES`] after a write adds
/// `added` bytes (`:room` is bound by [`with_content_room`]).
pub(crate) const WITHIN_CONTENT_CAP: &str =
    " AND (attribute_not_exists(content_bytes) OR content_bytes <= :room)";

/// Binds `:room` and `:added` for a write that adds `added` bytes of bodies under
/// [`WITHIN_CONTENT_CAP`]. Callers refuse an `added` over the cap before writing.
pub(crate) fn with_content_room(
    update: UpdateItemFluentBuilder,
    added: u64,
) -> UpdateItemFluentBuilder {
    update
        .expression_attribute_values(":room", n(MAX_TASK_CONTENT_BYTES.saturating_sub(added)))
        .expression_attribute_values(":added", n(added))
}

/// The clause every write that changes what a reader sees adds to its `SET`: it appends the
/// change's entries (bound by [`logging`]) to the task's change log and moves the task's search
/// position (`changed_at`, which the search indexes without words sort by) to the write's moment
/// (its `:now`, the moment its entries carry).
pub(crate) const LOG_CHANGES: &str =
    "events = list_append(if_not_exists(events, :no_changes), :changes), changed_at = :now";

/// The value of `words_due` while a task's word postings are behind it (`store/words.rs`).
pub(crate) const WORDS_DUE: &str = "due";

/// The value of `words_due` once a sweep failed to write a task's postings: its own list, so
/// that tasks whose words keep failing never stand in front of the others.
pub(crate) const WORDS_ASIDE: &str = "aside";

/// The log entries of `changes`, as [`LOG_CHANGES`] appends them.
pub(crate) fn change_entries(changes: &[Change]) -> AttributeValue {
    AttributeValue::L(changes.iter().map(|change| s(change.encode())).collect())
}

/// Binds the values of [`LOG_CHANGES`] for a write that logs `changes`.
pub(crate) fn logging(
    update: UpdateItemFluentBuilder,
    changes: &[Change],
) -> UpdateItemFluentBuilder {
    update
        .expression_attribute_values(":no_changes", AttributeValue::L(Vec::new()))
        .expression_attribute_values(":changes", change_entries(changes))
}

/// A write that carries a message with an idempotency key remembers it (`ADD`ing this to the
/// update's `ADD` clause) and is refused when the task has it already (this joins its
/// condition); [`remembering`] binds both, and nothing when there is no key.
pub(crate) fn remember_key(key: Option<&str>) -> (&'static str, &'static str) {
    match key {
        Some(_) => (
            ", message_keys :message_keys",
            " AND NOT contains(message_keys, :message_key)",
        ),
        None => ("", ""),
    }
}

/// Binds the values of [`remember_key`]'s clauses.
pub(crate) fn remembering(
    update: UpdateItemFluentBuilder,
    key: Option<&str>,
) -> UpdateItemFluentBuilder {
    match key {
        Some(key) => update
            .expression_attribute_values(":message_keys", AttributeValue::Ss(vec![key.to_owned()]))
            .expression_attribute_values(":message_key", s(key)),
        None => update,
    }
}

/// The changes of a stored log; entries this version cannot read are skipped.
fn read_changes(item: &Item) -> Vec<Change> {
    match item.get("events") {
        Some(AttributeValue::L(entries)) => entries
            .iter()
            .filter_map(|entry| Change::decode(entry.as_s().ok()?))
            .collect(),
        _ => Vec::new(),
    }
}

/// The root call a task item without `root_call_id` has: its parent's (a second hop, the most
/// common below a root), else its own (a root call). Items written before kept it always.
fn assumed_root<'a>(call_id: &'a CallId, parent_call_id: Option<&'a CallId>) -> &'a CallId {
    parent_call_id.unwrap_or(call_id)
}

/// Bits of a task item's `counted`: the open counts its finish must give back. One small
/// number rather than a flag each keeps the item within its write unit (its attribute names
/// count). Items written before had `tree_counted`, which still reads as the first bit.
const COUNTED_IN_TREE: u64 = 1;
const COUNTED_ON_BINDING: u64 = 2;

fn counted_bits(task: &Task) -> u64 {
    let mut bits = 0;
    if task.counted_in_tree {
        bits |= COUNTED_IN_TREE;
    }
    if task.counted_on_binding {
        bits |= COUNTED_ON_BINDING;
    }
    bits
}

/// The item of a task as opened. The claim deadline and the delivery bookkeeping (attempts,
/// delivered-at, lease) are set later by the writes that change them, never from here.
pub(crate) fn to_item(task: &Task) -> Item {
    // The id is the key's (`TASK#{id}`, [`task_id_of`]), not an attribute of its own: a task's
    // item, and each index entry that copies it, stays within one write unit the longer.
    let mut item = task_key(&task.id);
    item.insert("kind".into(), s("task"));
    item.insert("tenant_id".into(), s(&task.tenant_id));
    item.insert(
        "context_id".into(),
        s(stored_context(
            &task.tenant_id,
            &task.context_id,
            task.context_named,
        )),
    );
    item.insert("caller_agent_id".into(), s(&task.caller_agent_id));
    item.insert("callee_agent_id".into(), s(&task.callee_agent_id));
    item.insert("callee_name".into(), s(&task.callee_name));
    item.insert("state".into(), s(task.state.as_str()));
    // An attribute with nothing to say is left out, not stored as null, and the opening message
    // is the history's first (`input` is read from it): the small task's item stays within the
    // 1 KB of one write unit, and so does each index entry that copies it.
    if let Some(message) = &task.status_message {
        item.insert("status_message".into(), json(&message.to_value()));
    }
    item.insert("artifacts".into(), json(&task.artifacts.to_value()));
    if let Some(error) = &task.error {
        item.insert("error".into(), s(error));
    }
    item.insert(
        "history".into(),
        AttributeValue::L(
            task.history
                .iter()
                .map(|message| json(&message.to_value()))
                .collect(),
        ),
    );
    item.insert("call_id".into(), s(&task.call_id));
    if let Some(parent) = &task.parent_call_id {
        item.insert("parent_call_id".into(), s(parent));
    }
    // The root is left out where it is the one a reader assumes: the parent's, else its own.
    if task.root_call_id != *assumed_root(&task.call_id, task.parent_call_id.as_ref()) {
        item.insert("root_call_id".into(), s(&task.root_call_id));
    }
    let counted = counted_bits(task);
    if counted != 0 {
        item.insert("counted".into(), n(counted));
    }
    if let Some(skill) = &task.skill {
        item.insert("skill".into(), s(skill));
    }
    if task.log_shard != 0 {
        item.insert("log_shard".into(), n(u64::from(task.log_shard)));
    }
    insert_trace(&mut item, task.trace.as_ref());
    if task.delivery == Delivery::Push {
        item.insert("delivery".into(), s(task.delivery.as_str()));
    }
    item.insert(
        "claim_timeout_seconds".into(),
        n(task.claim_timeout_seconds),
    );
    item.insert("content_bytes".into(), n(task.content_bytes));
    if let Some(delivery_id) = &task.delivery_id {
        item.insert("delivery_id".into(), s(delivery_id));
    }
    if let Some(expires_at) = task.expires_at {
        item.insert("expires_at".into(), n(expires_at));
    }
    insert_times(&mut item, task);
    if !task.changes.is_empty() {
        item.insert("events".into(), change_entries(&task.changes));
    }
    if let Some(token) = &task.caller_signed_in_with {
        item.insert("caller_token_issuer".into(), s(&token.issuer));
        item.insert("caller_token_subject".into(), s(&token.subject));
    }
    if task.state == TaskState::Submitted {
        let (queue, order) = queue_entry(task, &task.created_at);
        item.insert("gsi1pk".into(), s(queue));
        item.insert("gsi1sk".into(), s(order));
    }
    item
}

/// The task's times: its creation, its last write, its last change and, only when it is not the
/// last change (a later write touched only the delivery's bookkeeping), its status's; the writes
/// that change the state or the status message remove that one ([`KEEP_STATUS_TIME`]).
fn insert_times(item: &mut Item, task: &Task) {
    item.insert("created_at".into(), s(&task.created_at));
    item.insert("updated_at".into(), s(&task.updated_at));
    item.insert("changed_at".into(), s(task.changed_at()));
    if task.status_timestamp != task.updated_at {
        item.insert("status_timestamp".into(), s(&task.status_timestamp));
    }
}

/// The index a caller's tasks on one callee are read from: the caller's side index, sorted by
/// `created_at`, which holds each task's callee (`store/search.rs`).
pub(crate) const PAIR_INDEX: &str = "outbound_tasks";

/// Where a task waits for its callee on the queue index (`gsi1pk`, `gsi1sk`): on the callee's
/// queue in order of `since` (pull), or on the outbox until a delivery attempt takes it, so a
/// lost enqueue is redone (push).
pub(crate) fn queue_entry(task: &Task, since: &str) -> (String, String) {
    match task.delivery {
        Delivery::Pull => (
            queue_partition(&task.callee_agent_id),
            queue_sort_key(since, &task.id),
        ),
        Delivery::Push => (
            outbox_shard_partition(task_shard(&task.id)),
            due_sort_key(&clock::after(OUTBOX_GRACE_SECONDS), &task.id),
        ),
    }
}

/// A stored message or artifact list read back from the item's attribute `name`.
fn stored<T: Serialize + DeserializeOwned>(
    name: &str,
    value: &Value,
) -> Result<Stored<T>, StoreError> {
    Stored::from_value(value)
        .map_err(|error| StoreError::Corrupt(format!("attribute {name}: {error}")))
}

impl TryFrom<&Item> for Task {
    type Error = StoreError;

    fn try_from(item: &Item) -> Result<Task, StoreError> {
        let read = Reader(item);
        let state = read.s("state")?;
        // Only a push task's item says how it is delivered; older pull items say `pull`.
        let delivery = match read.opt_s("delivery")?.as_deref() {
            Some("push") => Delivery::Push,
            _ => Delivery::Pull,
        };
        let call_id: CallId = read.id("call_id")?;
        let parent_call_id: Option<CallId> = read.opt_id("parent_call_id")?;
        let root_call_id = match read.opt_id("root_call_id")? {
            Some(root) => root,
            None => assumed_root(&call_id, parent_call_id.as_ref()).clone(),
        };
        let delivery_attempts = read.n_or("delivery_attempts", 0)?;
        let tenant_id: TenantId = read.id("tenant_id")?;
        let (context_id, context_named) = shown_context(&tenant_id, read.s("context_id")?);
        let updated_at = read.at("updated_at")?;
        Ok(Task {
            id: task_id_of(item, "task")?,
            tenant_id,
            context_id: context_id.into(),
            context_named,
            caller_agent_id: read.id("caller_agent_id")?,
            callee_agent_id: read.id("callee_agent_id")?,
            callee_name: read.s("callee_name")?,
            state: TaskState::parse(&state)
                .ok_or_else(|| StoreError::Corrupt(format!("task state {state:?}")))?,
            status_message: read
                .opt_json("status_message")?
                .map(|value| stored("status_message", &value))
                .transpose()?,
            status_timestamp: read
                .opt_at("status_timestamp")?
                .unwrap_or_else(|| updated_at.clone()),
            input: opening_message(item)?,
            artifacts: stored("artifacts", &read.json("artifacts")?)?,
            error: read.opt_s("error")?,
            history: read
                .json_list("history")?
                .iter()
                .map(|value| stored("history", value))
                .collect::<Result<_, _>>()?,
            call_id,
            parent_call_id,
            root_call_id,
            tree_place: None,
            counted_in_tree: item.contains_key("tree_counted")
                || read.n_or("counted", 0)? & COUNTED_IN_TREE != 0,
            counted_on_binding: read.n_or("counted", 0)? & COUNTED_ON_BINDING != 0,
            skill: read.opt_s("skill")?,
            trace: read.trace()?,
            delivery,
            claim_timeout_seconds: read.n("claim_timeout_seconds")?,
            deadline_at: read.opt_at("deadline_at")?,
            delivery_attempts,
            // Stored before attempts were numbered across deliveries: the task's only delivery
            // so far has records 1 to `delivery_attempts`.
            attempt_number: read.n_or("attempt_number", delivery_attempts)?,
            delivery_id: read.opt_s("delivery_id")?,
            delivered_at: read.opt_at("delivered_at")?,
            content_bytes: read.n_or("content_bytes", 0)?,
            expires_at: read.opt_n("expires_at")?,
            created_at: read.at("created_at")?,
            updated_at,
            changes: read_changes(item),
            notify_configs: read.n_or("notify_configs", 0)?,
            message_keys: match item.get("message_keys") {
                Some(AttributeValue::Ss(keys)) => keys.clone(),
                _ => Vec::new(),
            },
            caller_signed_in_with: caller_signed_in_with(&read)?,
            log_shard: u16::try_from(read.n_or("log_shard", 0)?).unwrap_or_default(),
        })
    }
}

/// The task's opening message: the first of its history (or, stored before 2026-12-04, its own
/// attribute beside the history that holds it too).
fn opening_message(item: &Item) -> Result<Stored<Message>, StoreError> {
    let read = Reader(item);
    if item.contains_key("input") {
        return stored("input", &read.json("input")?);
    }
    let first = read.json_list("history")?.first().cloned();
    let first =
        first.ok_or_else(|| StoreError::Corrupt("a task without its opening message".into()))?;
    stored("input", &first)
}

/// The OpenID Connect identity the caller opened the task with, when it used a token.
fn caller_signed_in_with(read: &Reader<'_>) -> Result<Option<SignedInWith>, StoreError> {
    Ok(
        match (
            read.opt_s("caller_token_issuer")?,
            read.opt_s("caller_token_subject")?,
        ) {
            (Some(issuer), Some(subject)) => Some(SignedInWith { issuer, subject }),
            _ => None,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::content::{PackedBody, INLINE_BODY_BYTES};
    use crate::domain::events::MAX_LOGGED_CHANGES;
    use crate::domain::notify::MAX_CONFIGS_PER_TASK;
    use crate::domain::task::Artifact;
    use crate::domain::task::{PackedResult, TaskResult, MAX_ERROR_CHARS, MAX_TASK_MESSAGES};
    use crate::domain::{Message, Part};
    use serde_json::{json, Value};

    use crate::store::item::item_size;
    use crate::store::layout::deadline_shard_partition;

    /// A body of exactly `bytes` bytes serialized, the largest that still stays inline.
    fn inline_body(bytes: usize) -> Value {
        let envelope = json!({"role": "agent", "parts": [{"text": ""}]})
            .to_string()
            .len();
        json!({"role": "agent", "parts": [{"text": "é".repeat((bytes - envelope) / 2)}]})
    }

    /// An artifact list of exactly `bytes` bytes serialized.
    fn inline_artifacts(bytes: usize) -> Vec<Artifact> {
        let envelope = json!([{"name": "response", "parts": [{"text": ""}]}])
            .to_string()
            .len();
        vec![Artifact {
            name: "response".into(),
            parts: vec![Part::Text("é".repeat((bytes - envelope) / 2))],
        }]
    }

    fn stored_message(value: &Value) -> Stored<Message> {
        Stored::from_value(value).unwrap()
    }

    #[test]
    fn the_largest_task_any_sequence_of_writes_can_make_fits_the_item_limit_with_headroom() {
        // DynamoDB's limit is 400 KB; 50 KB of it stay spare for attributes yet to come.
        const CAP: usize = 350_000;
        let uuid = "9f0c7a9e-1111-4222-8333-444455556666";
        let largest_inline = inline_body(INLINE_BODY_BYTES);
        let packed = PackedBody::pack(uuid, uuid, &largest_inline, INLINE_BODY_BYTES);
        assert!(
            packed.offload.is_none(),
            "the body is the largest that stays inline"
        );
        let reference = PackedBody::pack(uuid, uuid, &inline_body(4096), INLINE_BODY_BYTES);
        assert!(
            reference.text().len() <= INLINE_BODY_BYTES,
            "a reference is never larger"
        );

        // The one failure a task can end with: the longest error, every character escaped.
        let error: String = "\u{1}".repeat(MAX_ERROR_CHARS);
        let failure = PackedResult::pack(
            uuid,
            uuid,
            &TaskResult::Failed {
                error: error.clone(),
            },
        );
        let mut history = vec![stored_message(&largest_inline); MAX_TASK_MESSAGES - 1];
        history.push(stored_message(&failure.history_entry.stored));
        let artifacts = inline_artifacts(INLINE_BODY_BYTES);
        assert!(serde_json::to_string(&artifacts).unwrap().len() <= INLINE_BODY_BYTES);
        let task = Task {
            id: uuid.into(),
            tenant_id: uuid.into(),
            context_id: uuid.into(),
            caller_agent_id: uuid.into(),
            caller_signed_in_with: None,
            callee_agent_id: uuid.into(),
            callee_name: "n".repeat(63),
            state: TaskState::Submitted,
            status_message: Some(stored_message(&largest_inline)),
            status_timestamp: clock::now(),
            input: stored_message(&largest_inline),
            artifacts: Stored::Inline(artifacts),
            error: Some("\u{10ffff}".repeat(MAX_ERROR_CHARS)),
            history,
            call_id: uuid.into(),
            parent_call_id: Some(uuid.into()),
            root_call_id: uuid.into(),
            tree_place: None,
            counted_in_tree: false,
            counted_on_binding: false,
            skill: None,
            trace: None,
            delivery: Delivery::Push,
            claim_timeout_seconds: 86_400,
            deadline_at: None,
            delivery_attempts: 0,
            attempt_number: 0,
            delivery_id: Some(uuid.into()),
            delivered_at: None,
            content_bytes: MAX_TASK_CONTENT_BYTES,
            expires_at: Some(u64::from(u32::MAX)),
            created_at: clock::now(),
            updated_at: clock::now(),
            // The longest log any task can have, every entry at its longest.
            changes: vec![
                Change::State {
                    state: TaskState::InputRequired,
                    with_message: true,
                    at: u64::MAX,
                };
                MAX_LOGGED_CHANGES
            ],
            message_keys: Vec::new(),
            log_shard: 0,
            notify_configs: 0,
            context_named: false,
        };
        let mut item = to_item(&task);
        // Every bookkeeping attribute a later write may set, at its longest.
        for (name, value) in [
            ("deadline_at", clock::now().into()),
            ("delivered_at", clock::now().into()),
            ("lease_until", clock::now().into()),
            ("lease_token", uuid.to_owned()),
            ("gsi2pk", deadline_shard_partition('f')),
            ("gsi2sk", due_sort_key(&clock::now(), &uuid.into())),
        ] {
            item.insert(name.into(), s(value));
        }
        item.insert("delivery_attempts".into(), n(u64::MAX));
        item.insert("attempt_number".into(), n(u64::MAX));
        // A key remembered for every message a task can hold.
        item.insert(
            "message_keys".into(),
            AttributeValue::Ss(
                (0..MAX_TASK_MESSAGES)
                    .map(|i| format!("{i:024x}"))
                    .collect(),
            ),
        );
        item.insert("notify_configs".into(), n(MAX_CONFIGS_PER_TASK));
        let size = item_size(&item);
        assert!(size <= CAP, "{size} bytes");
    }

    #[test]
    fn a_task_reads_back_from_its_item_as_it_was_written() {
        let uuid = "9f0c7a9e-1111-4222-8333-444455556666";
        let question = json!({"role": "agent", "parts": [{"text": "which one?"}]});
        let large = PackedBody::pack(uuid, uuid, &inline_body(4096), INLINE_BODY_BYTES);
        let task = Task {
            id: uuid.into(),
            tenant_id: "tenant".into(),
            context_id: "context".into(),
            caller_agent_id: "caller".into(),
            caller_signed_in_with: None,
            callee_agent_id: "callee".into(),
            callee_name: "callee-name".into(),
            state: TaskState::InputRequired,
            status_message: Some(stored_message(&question)),
            status_timestamp: "2026-01-01T00:00:00.000000Z".into(),
            input: stored_message(&large.stored),
            artifacts: Stored::Inline(inline_artifacts(128)),
            error: Some("an error".into()),
            history: vec![stored_message(&large.stored), stored_message(&question)],
            call_id: "call".into(),
            parent_call_id: Some("parent".into()),
            root_call_id: "root".into(),
            tree_place: None,
            counted_in_tree: false,
            counted_on_binding: false,
            skill: None,
            trace: None,
            delivery: Delivery::Push,
            claim_timeout_seconds: 900,
            // Claims and deliveries set these with their own writes, never through `to_item`.
            deadline_at: None,
            delivery_attempts: 0,
            attempt_number: 0,
            delivery_id: Some("delivery".into()),
            delivered_at: None,
            content_bytes: 4096,
            expires_at: Some(1_800_000_000),
            created_at: "2026-01-01T00:00:00.000000Z".into(),
            updated_at: "2026-01-01T00:00:02.000000Z".into(),
            changes: vec![
                Change::state(TaskState::Working, false, "2026-01-01T00:00:01.000000Z"),
                Change::state(
                    TaskState::InputRequired,
                    true,
                    "2026-01-01T00:00:02.000000Z",
                ),
            ],
            message_keys: Vec::new(),
            log_shard: 0,
            notify_configs: 0,
            context_named: false,
        };
        assert!(task.input.reference().is_some(), "one body is a reference");
        assert_eq!(task.input.role(), Some(crate::domain::message::Role::Agent));
        let item = to_item(&task);
        assert_eq!(Task::try_from(&item).unwrap(), task);
        for (in_tree, on_binding) in [(true, false), (false, true), (true, true)] {
            let counted = Task {
                counted_in_tree: in_tree,
                counted_on_binding: on_binding,
                skill: Some("classify".into()),
                ..task.clone()
            };
            assert_eq!(Task::try_from(&to_item(&counted)).unwrap(), counted);
        }
        // A root call and a second hop leave their root out; a pull task its delivery.
        for (parent, root) in [(None, "call"), (Some("parent"), "parent")] {
            let shorter = Task {
                parent_call_id: parent.map(Into::into),
                root_call_id: root.into(),
                delivery: Delivery::Pull,
                ..task.clone()
            };
            let written = to_item(&shorter);
            assert!(!written.contains_key("root_call_id") && !written.contains_key("delivery"));
            assert_eq!(Task::try_from(&written).unwrap(), shorter);
            let mut as_before = written;
            as_before.insert("root_call_id".into(), s(root));
            as_before.insert("delivery".into(), s("pull"));
            assert_eq!(Task::try_from(&as_before).unwrap(), shorter);
        }
        // The id is the key's; the status time is stored only when it is not the last change.
        assert!(!item.contains_key("id"));
        assert!(
            item.contains_key("status_timestamp"),
            "status older than the last change"
        );
        let current = Task {
            status_timestamp: task.updated_at.clone(),
            ..task.clone()
        };
        let written = to_item(&current);
        assert!(!written.contains_key("status_timestamp"));
        assert_eq!(Task::try_from(&written).unwrap(), current);
        // An item written before keeps both, and reads the same.
        let mut as_before = written;
        as_before.insert("id".into(), s(uuid));
        as_before.insert("status_timestamp".into(), s(&current.updated_at));
        assert_eq!(Task::try_from(&as_before).unwrap(), current);
        let mut written_before = item;
        written_before.insert("tree_counted".into(), AttributeValue::Bool(true));
        let read = Task::try_from(&written_before).unwrap();
        assert!(read.counted_in_tree && !read.counted_on_binding);
    }
}
