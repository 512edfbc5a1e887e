//! The table's layout: the keys of its items, built in one place.
//!
//! Every partition key, sort key and index key the store writes, asks for or reads back is
//! built (or parsed) by a function of this module, so each shape is written down once and a
//! writer and a reader cannot disagree on it. The shapes are the table's data, and the IAM
//! policies' `LeadingKeys` conditions (`infra/template.yaml`) name some of their prefixes: a
//! change here is a migration.
//!
//! | item | pk | sk | gsi1 (pk / sk) | gsi2 (pk / sk) |
//! |---|---|---|---|---|
//! | tenant | `TENANT#{id}` | `TENANT` | | |
//! | member | `MEMBER#{id}` | `MEMBER` | | |
//! | member, in its tenant (same attributes) | `TENANT#{tenant}` | `MEMBER#{id}` | | |
//! | key (hash → principal) | `KEY#{sha256}` | `KEY` | | |
//! | the owner's record of a key | `AGENT#{id}` or `MEMBER#{id}` | `KEY#{key_id}` | | |
//! | agent, by id | `AGENT#{id}` | `AGENT` | | |
//! | agent, by name (same attributes) | `TENANT#{tenant}` | `AGENT#{name}` | | |
//! | an agent's tool binding | `AGENT#{id}` | `TOOL#{name}` | | |
//! | an agent's count of tools | `AGENT#{id}` | `TOOLCOUNT` | | |
//! | binding | `BINDING#{id}` | `BINDING` | `BOUT#{caller}` / callee | `BIN#{callee}` / caller |
//! | a binding's use against its contract | `BINDING#{id}` | `USE` | | |
//! | task | `TASK#{id}` | `TASK` | pull: `QUEUE#{callee}` / `{since}#{id}`, while claimable; push: `OUTBOX#{shard}` / `{due}#{id}`, until delivered | `DEADLINE#{shard}` / `{deadline}#{id}`, while working |
//! | delivery attempt of a push task | `TASK#{id}` | `ATTEMPT#{n:04}` | | |
//! | push notification config of a task | `TASK#{id}` | `NOTIFY#{config}` | `NOTIFY-OUTBOX#{shard}` / `{due}#{task}` (older configs: `OUTBOX#{shard}`), until its task is finished and delivered | |
//! | conversation | `CONTEXT#{id}` | `CONTEXT` | | |
//! | call (lineage) | `CALL#{id}` | `CALL` | `ROOT#{tenant}#{root}` / `{at}#{id}` (older calls: `ROOT#{root}`) | |
//! | the tasks a call opened (`max_fan_out`) | `CALL#{id}` | `CHILDREN` | | |
//! | the open tasks of a tenant's tree (`max_open_in_tree`) | `TREE#{tenant}#{root}` | `OPEN` | | |
//! | audit entry | `AUDIT#{tenant}`, or `AUDIT#{tenant}#{shard}` once the tenant's logs are spread (`domain/shards.rs`) | `{at}#{id}` | | |
//! | a key holder's long-poll slot | `POLLS#{agent or member}` | `SLOT#{n}` | | |
//! | a tenant's long-poll slot | `TPOLLS#{tenant}` | `SLOT#{n}` | | |
//! | a tenant's push POST in flight | `TPUSH#{tenant}` | `SLOT#{n}` | | |
//! | word posting | `WORDS#{tenant}#{word}`, or `WORDS#{tenant}#{word}#{shard}` once the tenant's logs are spread (`domain/shards.rs`) | `{created}#{task}` | | |
//! | console session | `SESSION#{sha256}` | `SESSION` | | |
//! | a tenant's trusted issuers | `TENANT#{tenant}` | `ISSUERS` | | |
//! | an (issuer, audience) pair's tenant | `TRUST#{sha256(issuer, audience)}` | `TRUST` | | |
//! | signing key of a purpose | `SIGNING#KEYS` (cards) or `SIGNING#WEBHOOK-KEYS` | `KID#{kid}` | | |
//! | a purpose's active signing key | the same | `ACTIVE` | | |
//!
//! A task's shard is the first character of its id (`0`–`f` for the ids the gateway makes). A
//! conversation a client named is stored as `named:{tenant}:{name}`: the task's `context_id`
//! (the `conversation` index's partition) and its conversation item's key. The `words_due`
//! index is keyed by attributes of the task item: `words_due`, `shard` / `changed_at`.

