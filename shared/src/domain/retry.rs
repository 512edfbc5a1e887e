//! When a push delivery is tried again: the retry schedule, and the bounds on it and on an
//! endpoint's `Retry-After`.

use std::time::Duration;

/// When attempts happen: the first at once, then after each delay in turn, with ±20 % jitter.
/// A `Retry-After` from the endpoint replaces the scheduled delay, within [1 s, 15 min].
#[derive(Debug, Clone, PartialEq)]
pub struct RetrySchedule {
    pub delays: Vec<Duration>,
}

/// The most retries a schedule may hold: every attempt is one receive of the message, and the
/// queue's `maxReceiveCount` (10) must stay above the attempts.
pub const MAX_RETRIES: usize = 8;
/// The longest delay a schedule may hold: SQS hides a message for at most 12 hours.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(12 * 60 * 60);

/// The longest `Retry-After` honoured.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(15 * 60);

impl Default for RetrySchedule {
    /// 6 attempts over about 43 minutes: now, +5 s, +30 s, +2 min, +10 min, +30 min.
    fn default() -> Self {
        RetrySchedule {
            delays: [5, 30, 120, 600, 1800].map(Duration::from_secs).to_vec(),
        }
    }
}

impl RetrySchedule {
    /// Parses seconds separated by commas (`FORGEBENCH_PUSH_RETRY_SECONDS`): 1 to
    /// [`MAX_RETRIES`] delays, each a finite number of seconds from 0 to [`MAX_RETRY_DELAY`]'s
    /// (the longest SQS can hide a message). Anything else (`inf`, `NaN`, `1e30`, negative) is
    /// refused with the reason rather than reaching `Duration`, which would panic.
    pub fn parse(text: &str) -> Result<RetrySchedule, String> {
        let delays = text
            .split(',')
            .map(|delay| {
                let delay = delay.trim();
                delay
                    .parse::<f64>()
                    .ok()
                    .filter(|seconds| {
                        seconds.is_finite()
                            && (0.0..=MAX_RETRY_DELAY.as_secs_f64()).contains(seconds)
                    })
                    .map(Duration::from_secs_f64)
                    .ok_or_else(|| {
                        format!(
                            "{delay:?} is not a number of seconds from 0 to {}",
                            MAX_RETRY_DELAY.as_secs()
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if delays.len() > MAX_RETRIES {
            return Err(format!("at most {MAX_RETRIES} delays"));
        }
        Ok(RetrySchedule { delays })
    }

    pub fn max_attempts(&self) -> u64 {
        self.delays.len() as u64 + 1
    }

    /// The wait before attempt `attempts + 1`, after `attempts` attempts were made.
    pub fn delay_after(
        &self,
        attempts: u64,
        retry_after: Option<Duration>,
        jitter: f64,
    ) -> Option<Duration> {
        let scheduled = *self.delays.get(attempts.checked_sub(1)? as usize)?;
        Some(match retry_after {
            Some(asked) => asked.clamp(Duration::from_secs(1), MAX_RETRY_AFTER),
            None => scheduled.mul_f64(0.8 + 0.4 * jitter.clamp(0.0, 1.0)),
        })
    }
}
