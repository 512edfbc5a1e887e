//! A breaker per tenant and receiver host for push notifications. A receiver that fails every
//! POST (it hangs until the push timeout, refuses, or answers an error) costs each of its
//! configs a lease, a POST held open up to the timeout and an attempt count, however many
//! configs point at it. After [`FAILURES_TO_OPEN`] failures in a row from one tenant's configs
//! at one host, this process sends that tenant nothing more there for [`OPEN_FOR`]: its configs'
//! rounds come back then, with no write and no connection (their events wait, none is lost or
//! counted as an attempt). Then one POST tries the host; while it runs the others keep waiting,
//! and its outcome closes the breaker or opens it again.
//!
//! The breaker is the tenant's own: another tenant's configs at the same host are never held
//! back by it. It lives in the process (a warm worker learns it again after a cold start).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::domain::ids::TenantId;

/// Failures in a row, from one tenant's configs at one host, that open its breaker.
pub const FAILURES_TO_OPEN: u32 = 5;

/// How long an open breaker holds the tenant's POSTs to the host back.
pub const OPEN_FOR: Duration = Duration::from_secs(30);

/// How long a trial POST may run before another may try (a trial whose job was cut never
/// reports).
const TRIAL_TIMEOUT: Duration = Duration::from_secs(60);

/// The most breakers kept; past it, the ones whose last failure is oldest go first.
const MAX_BREAKERS: usize = 10_000;

/// Whether a config's round may POST to its host now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    Send,
    /// Come back after this long.
    Wait(Duration),
}

#[derive(Debug)]
struct Breaker {
    failures: u32,
    last_failure: Instant,
    open_until: Option<Instant>,
    trial_since: Option<Instant>,
}

/// The breakers of this process, by tenant and host.
#[derive(Debug, Default)]
pub struct Breakers(Mutex<HashMap<(TenantId, String), Breaker>>);

impl Breakers {
    /// Whether `tenant`'s config may POST to `host` at `now`: a closed breaker lets it; an open
    /// one holds it back until it has been open [`OPEN_FOR`], then lets one trial through.
    pub fn gate(&self, tenant: &TenantId, host: &str, now: Instant) -> Gate {
        let mut breakers = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(breaker) = breakers.get_mut(&(tenant.clone(), host.to_owned())) else {
            return Gate::Send;
        };
        let Some(open_until) = breaker.open_until else {
            return Gate::Send;
        };
        if now < open_until {
            return Gate::Wait(open_until - now);
        }
        match breaker.trial_since {
            Some(since) if now.saturating_duration_since(since) < TRIAL_TIMEOUT => {
                Gate::Wait(Duration::from_secs(1))
            }
            _ => {
                breaker.trial_since = Some(now);
                Gate::Send
            }
        }
    }

    /// A round let through by [`Breakers::gate`] sent nothing (another sender held the
    /// config): a trial it was does not hold the others back.
    pub fn untried(&self, tenant: &TenantId, host: &str) {
        let mut breakers = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(breaker) = breakers.get_mut(&(tenant.clone(), host.to_owned())) {
            breaker.trial_since = None;
        }
    }

    /// A POST of `tenant`'s to `host` succeeded (the breaker closes) or failed (counted; the
    /// breaker opens at [`FAILURES_TO_OPEN`], and again at once after a failed trial). Whether
    /// the breaker opened just now.
    pub fn record(&self, tenant: &TenantId, host: &str, succeeded: bool, now: Instant) -> bool {
        let mut breakers = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (tenant.clone(), host.to_owned());
        if succeeded {
            breakers.remove(&key);
            return false;
        }
        if breakers.len() >= MAX_BREAKERS && !breakers.contains_key(&key) {
            forget_oldest(&mut breakers);
        }
        let breaker = breakers.entry(key).or_insert(Breaker {
            failures: 0,
            last_failure: now,
            open_until: None,
            trial_since: None,
        });
        breaker.failures = breaker.failures.saturating_add(1);
        breaker.last_failure = now;
        breaker.trial_since = None;
        if breaker.failures < FAILURES_TO_OPEN {
            return false;
        }
        let opened = breaker.open_until.is_none_or(|until| until <= now);
        breaker.open_until = Some(now + OPEN_FOR);
        opened
    }
}

/// Drops the tenth of the breakers whose last failure is oldest.
fn forget_oldest(breakers: &mut HashMap<(TenantId, String), Breaker>) {
    let mut by_age: Vec<Instant> = breakers.values().map(|b| b.last_failure).collect();
    by_age.sort();
    let cut = by_age[by_age.len() / 10];
    breakers.retain(|_, breaker| breaker.last_failure > cut);
}