use super::item::{key, Item};
use crate::domain::signing::KeyPurpose;
use crate::domain::{AgentId, KeyId, MemberId, TaskId, TenantId};

/// The sort key of a tenant's item.
pub(crate) const TENANT_SORT_KEY: &str = "TENANT";
/// The sort key of a member's item under its id.
pub(crate) const MEMBER_SORT_KEY: &str = "MEMBER";
/// The sort key of a key's item under its hash.
pub(crate) const KEY_SORT_KEY: &str = "KEY";
/// The sort key of an agent's item under its id.
pub(crate) const AGENT_SORT_KEY: &str = "AGENT";
/// The sort key of an agent's count of tools.
pub(crate) const TOOL_COUNT_SORT_KEY: &str = "TOOLCOUNT";
/// The sort key of an agent's push endpoint health (its attempt counters).
pub(crate) const ENDPOINT_HEALTH_SORT_KEY: &str = "HEALTH";
/// The sort key of a binding's item.
pub(crate) const BINDING_SORT_KEY: &str = "BINDING";
/// The sort key of a task's item (the other items of its partition have their own).
pub(crate) const TASK_SORT_KEY: &str = "TASK";
/// The sort key of a conversation's item.
pub(crate) const CONTEXT_SORT_KEY: &str = "CONTEXT";
/// The sort key of a call's item.
pub(crate) const CALL_SORT_KEY: &str = "CALL";
/// The sort key of a tenant's trusted issuers.
pub(crate) const ISSUERS_SORT_KEY: &str = "ISSUERS";
/// The sort key of an (issuer, audience) pair's claim.
pub(crate) const TRUST_SORT_KEY: &str = "TRUST";
/// The sort key of a tenant's policies.
pub(crate) const POLICIES_SORT_KEY: &str = "POLICIES";
/// The sort key of a console session's item.
pub(crate) const SESSION_SORT_KEY: &str = "SESSION";
/// The sort key of a signing purpose's pointer to its active key.
pub(crate) const ACTIVE_SIGNING_SORT_KEY: &str = "ACTIVE";

/// The prefix of the sort keys of a tenant's members in the tenant's partition.
pub(crate) const MEMBER_SORT_PREFIX: &str = "MEMBER#";
/// The prefix of the sort keys of an owner's records of its keys.
pub(crate) const KEY_SORT_PREFIX: &str = "KEY#";
/// The prefix of the sort keys of a tenant's agents by name in the tenant's partition.
pub(crate) const AGENT_NAME_SORT_PREFIX: &str = "AGENT#";
/// The prefix of the sort keys of an agent's tool bindings.
pub(crate) const TOOL_SORT_PREFIX: &str = "TOOL#";
/// The prefix of the sort keys of a push task's delivery attempts.
pub(crate) const ATTEMPT_SORT_PREFIX: &str = "ATTEMPT#";
/// The prefix of the sort keys of a task's push notification configs.
pub(crate) const NOTIFY_CONFIG_SORT_PREFIX: &str = "NOTIFY#";
/// The prefix of the sort keys of a pool's long-poll slots.
pub(crate) const SLOT_SORT_PREFIX: &str = "SLOT#";
/// The prefix of the sort keys of a signing purpose's keys.
pub(crate) const SIGNING_KEY_SORT_PREFIX: &str = "KID#";

/// The prefix of a task's partition.
const TASK_PREFIX: &str = "TASK#";
/// The prefix of a binding's partition.
const BINDING_PREFIX: &str = "BINDING#";
/// The prefix of a named conversation's stored id.
const NAMED_CONTEXT_PREFIX: &str = "named:";

/// The partition of a tenant's item, its members and its agents by name.
pub(crate) fn tenant_partition(tenant_id: &TenantId) -> String {
    format!("TENANT#{tenant_id}")
}

/// The partition of the claim of an (issuer, audience) pair by one tenant: the hash of both,
/// each length-prefixed so no two pairs share it.
pub(crate) fn trust_partition(issuer: &str, audience: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for part in [issuer, audience] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    format!("TRUST#{}", hex::encode(hash.finalize()))
}

/// The partition of a member's item under its id, and of its records of its keys.
pub(crate) fn member_partition(member_id: &MemberId) -> String {
    format!("MEMBER#{member_id}")
}

