//! How often a waiting request looks again. A thing that changed a moment ago is likely to change
//! again soon (a claimed task is answered, a busy queue gets more work); one that has been quiet
//! for a while is likely to stay so. So a wait looks again after a fixed share of the time its
//! subject has been quiet (`1 / divisor`), never sooner than the first interval and never later
//! than the ceiling: a change that comes `t` after the last one reaches its waiter about
//! `t / divisor` later at worst (up to the ceiling), while an idle wait settles at one read per
//! ceiling. A larger divisor buys a fresher answer soon after a change with more reads while the
//! interval grows; the ceiling alone sets what a long idle wait costs.

use std::time::Duration;

/// The intervals of one kind of wait (a caller's wait, a callee's claim, an event stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollPace {
    first: Duration,
    ceiling: Duration,
    divisor: u32,
}

impl PollPace {
    /// A pace from `first` up to `ceiling` (a ceiling below `first` is `first`: a fixed pace)
    /// that looks again after `1 / divisor` of the quiet time (a divisor of 0 is 1).
    pub fn new(first: Duration, ceiling: Duration, divisor: u32) -> PollPace {
        PollPace {
            first,
            ceiling: ceiling.max(first),
            divisor: divisor.max(1),
        }
    }

    /// The interval before the next look at a subject quiet for `quiet`.
    pub fn after_quiet(&self, quiet: Duration) -> Duration {
        (quiet / self.divisor).clamp(self.first, self.ceiling)
    }

    /// The shortest interval.
    pub fn first(&self) -> Duration {
        self.first
    }

    /// The share of the quiet time a wait waits (`1 / divisor`).
    pub fn divisor(&self) -> u32 {
        self.divisor
    }

    /// The longest interval.
    pub fn ceiling(&self) -> Duration {
        self.ceiling
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    #[test]
    fn a_fresh_change_is_looked_at_soon_and_a_quiet_subject_at_the_ceiling() {
        let pace = PollPace::new(ms(100), ms(600), 2);
        assert_eq!(pace.after_quiet(Duration::ZERO), ms(100));
        assert_eq!(pace.after_quiet(ms(150)), ms(100));
        assert_eq!(pace.after_quiet(ms(500)), ms(250));
        assert_eq!(pace.after_quiet(ms(1_200)), ms(600));
        assert_eq!(pace.after_quiet(Duration::from_secs(3_600)), ms(600));
    }

    #[test]
    fn a_ceiling_below_the_first_interval_is_a_fixed_pace() {
        let pace = PollPace::new(ms(200), ms(50), 2);
        assert_eq!(pace.ceiling(), ms(200));
        assert_eq!(pace.after_quiet(Duration::from_secs(60)), ms(200));
        assert_eq!(pace.after_quiet(Duration::ZERO), ms(200));
    }

    /// Looks taken over an idle wait of `wait` that starts when its subject changed.
    fn looks_over(pace: PollPace, wait: Duration) -> u32 {
        let (mut at, mut looks) = (Duration::ZERO, 0);
        loop {
            at += pace.after_quiet(at);
            if at > wait {
                return looks;
            }
            looks += 1;
        }
    }

    #[test]
    fn an_idle_wait_settles_at_one_look_per_ceiling() {
        let pace = PollPace::new(ms(100), ms(600), 2);
        let thirty = looks_over(pace, Duration::from_secs(30));
        // 100, 200, 300, 450, 675, 1012, 1518, 2118 ms, then every 600 ms: 54 looks.
        assert!((50..60).contains(&thirty), "{thirty} looks in 30 s");
        let fixed = looks_over(PollPace::new(ms(100), ms(100), 2), Duration::from_secs(30));
        assert_eq!(fixed, 300);
    }

    #[test]
    fn a_larger_divisor_looks_sooner_after_a_change_and_the_same_once_idle() {
        let (halves, sixths) = (
            PollPace::new(ms(100), ms(750), 2),
            PollPace::new(ms(100), ms(750), 6),
        );
        assert_eq!(sixths.after_quiet(ms(3_000)), ms(500));
        assert_eq!(halves.after_quiet(ms(3_000)), ms(750));
        assert_eq!(
            sixths.after_quiet(ms(60_000)),
            halves.after_quiet(ms(60_000))
        );
        let thirty = Duration::from_secs(30);
        let (half_looks, sixth_looks) = (looks_over(halves, thirty), looks_over(sixths, thirty));
        assert!(sixth_looks > half_looks, "{sixth_looks} vs {half_looks}");
        assert!(sixth_looks <= 60, "{sixth_looks} looks in an idle 30 s");
    }

    #[test]
    fn a_divisor_of_zero_is_one() {
        let pace = PollPace::new(ms(100), ms(5_000), 0);
        assert_eq!(pace.after_quiet(ms(1_000)), ms(1_000));
    }
}