/// The host a notification URL names (as written, lowercased), or the whole URL when it has
/// none: what a breaker is kept by.
pub fn host_of(url: &str) -> String {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
        .unwrap_or_else(|| url.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fail(breakers: &Breakers, tenant: &TenantId, times: u32, now: Instant) {
        for _ in 0..times {
            let _ = breakers.record(tenant, "hooks.example", false, now);
        }
    }

    /// Breakers with tenant `t`'s at `hooks.example` opened now, and when it may be tried.
    fn open_until_later() -> (Breakers, TenantId, Instant) {
        let breakers = Breakers::default();
        let tenant = TenantId::from("t");
        let now = Instant::now();
        fail(&breakers, &tenant, FAILURES_TO_OPEN, now);
        (breakers, tenant, now + OPEN_FOR)
    }

    #[test]
    fn failures_in_a_row_open_the_breaker_for_its_tenant_only() {
        let breakers = Breakers::default();
        let (noisy, quiet) = (TenantId::from("noisy"), TenantId::from("quiet"));
        let now = Instant::now();
        fail(&breakers, &noisy, FAILURES_TO_OPEN - 1, now);
        assert_eq!(breakers.gate(&noisy, "hooks.example", now), Gate::Send);
        assert!(
            breakers.record(&noisy, "hooks.example", false, now),
            "opened"
        );
        assert!(
            !breakers.record(&noisy, "hooks.example", false, now),
            "open already"
        );
        assert_eq!(
            breakers.gate(&noisy, "hooks.example", now + Duration::from_secs(10)),
            Gate::Wait(OPEN_FOR - Duration::from_secs(10))
        );
        assert_eq!(breakers.gate(&quiet, "hooks.example", now), Gate::Send);
        assert_eq!(breakers.gate(&noisy, "other.example", now), Gate::Send);
    }

    #[test]
    fn a_success_between_failures_starts_the_count_again() {
        let breakers = Breakers::default();
        let tenant = TenantId::from("t");
        let now = Instant::now();
        fail(&breakers, &tenant, FAILURES_TO_OPEN - 1, now);
        assert!(!breakers.record(&tenant, "hooks.example", true, now));
        fail(&breakers, &tenant, FAILURES_TO_OPEN - 1, now);
        assert_eq!(breakers.gate(&tenant, "hooks.example", now), Gate::Send);
    }

    #[test]
    fn after_the_open_time_one_trial_goes_and_its_outcome_decides() {
        let (breakers, tenant, later) = open_until_later();
        assert_eq!(breakers.gate(&tenant, "hooks.example", later), Gate::Send);
        assert_eq!(
            breakers.gate(&tenant, "hooks.example", later),
            Gate::Wait(Duration::from_secs(1)),
            "one trial at a time"
        );
        // The trial fails: open again at once.
        assert!(breakers.record(&tenant, "hooks.example", false, later));
        assert_eq!(
            breakers.gate(&tenant, "hooks.example", later),
            Gate::Wait(OPEN_FOR)
        );
        // The next trial succeeds: closed.
        let again = later + OPEN_FOR;
        assert_eq!(breakers.gate(&tenant, "hooks.example", again), Gate::Send);
        assert!(!breakers.record(&tenant, "hooks.example", true, again));
        assert_eq!(breakers.gate(&tenant, "hooks.example", again), Gate::Send);
        assert_eq!(breakers.gate(&tenant, "hooks.example", again), Gate::Send);
    }

    #[test]
    fn a_trial_that_sent_nothing_or_never_reported_lets_another_try() {
        let (breakers, tenant, later) = open_until_later();
        assert_eq!(breakers.gate(&tenant, "hooks.example", later), Gate::Send);
        breakers.untried(&tenant, "hooks.example");
        assert_eq!(breakers.gate(&tenant, "hooks.example", later), Gate::Send);
        assert_eq!(
            breakers.gate(&tenant, "hooks.example", later + TRIAL_TIMEOUT),
            Gate::Send
        );
    }

    #[test]
    fn breakers_are_kept_by_host_whatever_the_path_or_case() {
        assert_eq!(host_of("https://Hooks.Example:8443/a?b=c"), "hooks.example");
        assert_eq!(host_of("not a url"), "not a url");
    }

    #[test]
    fn past_the_most_breakers_the_oldest_failures_are_forgotten() {
        let breakers = Breakers::default();
        let tenant = TenantId::from("t");
        let now = Instant::now();
        for n in 0..MAX_BREAKERS as u64 + 1 {
            breakers.record(
                &tenant,
                &format!("h{n}"),
                false,
                now + Duration::from_millis(n),
            );
        }
        let kept = breakers.0.lock().unwrap().len();
        assert!(kept < MAX_BREAKERS && kept > MAX_BREAKERS / 2, "{kept}");
        assert!(breakers
            .0
            .lock()
            .unwrap()
            .contains_key(&(tenant, format!("h{MAX_BREAKERS}"))));
    }
}