/// The sort key of a member's item in its tenant's partition.
pub(crate) fn member_sort_key(member_id: &MemberId) -> String {
    format!("{MEMBER_SORT_PREFIX}{member_id}")
}

/// The partition of a key's item under its hash, which authenticates it.
pub(crate) fn key_hash_partition(hash: &str) -> String {
    format!("KEY#{hash}")
}

/// The sort key of an owner's record of its key `key_id`.
pub(crate) fn key_sort_key(key_id: &KeyId) -> String {
    format!("{KEY_SORT_PREFIX}{key_id}")
}

/// The key id an owner's record of a key names, from its sort key.
pub(crate) fn key_id_of_sort_key(sort_key: &str) -> KeyId {
    KeyId::from(sort_key.trim_start_matches(KEY_SORT_PREFIX))
}

/// The partition of an agent's item under its id, its tools and its records of its keys.
pub(crate) fn agent_partition(agent_id: &AgentId) -> String {
    format!("AGENT#{agent_id}")
}

/// The sort key of an agent's item in its tenant's partition, by name.
pub(crate) fn agent_name_sort_key(name: &str) -> String {
    format!("{AGENT_NAME_SORT_PREFIX}{name}")
}

/// The agent's name, from the sort key of its item in its tenant's partition.
pub(crate) fn agent_name_of_sort_key(sort_key: &str) -> Option<&str> {
    sort_key.strip_prefix(AGENT_NAME_SORT_PREFIX)
}

/// The sort key of an agent's tool binding `tool`.
pub(crate) fn tool_sort_key(tool: &str) -> String {
    format!("{TOOL_SORT_PREFIX}{tool}")
}

/// The partition of a binding's item.
pub(crate) fn binding_partition(binding_id: &str) -> String {
    format!("{BINDING_PREFIX}{binding_id}")
}

/// The key of a binding's use against its contract.
pub(crate) fn binding_use_key(binding_id: &str) -> Item {
    key(binding_partition(binding_id), "USE")
}

/// The binding a partition is of, when it is a binding's.
pub(crate) fn binding_id_of_partition(partition: &str) -> Option<&str> {
    partition.strip_prefix(BINDING_PREFIX)
}

/// A caller's partition of the outbound bindings index (`gsi1pk`).
pub(crate) fn outbound_bindings_partition(caller_id: &AgentId) -> String {
    format!("BOUT#{caller_id}")
}

/// A callee's partition of the inbound bindings index (`gsi2pk`).
pub(crate) fn inbound_bindings_partition(callee_id: &AgentId) -> String {
    format!("BIN#{callee_id}")
}

/// The partition of a task's item, its attempts and its notification configs.
pub(crate) fn task_partition(task_id: &TaskId) -> String {
    format!("{TASK_PREFIX}{task_id}")
}

/// The task a partition is of, when it is a task's.
pub(crate) fn task_id_of_partition(partition: &str) -> Option<TaskId> {
    partition
        .strip_prefix(TASK_PREFIX)
        .map(|id| TaskId::from(id.to_owned()))
}

/// The shard of the outbox, deadline and due lists a task is on: the first character of its id.
pub(crate) fn task_shard(task_id: &TaskId) -> char {
    task_id.chars().next().unwrap_or('0')
}

/// The task's shard of the word postings' due list (`words_due`): the first hex digit of its id.
pub(crate) fn search_shard(task_id: &TaskId) -> String {
    task_shard(task_id).to_string()
}

/// A callee's partition of the queue index (`gsi1pk`): its claimable pull tasks.
pub(crate) fn queue_partition(callee_id: &AgentId) -> String {
    format!("QUEUE#{callee_id}")
}

/// A task's place on its callee's queue (`gsi1sk`): in order of `since`.
pub(crate) fn queue_sort_key(since: &str, task_id: &TaskId) -> String {
    format!("{since}#{task_id}")
}

/// A shard's partition of the outbox index (`gsi1pk`): push tasks (and older configs).
pub(crate) fn outbox_shard_partition(shard: char) -> String {
    format!("OUTBOX#{shard}")
}

/// A shard's partition of the notification configs' own outbox (`gsi1pk`).
pub(crate) fn notify_outbox_shard_partition(shard: char) -> String {
    format!("NOTIFY-OUTBOX#{shard}")
}

