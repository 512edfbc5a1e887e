//! Partition keys by their shape: each id in a key replaced by the role its owner plays in the
//! run (`QUEUE#{callee}`), and how the load on keys of that shape grows with the rate.

use std::collections::HashMap;

/// How the load on a key grows as a scenario's tasks per second grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Spread {
    /// One key takes its share of every task (a callee's queue, a tenant's audit log, a word):
    /// its units per second are its units per task times the rate.
    Shared,
    /// The tasks are spread over a set of keys by their ids (the deadline shards, a spread
    /// audit log), this many: each key takes the shape's units per task times the rate, over
    /// the number of shards.
    Sharded(u16),
    /// Each task has keys of its own (its item, its call, its conversation): their load is one
    /// task's, whatever the rate.
    OneTask,
}

/// The roles of the ids a run made, for naming keys by their shape.
#[derive(Debug, Clone, Default)]
pub struct Roles {
    ids: HashMap<String, (String, Spread)>,
    /// Over how many partitions the run's tenants' logs (audit entries, word postings) are
    /// spread, when more than one.
    log_shards: Option<u16>,
}

/// The shards of the deadline, outbox and `words_due` lists: one per first hex digit of a
/// task's id.
const TASK_ID_SHARDS: u16 = forgebench::store::DEADLINE_SHARDS.len() as u16;

/// The logs a tenant's count spreads (`domain/shards.rs`), by their keys' first segment, and how
/// many segments name the logical key before its shard: `AUDIT#{tenant}`, `WORDS#{tenant}#{word}`.
const SPREAD_LOGS: [(&str, usize); 2] = [("AUDIT", 2), ("WORDS", 3)];

/// Separators inside a key, kept in its shape.
const SEPARATORS: [char; 3] = ['#', '|', ':'];

/// What an id-like segment is after each prefix, when no role was given for it.
const ROLE_AFTER: [(&str, &str, Spread); 12] = [
    ("TASK", "task", Spread::OneTask),
    ("CALL", "call", Spread::OneTask),
    ("CONTEXT", "context", Spread::OneTask),
    ("TREE", "tenant", Spread::Shared),
    ("AGENT", "agent", Spread::Shared),
    ("POLLS", "agent", Spread::Shared),
    ("QUEUE", "agent", Spread::Shared),
    ("TENANT", "tenant", Spread::Shared),
    ("AUDIT", "tenant", Spread::Shared),
    ("TPOLLS", "tenant", Spread::Shared),
    ("TPUSH", "tenant", Spread::Shared),
    ("BINDING", "binding", Spread::Shared),
];

impl Roles {
    /// Notes that the run's tenants' logs are spread over `count` partitions: `AUDIT#{tenant}`
    /// and `AUDIT#{tenant}#{n}` are then one shape, `AUDIT#{tenant}#{shard}`, of `count` keys,
    /// and a word's postings `WORDS#{tenant}#{word}#{shard}`.
    pub fn logs_spread(&mut self, count: u16) {
        self.log_shards = (count > 1).then_some(count);
    }

    /// Names `id` by `role` in every key it appears in.
    pub fn name(&mut self, id: &str, role: &str, spread: Spread) {
        self.ids.insert(id.to_owned(), (role.to_owned(), spread));
    }

    /// The logical key a partition of a spread log belongs to, its shard left out
    /// (`AUDIT#{tenant}`, `WORDS#{tenant}#{word}`); empty for any other partition, whose shape's
    /// shards are all one key's.
    pub fn spread_group(&self, partition: &str) -> String {
        let kept = self.spread_log(partition).map_or(0, |(kept, _)| kept);
        let segments: Vec<&str> = partition.split('#').take(kept).collect();
        segments.join("#")
    }

    /// Of a partition of a spread log: how many of its segments name the logical key (the
    /// rest is its shard), and the log's count.
    fn spread_log(&self, partition: &str) -> Option<(usize, u16)> {
        let count = self.log_shards?;
        let prefix = partition.split('#').next()?;
        SPREAD_LOGS
            .iter()
            .find(|(log, _)| *log == prefix)
            .map(|(_, kept)| (*kept, count))
    }

    /// The shape of `partition` and how its load grows: registered ids by their role; an
    /// id-like segment by what its prefix says (`TASK#{task}`), `{id}` when nothing does; a
    /// word posting's word as `{word}`; a one- or two-hex-digit segment after the first as
    /// `{shard}`; anything else as it is.
    pub fn shape(&self, partition: &str) -> (String, Spread) {
        let segments: Vec<&str> = partition.split(SEPARATORS).collect();
        if let Some((kept, count)) = self.spread_log(partition) {
            // The logical key's segments as any key's, then its shard, whichever partition.
            let shaped: Vec<String> = (0..kept.min(segments.len()))
                .map(|index| {
                    let previous = index.checked_sub(1).map(|i| segments[i]);
                    self.segment(segments[0], index, previous, segments[index])
                        .0
                })
                .collect();
            return (
                format!("{}#{{shard}}", shaped.join("#")),
                Spread::Sharded(count),
            );
        }
        let separators = partition.matches(SEPARATORS);
        let mut spread = Spread::Shared;
        let mut shaped: Vec<String> = Vec::new();
        for (index, segment) in segments.iter().enumerate() {
            let previous = index.checked_sub(1).map(|i| segments[i]);
            let (text, this) = self.segment(segments[0], index, previous, segment);
            spread = spread.max(this);
            shaped.push(text);
        }
        let mut shape = String::new();
        for (text, separator) in shaped.iter().zip(separators.chain(std::iter::repeat(""))) {
            shape.push_str(text);
            shape.push_str(separator);
        }
        (shape, spread)
    }

