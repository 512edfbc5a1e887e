//! An AWS SDK client built the first time a request needs it.
//!
//! Every route reads DynamoDB, but most never touch SQS or KMS; building those two clients at
//! cold start cost every function about 0.2 ms for nothing (docs/benchmarks.md). Functions that
//! do use them pay the same cost once, on their first call.

use std::fmt;
use std::sync::{Arc, OnceLock};

/// A client that is either given ready-made or built from a recipe on first use.
pub struct OnFirstUse<C>(Arc<Source<C>>);

enum Source<C> {
    Ready(C),
    Deferred {
        client: OnceLock<C>,
        build: Box<dyn Fn() -> C + Send + Sync>,
    },
}

impl<C> OnFirstUse<C> {
    /// A client `build` makes when first asked for.
    pub fn new(build: impl Fn() -> C + Send + Sync + 'static) -> OnFirstUse<C> {
        OnFirstUse(Arc::new(Source::Deferred {
            client: OnceLock::new(),
            build: Box::new(build),
        }))
    }

    /// The client, built now if this is the first use.
    pub fn get(&self) -> &C {
        match self.0.as_ref() {
            Source::Ready(client) => client,
            Source::Deferred { client, build } => client.get_or_init(build),
        }
    }

    /// Whether the client exists yet.
    pub fn is_built(&self) -> bool {
        match self.0.as_ref() {
            Source::Ready(_) => true,
            Source::Deferred { client, .. } => client.get().is_some(),
        }
    }
}

impl<C> From<C> for OnFirstUse<C> {
    fn from(client: C) -> OnFirstUse<C> {
        OnFirstUse(Arc::new(Source::Ready(client)))
    }
}

impl<C> Clone for OnFirstUse<C> {
    fn clone(&self) -> Self {
        OnFirstUse(Arc::clone(&self.0))
    }
}

impl<C> fmt::Debug for OnFirstUse<C> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("OnFirstUse")
            .field("built", &self.is_built())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn builds_once_on_first_use_and_is_shared_by_clones() {
        let builds = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&builds);
        let client = OnFirstUse::new(move || counted.fetch_add(1, Ordering::SeqCst) + 100);
        let copy = client.clone();
        assert!(!client.is_built());
        assert_eq!(builds.load(Ordering::SeqCst), 0);
        assert_eq!(*copy.get(), 100);
        assert_eq!(*client.get(), 100);
        assert!(client.is_built());
        assert_eq!(builds.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_ready_client_is_used_as_given() {
        let client = OnFirstUse::from(7);
        assert!(client.is_built());
        assert_eq!(*client.get(), 7);
    }
}