/// A shard's partition of the deadline index (`gsi2pk`): working tasks by claim deadline.
pub(crate) fn deadline_shard_partition(shard: char) -> String {
    format!("DEADLINE#{shard}")
}

/// A task's (or its config's) entry on a due list, the outbox (`gsi1sk`) or the deadlines
/// (`gsi2sk`): falling due at `due`, a moment. Both lists share it, so a sweep moves either.
pub(crate) fn due_sort_key(due: &str, task_id: &TaskId) -> String {
    format!("{due}#{task_id}")
}

/// The sort key of a push task's delivery attempt `number`.
pub(crate) fn attempt_sort_key(number: u64) -> String {
    format!("{ATTEMPT_SORT_PREFIX}{number:04}")
}

/// The sort key of a task's push notification config `config_id`.
pub(crate) fn notify_config_sort_key(config_id: &str) -> String {
    format!("{NOTIFY_CONFIG_SORT_PREFIX}{config_id}")
}

/// The config an item of a task's partition is, from its sort key, when it is a config.
pub(crate) fn config_id_of_sort_key(sort_key: &str) -> Option<&str> {
    sort_key.strip_prefix(NOTIFY_CONFIG_SORT_PREFIX)
}

/// How a task's conversation is stored: an id the gate issued as it is; a name an A2A client
/// gave, within its tenant (`named:{tenant}:{name}`), so that the same name in two tenants is
/// two conversations, and no tenant's names share an index partition with another's.
pub(crate) fn stored_context(tenant: &TenantId, context_id: &str, named: bool) -> String {
    match named {
        true => format!("{NAMED_CONTEXT_PREFIX}{tenant}:{context_id}"),
        false => context_id.to_owned(),
    }
}

/// The conversation of a stored `context_id` attribute: its id as the API shows it, and whether
/// a client named it.
pub(crate) fn shown_context(tenant: &TenantId, stored: String) -> (String, bool) {
    let name = stored
        .strip_prefix(NAMED_CONTEXT_PREFIX)
        .and_then(|rest| rest.strip_prefix(tenant.as_str()))
        .and_then(|rest| rest.strip_prefix(':'));
    match name {
        Some(name) => (name.to_owned(), true),
        None => (stored, false),
    }
}

/// The partition of a conversation's item, by its stored id ([`stored_context`]).
pub(crate) fn context_partition(stored_context: &str) -> String {
    format!("CONTEXT#{stored_context}")
}

/// The partition of a call's item.
pub(crate) fn call_partition(call_id: &str) -> String {
    format!("CALL#{call_id}")
}

/// The count of the tasks call `call_id` opened.
pub(crate) fn call_children_key(call_id: &str) -> Item {
    key(call_partition(call_id), "CHILDREN")
}

/// The count of the open tasks of the tenant's tree `root_call_id`.
pub(crate) fn tree_open_key(tenant_id: &TenantId, root_call_id: &str) -> Item {
    key(format!("TREE#{tenant_id}#{root_call_id}"), "OPEN")
}

/// The index partition of one tenant's call tree: the tenant in the key, so that a caller of
/// another tenant naming this tree's root in `X-Parent-Call` starts a tree of its own tenant.
pub(crate) fn call_tree_partition(tenant_id: &TenantId, root_call_id: &str) -> String {
    format!("ROOT#{tenant_id}#{root_call_id}")
}

/// The index partition of a call tree written before trees had one per tenant (`gsi1pk`).
pub(crate) fn older_call_tree_partition(root_call_id: &str) -> String {
    format!("ROOT#{root_call_id}")
}

/// A call's place in its tree (`gsi1sk`): by when it was made.
pub(crate) fn call_tree_sort_key(at: &str, call_id: &str) -> String {
    format!("{at}#{call_id}")
}

/// The partition of a tenant's audit log.
pub(crate) fn audit_partition(tenant_id: &TenantId, shard: u16) -> String {
    match shard {
        0 => format!("AUDIT#{tenant_id}"),
        shard => format!("AUDIT#{tenant_id}#{shard}"),
    }
}

/// The shard an audit entry's partition names: `0` for the log's first partition.
pub(crate) fn audit_shard_of_partition(partition: &str) -> u16 {
    partition
        .strip_prefix("AUDIT#")
        .and_then(|rest| rest.split_once('#'))
        .and_then(|(_, shard)| shard.parse().ok())
        .unwrap_or(0)
}

