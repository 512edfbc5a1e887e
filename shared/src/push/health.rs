//! What each delivery attempt tells its endpoint's health (docs/api.md, "Operating
//! deliveries"): what one process knows, and what it writes when (`push/disabling.rs` writes it
//! and disables an endpoint that keeps failing).
//!
//! A process writes a failure at once, and a success at once only when it does not know the
//! endpoint to be succeeding (its first success, or the first after a failure it saw); otherwise
//! it adds its successes up and writes them with its next write, or after [`WRITE_SUCCESSES_EVERY`].
//! So an endpoint that keeps succeeding costs no write per task, and one that fails is counted
//! attempt by attempt, across every process, which is what its disabling is judged on.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::verdict::Verdict;
use crate::domain::endpoint_health::HealthCounters;
use crate::domain::AgentId;

/// The longest a process keeps successes it counted before writing them.
pub const WRITE_SUCCESSES_EVERY: Duration = Duration::from_secs(60);

/// The most endpoints a process keeps in mind; past it, it starts over (each endpoint then
/// costs one write again).
const MAX_ENDPOINTS: usize = 10_000;

/// What one process knows of the endpoints it delivered to.
#[derive(Debug, Default)]
pub struct HealthBook {
    seen: Mutex<HashMap<AgentId, Seen>>,
}

#[derive(Debug, Clone, Copy)]
struct Seen {
    /// The last write showed no run of failures, and no failure was seen since.
    succeeding: bool,
    /// Successes counted and not yet written.
    unwritten: u64,
    written_at: Instant,
}

/// What an attempt was, for the counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    Success,
    Failure(String),
}

impl Observed {
    pub fn of(verdict: &Verdict) -> Observed {
        match verdict {
            Verdict::Answered(_) | Verdict::Accepted => Observed::Success,
            Verdict::Retry { reason, .. } | Verdict::Fail(reason) => {
                Observed::Failure(reason.clone())
            }
        }
    }
}

/// What to write now: the successes, the failure, and whether the run of failures ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToWrite {
    pub ok: u64,
    pub failure: Option<String>,
    pub ends_failures: bool,
}

impl HealthBook {
    /// Notes `observed` for `agent` at `now`: what to write now, if anything.
    pub fn note(&self, agent: &AgentId, observed: Observed, now: Instant) -> Option<ToWrite> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.len() >= MAX_ENDPOINTS && !seen.contains_key(agent) {
            seen.clear();
        }
        let known = seen.get_mut(agent);
        match (observed, known) {
            (Observed::Failure(error), known) => Some(ToWrite {
                ok: known.map_or(0, |known| std::mem::take(&mut known.unwritten)),
                failure: Some(error),
                ends_failures: false,
            }),
            (Observed::Success, Some(known)) if known.succeeding => {
                known.unwritten += 1;
                (now.duration_since(known.written_at) >= WRITE_SUCCESSES_EVERY).then(|| ToWrite {
                    ok: std::mem::take(&mut known.unwritten),
                    failure: None,
                    ends_failures: false,
                })
            }
            (Observed::Success, known) => Some(ToWrite {
                ok: known.map_or(0, |known| std::mem::take(&mut known.unwritten)) + 1,
                failure: None,
                ends_failures: true,
            }),
        }
    }

    /// Notes the counters a write left.
    pub fn written(&self, agent: &AgentId, counters: &HealthCounters, now: Instant) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let entry = seen.entry(agent.clone()).or_insert(Seen {
            succeeding: false,
            unwritten: 0,
            written_at: now,
        });
        entry.succeeding = counters.consecutive_failures == 0;
        entry.written_at = now;
    }

    /// Keeps the successes a write that failed carried, for the next one.
    pub fn not_written(&self, agent: &AgentId, ok: u64, now: Instant) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let entry = seen.entry(agent.clone()).or_insert(Seen {
            succeeding: false,
            unwritten: 0,
            written_at: now,
        });
        entry.unwritten += ok;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed() -> Observed {
        Observed::Failure("the endpoint answered HTTP 503".into())
    }

    fn counters(failures: u64) -> HealthCounters {
        HealthCounters {
            consecutive_failures: failures,
            ..HealthCounters::default()
        }
    }

    #[test]
    fn successes_are_written_at_once_only_until_the_endpoint_is_known_to_succeed() {
        let book = HealthBook::default();
        let agent = AgentId::from("a");
        let start = Instant::now();
        let first = book.note(&agent, Observed::Success, start);
        assert_eq!(
            first,
            Some(ToWrite {
                ok: 1,
                failure: None,
                ends_failures: true
            })
        );
        book.written(&agent, &counters(0), start);
        for n in 1..=5 {
            let later = start + Duration::from_secs(n);
            assert_eq!(book.note(&agent, Observed::Success, later), None);
        }
        let a_minute_on = start + WRITE_SUCCESSES_EVERY;
        assert_eq!(
            book.note(&agent, Observed::Success, a_minute_on),
            Some(ToWrite {
                ok: 6,
                failure: None,
                ends_failures: false
            })
        );
    }

    #[test]
    fn a_failure_is_written_at_once_with_the_successes_counted_before_it() {
        let book = HealthBook::default();
        let agent = AgentId::from("a");
        let start = Instant::now();
        book.note(&agent, Observed::Success, start);
        book.written(&agent, &counters(0), start);
        book.note(&agent, Observed::Success, start);
        book.note(&agent, Observed::Success, start);
        assert_eq!(
            book.note(&agent, failed(), start),
            Some(ToWrite {
                ok: 2,
                failure: Some("the endpoint answered HTTP 503".into()),
                ends_failures: false
            })
        );
        book.written(&agent, &counters(1), start);
        // The first success after a failure ends the run of failures at once.
        assert_eq!(
            book.note(&agent, Observed::Success, start),
            Some(ToWrite {
                ok: 1,
                failure: None,
                ends_failures: true
            })
        );
    }

    #[test]
    fn failures_another_process_counted_make_the_next_success_end_them() {
        let book = HealthBook::default();
        let agent = AgentId::from("a");
        let start = Instant::now();
        book.note(&agent, Observed::Success, start);
        book.written(&agent, &counters(0), start);
        let a_minute_on = start + WRITE_SUCCESSES_EVERY;
        book.note(&agent, Observed::Success, a_minute_on);
        // The periodic write found failures counted elsewhere.
        book.written(&agent, &counters(4), a_minute_on);
        assert_eq!(
            book.note(&agent, Observed::Success, a_minute_on),
            Some(ToWrite {
                ok: 1,
                failure: None,
                ends_failures: true
            })
        );
    }

    #[test]
    fn successes_a_failed_write_carried_go_with_the_next() {
        let book = HealthBook::default();
        let agent = AgentId::from("a");
        let start = Instant::now();
        let write = book.note(&agent, Observed::Success, start);
        assert_eq!(write.map(|write| write.ok), Some(1));
        book.not_written(&agent, 1, start);
        assert_eq!(
            book.note(&agent, Observed::Success, start)
                .map(|write| write.ok),
            Some(2)
        );
    }
}
