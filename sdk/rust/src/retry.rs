//! When a request is sent again, and how long to wait first.

use std::time::Duration;

/// The longest `Retry-After` the client honours before giving up instead.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// `base` give or take 25 %, so many clients that failed together do not retry together.
pub fn jittered(base: Duration) -> Duration {
    let random = getrandom::u32().unwrap_or(u32::MAX / 2);
    let factor = 0.75 + 0.5 * (f64::from(random) / f64::from(u32::MAX));
    base.mul_f64(factor)
}

/// A pause doubling from `initial` with each failure in a row, capped at `maximum`, jittered.
#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    maximum: Duration,
    failures: u32,
}

impl Backoff {
    pub fn new(initial: Duration, maximum: Duration) -> Backoff {
        Backoff {
            initial,
            maximum,
            failures: 0,
        }
    }

    /// The pause of a request retry: 0.5 s doubling to 8 s.
    pub fn for_requests() -> Backoff {
        Backoff::new(Duration::from_millis(500), Duration::from_secs(8))
    }

    /// The pause of the serve loop through passing trouble: 0.5 s doubling to 30 s.
    pub fn for_serve() -> Backoff {
        Backoff::new(Duration::from_millis(500), Duration::from_secs(30))
    }

    /// The pause after one more failure in a row.
    pub fn next_delay(&mut self) -> Duration {
        let doubled = self
            .initial
            .saturating_mul(2u32.saturating_pow(self.failures.min(20)));
        self.failures = self.failures.saturating_add(1);
        jittered(doubled.min(self.maximum))
    }

    /// A success: the next failure starts from the initial pause again.
    pub fn reset(&mut self) {
        self.failures = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_doubles_and_stays_under_its_cap() {
        let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(4));
        let pauses: Vec<Duration> = (0..5).map(|_| backoff.next_delay()).collect();
        assert!(
            pauses[0] >= Duration::from_millis(750) && pauses[0] <= Duration::from_millis(1250)
        );
        assert!(pauses[1] >= Duration::from_millis(1500));
        assert!(pauses.iter().all(|pause| *pause <= Duration::from_secs(5)));
        backoff.reset();
        assert!(backoff.next_delay() <= Duration::from_millis(1250));
    }
}