/// Where an audit entry sorts in its tenant's log: `{at}#{id}`.
pub(crate) fn audit_sort_key(at: &str, id: &str) -> String {
    format!("{at}#{id}")
}

/// The lowest sort key past every entry at `since`: a sort key is `{at}#{id}`, and `~` sorts
/// after every id.
pub(crate) fn audit_sort_key_past(since: &str) -> String {
    format!("{since}#~")
}

/// The moment a sort key of the `{moment}#…` shape starts with (audit entries, postings).
pub(crate) fn moment_of_sort_key(sort_key: &str) -> Option<&str> {
    sort_key.split_once('#').map(|(moment, _)| moment)
}

/// The bound every `{moment}#…` sort key at or before `top` sorts below (and every later one
/// above): `$` sorts after `#`.
pub(crate) fn moment_sort_key_bound(top: &str) -> String {
    format!("{top}$")
}

/// The partition of a key holder's (an agent's or a member's) long-poll slots.
pub(crate) fn holder_polls_partition(holder_id: &str) -> String {
    format!("POLLS#{holder_id}")
}

/// The partition of the long-poll slots every key holder of a tenant shares.
pub(crate) fn tenant_polls_partition(tenant_id: &TenantId) -> String {
    format!("TPOLLS#{tenant_id}")
}

/// The partition of a tenant's slots for push POSTs in flight.
pub(crate) fn tenant_pushes_partition(tenant_id: &TenantId) -> String {
    format!("TPUSH#{tenant_id}")
}

/// The sort key of a pool's long-poll slot `slot`.
pub(crate) fn slot_sort_key(slot: u32) -> String {
    format!("{SLOT_SORT_PREFIX}{slot}")
}

/// The slot number of a long-poll slot, from its sort key.
pub(crate) fn slot_of_sort_key(sort_key: &str) -> Option<u32> {
    sort_key.strip_prefix(SLOT_SORT_PREFIX)?.parse().ok()
}

/// The partition of one tenant's postings of `word`: its first, or one more once the tenant's
/// logs are spread (`domain/shards.rs`).
pub(crate) fn posting_partition(tenant: &TenantId, word: &str, shard: u16) -> String {
    match shard {
        0 => format!("WORDS#{tenant}#{word}"),
        shard => format!("WORDS#{tenant}#{word}#{shard}"),
    }
}

/// A posting's sort key: the task's place in a search with words (its creation, then its id).
pub(crate) fn posting_sort_key(created_at: &str, task_id: &TaskId) -> String {
    format!("{created_at}#{task_id}")
}

/// The task's creation and id a posting's sort key holds.
pub(crate) fn posting_place(sort_key: &str) -> Option<(&str, &str)> {
    sort_key.split_once('#')
}

/// The partition of a console session's item, by the hash of its token.
pub(crate) fn session_partition(hash: &str) -> String {
    format!("SESSION#{hash}")
}

/// The partition of one purpose's signing keys and its `ACTIVE` pointer. Card keys keep the
/// partition they had before purposes existed.
pub(crate) fn signing_partition(purpose: KeyPurpose) -> &'static str {
    match purpose {
        KeyPurpose::Cards => "SIGNING#KEYS",
        KeyPurpose::Webhooks => "SIGNING#WEBHOOK-KEYS",
    }
}