    fn segment(
        &self,
        first: &str,
        index: usize,
        previous: Option<&str>,
        segment: &str,
    ) -> (String, Spread) {
        if let Some((role, spread)) = self.ids.get(segment) {
            return (format!("{{{role}}}"), *spread);
        }
        if first == "WORDS" && index == 2 {
            return ("{word}".to_owned(), Spread::Shared);
        }
        if index > 0 && (1..=2).contains(&segment.len()) && is_hex(segment) {
            return ("{shard}".to_owned(), Spread::Sharded(TASK_ID_SHARDS));
        }
        if !is_id(segment) {
            return (segment.to_owned(), Spread::Shared);
        }
        let after = ROLE_AFTER
            .iter()
            .find(|(prefix, _, _)| previous == Some(*prefix));
        match after {
            Some((_, role, spread)) => (format!("{{{role}}}"), *spread),
            None => ("{id}".to_owned(), Spread::Shared),
        }
    }
}

fn is_hex(segment: &str) -> bool {
    segment.chars().all(|c| c.is_ascii_hexdigit())
}

/// Whether a segment reads as an id (a UUID, a hash, a generated name) rather than a word of
/// the layout: eight characters or more of letters, digits, `-` and `_`, a digit among them.
fn is_id(segment: &str) -> bool {
    segment.len() >= 8
        && segment.chars().any(|c| c.is_ascii_digit())
        && segment
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    const CALLEE: &str = "0b6e6a52-8d4f-4bb4-9a4e-3f0c2d1e9a77";
    const TENANT: &str = "5f1d0c9e-2a7b-4c3d-8e6f-1a2b3c4d5e6f";

    fn roles() -> Roles {
        let mut roles = Roles::default();
        roles.name(CALLEE, "callee", Spread::Shared);
        roles.name(TENANT, "tenant", Spread::Shared);
        roles
    }

    #[test]
    fn ids_are_named_by_their_role_and_layout_words_kept() {
        let roles = roles();
        assert_eq!(
            roles.shape(&format!("QUEUE#{CALLEE}")),
            ("QUEUE#{callee}".to_owned(), Spread::Shared)
        );
        assert_eq!(
            roles.shape(&format!("AUDIT#{TENANT}")),
            ("AUDIT#{tenant}".to_owned(), Spread::Shared)
        );
        // An index keyed by the agent's id itself.
        assert_eq!(roles.shape(CALLEE), ("{callee}".to_owned(), Spread::Shared));
        assert_eq!(
            roles.shape(&format!("WORDS#{TENANT}#invoice")),
            ("WORDS#{tenant}#{word}".to_owned(), Spread::Shared)
        );
    }

    #[test]
    fn a_task_own_keys_grow_with_one_task_and_shards_with_their_count() {
        let roles = roles();
        let task = "9d2c4e1a-7b3f-4a5d-b6c7-d8e9f0a1b2c3";
        assert_eq!(
            roles.shape(&format!("TASK#{task}")),
            ("TASK#{task}".to_owned(), Spread::OneTask)
        );
        assert_eq!(
            roles.shape("DEADLINE#c"),
            ("DEADLINE#{shard}".to_owned(), Spread::Sharded(16))
        );
        assert_eq!(
            roles.shape("due|7"),
            ("due|{shard}".to_owned(), Spread::Sharded(16))
        );
        // An id no role names and no prefix explains counts as shared: the cautious reading.
        assert_eq!(
            roles.shape(&format!("ROOT#{TENANT}#{task}")),
            ("ROOT#{tenant}#{id}".to_owned(), Spread::Shared)
        );
    }

    #[test]
    fn a_spread_logs_is_one_sharded_shape_its_first_partition_included() {
        let mut roles = roles();
        roles.logs_spread(256);
        let shape = ("AUDIT#{tenant}#{shard}".to_owned(), Spread::Sharded(256));
        assert_eq!(roles.shape(&format!("AUDIT#{TENANT}")), shape);
        assert_eq!(roles.shape(&format!("AUDIT#{TENANT}#255")), shape);
        assert_eq!(
            roles.shape(&format!("WORDS#{TENANT}#invoice#17")),
            (
                "WORDS#{tenant}#{word}#{shard}".to_owned(),
                Spread::Sharded(256)
            )
        );
        assert_eq!(
            roles.shape(&format!("WORDS#{TENANT}#invoice")),
            (
                "WORDS#{tenant}#{word}#{shard}".to_owned(),
                Spread::Sharded(256)
            )
        );
        let group = roles.spread_group(&format!("WORDS#{TENANT}#invoice#17"));
        assert_eq!(
            group,
            roles.spread_group(&format!("WORDS#{TENANT}#invoice"))
        );
        assert_ne!(
            group,
            roles.spread_group(&format!("WORDS#{TENANT}#ledger#17"))
        );
        roles.logs_spread(1);
        assert_eq!(
            roles.shape(&format!("AUDIT#{TENANT}")),
            ("AUDIT#{tenant}".to_owned(), Spread::Shared)
        );
    }

    #[test]
    fn a_named_role_overrides_what_the_prefix_says() {
        let mut roles = roles();
        let context = "2e4f6a8b-1c3d-4e5f-a6b7-c8d9e0f1a2b3";
        roles.name(context, "conversation", Spread::Shared);
        assert_eq!(
            roles.shape(&format!("CONTEXT#{context}")),
            ("CONTEXT#{conversation}".to_owned(), Spread::Shared)
        );
        assert_eq!(
            roles.shape(&format!("named:{TENANT}:weekly-close")),
            ("named:{tenant}:weekly-close".to_owned(), Spread::Shared)
        );
    }
}
