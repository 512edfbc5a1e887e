//! Write sharding: one hot log spread over a number of partitions that grows with its load.
//!
//! DynamoDB serves at most 1,000 write units a second on one partition key, whatever the
//! table's capacity (docs/capacity.md). A log that every task of a tenant writes to (its audit
//! log, a word's postings) is therefore spread over `count` partitions, each item in the one
//! its key hashes to.
//! The count starts at one (the log's partition as it always was) and only ever doubles, when
//! the store throttles a write to it; a reader reads every partition up to the count and merges
//! them by their common sort order, so no item written under a smaller count is missed.

use sha2::{Digest, Sha256};

/// How many partitions one log is spread over: a power of two from one to [`ShardCount::MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ShardCount(u16);

impl Default for ShardCount {
    fn default() -> Self {
        ShardCount::ONE
    }
}

impl ShardCount {
    /// One partition: the log as it was before it was ever spread.
    pub const ONE: ShardCount = ShardCount(1);
    /// The most partitions a log is spread over: at three write units a task, 256 partitions
    /// of 1,000 units a second each carry 85,000 tasks a second.
    pub const MAX: ShardCount = ShardCount(256);

    /// The count as stored: anything that is not a power of two within range is taken as the
    /// largest power of two below it (at least one, at most [`ShardCount::MAX`]).
    pub fn from_stored(stored: u64) -> ShardCount {
        let bounded = stored.clamp(1, u64::from(ShardCount::MAX.0));
        let power = 1u64 << (63 - bounded.leading_zeros());
        ShardCount(u16::try_from(power).unwrap_or(ShardCount::MAX.0))
    }

    /// The number of partitions.
    pub fn get(self) -> u16 {
        self.0
    }

    /// The count after a throttled write: twice as many, or `None` at [`ShardCount::MAX`].
    pub fn doubled(self) -> Option<ShardCount> {
        (self < ShardCount::MAX).then(|| ShardCount(self.0 * 2))
    }

    /// The partition (`0` to `count - 1`) of the item keyed by `key`: the first two bytes of the
    /// key's SHA-256, so any key spreads evenly whatever its shape.
    pub fn shard_of(self, key: &str) -> u16 {
        let hash = Sha256::digest(key.as_bytes());
        u16::from_be_bytes([hash[0], hash[1]]) % self.0
    }

    /// Every partition, `0` first.
    pub fn shards(self) -> impl Iterator<Item = u16> {
        0..self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_count_is_a_power_of_two_within_range() {
        let counts = [0, 1, 2, 3, 5, 16, 17, 255, 256, 257, 100_000];
        let read: Vec<u16> = counts
            .map(|stored| ShardCount::from_stored(stored).get())
            .into();
        assert_eq!(read, [1, 1, 2, 2, 4, 16, 16, 128, 256, 256, 256]);
    }

    #[test]
    fn a_count_doubles_up_to_its_most() {
        assert_eq!(ShardCount::ONE.doubled(), Some(ShardCount(2)));
        assert_eq!(ShardCount(128).doubled(), Some(ShardCount::MAX));
        assert_eq!(ShardCount::MAX.doubled(), None);
    }

    #[test]
    fn keys_spread_over_every_partition_and_keep_theirs_for_a_count() {
        let count = ShardCount(16);
        let mut seen = [0u32; 16];
        for n in 0..1_600 {
            let key = format!("task-{n}");
            let shard = count.shard_of(&key);
            assert_eq!(shard, count.shard_of(&key));
            seen[usize::from(shard)] += 1;
        }
        // Each of 16 partitions gets its share of 1,600 keys, give or take.
        assert!(seen.iter().all(|n| (50..=150).contains(n)), "{seen:?}");
        assert_eq!(ShardCount::ONE.shard_of("any"), 0);
        assert_eq!(count.shards().collect::<Vec<_>>().len(), 16);
    }
}