/// The sort key of the signing key `kid` in its purpose's partition.
pub(crate) fn signing_key_sort_key(kid: &str) -> String {
    format!("{SIGNING_KEY_SORT_PREFIX}{kid}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shape as the table's items and the IAM policies have it: a change to one of these
    /// is a change to the stored data.
    #[test]
    fn every_key_has_the_shape_the_table_holds() {
        let (tenant, agent, task) = (TenantId::from("t"), AgentId::from("a"), TaskId::from("f1"));
        let shapes = [
            (tenant_partition(&tenant), "TENANT#t"),
            (member_partition(&MemberId::from("m")), "MEMBER#m"),
            (member_sort_key(&MemberId::from("m")), "MEMBER#m"),
            (key_hash_partition("h"), "KEY#h"),
            (key_sort_key(&KeyId::from("k")), "KEY#k"),
            (agent_partition(&agent), "AGENT#a"),
            (agent_name_sort_key("n"), "AGENT#n"),
            (tool_sort_key("x"), "TOOL#x"),
            (binding_partition("b"), "BINDING#b"),
            (outbound_bindings_partition(&agent), "BOUT#a"),
            (inbound_bindings_partition(&agent), "BIN#a"),
            (task_partition(&task), "TASK#f1"),
            (search_shard(&task), "f"),
            (queue_partition(&agent), "QUEUE#a"),
            (queue_sort_key("at", &task), "at#f1"),
            (outbox_shard_partition(task_shard(&task)), "OUTBOX#f"),
            (notify_outbox_shard_partition('0'), "NOTIFY-OUTBOX#0"),
            (deadline_shard_partition('9'), "DEADLINE#9"),
            (due_sort_key("at", &task), "at#f1"),
            (attempt_sort_key(7), "ATTEMPT#0007"),
            (attempt_sort_key(12345), "ATTEMPT#12345"),
            (notify_config_sort_key("c"), "NOTIFY#c"),
            (stored_context(&tenant, "c", true), "named:t:c"),
            (stored_context(&tenant, "c", false), "c"),
            (context_partition("c"), "CONTEXT#c"),
            (call_partition("c"), "CALL#c"),
            (call_tree_partition(&tenant, "r"), "ROOT#t#r"),
            (older_call_tree_partition("r"), "ROOT#r"),
            (call_tree_sort_key("at", "c"), "at#c"),
            (audit_partition(&tenant, 0), "AUDIT#t"),
            (audit_partition(&tenant, 7), "AUDIT#t#7"),
            (audit_shard_of_partition("AUDIT#t#7").to_string(), "7"),
            (audit_shard_of_partition("AUDIT#t").to_string(), "0"),
            (audit_sort_key("at", "i"), "at#i"),
            (audit_sort_key_past("at"), "at#~"),
            (moment_sort_key_bound("at"), "at$"),
            (holder_polls_partition("h"), "POLLS#h"),
            (tenant_polls_partition(&tenant), "TPOLLS#t"),
            (tenant_pushes_partition(&tenant), "TPUSH#t"),
            (slot_sort_key(3), "SLOT#3"),
            (posting_partition(&tenant, "w", 0), "WORDS#t#w"),
            (posting_partition(&tenant, "w", 12), "WORDS#t#w#12"),
            (posting_sort_key("at", &task), "at#f1"),
            (session_partition("h"), "SESSION#h"),
            (
                signing_partition(KeyPurpose::Cards).to_owned(),
                "SIGNING#KEYS",
            ),
            (
                signing_partition(KeyPurpose::Webhooks).to_owned(),
                "SIGNING#WEBHOOK-KEYS",
            ),
            (signing_key_sort_key("k"), "KID#k"),
        ];
        for (built, shape) in shapes {
            assert_eq!(built, shape);
        }
        assert_eq!(task_shard(&TaskId::from("")), '0');
    }

    #[test]
    fn a_key_read_back_gives_what_it_was_built_from() {
        let task = TaskId::from("f1");
        assert_eq!(task_id_of_partition(&task_partition(&task)), Some(task));
        assert_eq!(task_id_of_partition("BINDING#f1"), None);
        assert_eq!(binding_id_of_partition(&binding_partition("b")), Some("b"));
        assert_eq!(binding_id_of_partition("TASK#b"), None);
        assert_eq!(key_id_of_sort_key("KEY#k"), KeyId::from("k"));
        assert_eq!(agent_name_of_sort_key("AGENT#n"), Some("n"));
        assert_eq!(config_id_of_sort_key("NOTIFY#c"), Some("c"));
        assert_eq!(config_id_of_sort_key("TASK"), None);
        assert_eq!(slot_of_sort_key("SLOT#3"), Some(3));
        assert_eq!(slot_of_sort_key("SLOT#x"), None);
        assert_eq!(moment_of_sort_key("at#i"), Some("at"));
        assert_eq!(moment_of_sort_key("at"), None);
        assert_eq!(posting_place("at#f1"), Some(("at", "f1")));
        let tenant = TenantId::from("t");
        let named = stored_context(&tenant, "c", true);
        assert_eq!(shown_context(&tenant, named), ("c".to_owned(), true));
        assert_eq!(
            shown_context(&TenantId::from("u"), "named:t:c".to_owned()),
            ("named:t:c".to_owned(), false)
        );
    }
}
