//! A per-process cache of store lookups that may be a little stale: each entry is trusted for a
//! time the caller names, dropped at once when this process changes what it holds, and the whole
//! cache is emptied when it reaches its bound (it refills from the store).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Entries past this count are dropped wholesale.
const MAX_ENTRIES: usize = 10_000;

/// Values by key, each with the moment it was looked up.
#[derive(Debug)]
pub(crate) struct ExpiringCache<V> {
    entries: Mutex<HashMap<String, (V, Instant)>>,
}

impl<V> Default for ExpiringCache<V> {
    fn default() -> Self {
        ExpiringCache {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl<V: Clone> ExpiringCache<V> {
    /// The value under `key`, when it was looked up less than `ttl` ago.
    pub(crate) fn get(&self, key: &str, ttl: Duration) -> Option<V> {
        let entries = self.entries.lock().ok()?;
        let (value, at) = entries.get(key)?;
        (at.elapsed() < ttl).then(|| value.clone())
    }

    /// Notes `value`, looked up now.
    pub(crate) fn put(&self, key: String, value: V) {
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
            entries.insert(key, (value, Instant::now()));
        }
    }

    /// Drops everything it holds.
    pub(crate) fn clear(&self) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.clear();
        }
    }

    /// Drops what is known of `key`.
    pub(crate) fn forget(&self, key: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_lives_for_the_time_asked_and_goes_when_forgotten() {
        let cache = ExpiringCache::default();
        cache.put("k".into(), 7);
        assert_eq!(cache.get("k", Duration::from_secs(60)), Some(7));
        assert_eq!(cache.get("k", Duration::ZERO), None);
        cache.forget("k");
        assert_eq!(cache.get("k", Duration::from_secs(60)), None);
    }

    #[test]
    fn a_full_cache_starts_again_empty() {
        let cache = ExpiringCache::default();
        for n in 0..MAX_ENTRIES {
            cache.put(n.to_string(), n);
        }
        cache.put("last".into(), 0);
        assert_eq!(cache.get("0", Duration::from_secs(60)), None);
        assert_eq!(cache.get("last", Duration::from_secs(60)), Some(0));
    }
}
