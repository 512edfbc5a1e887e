//! A breaker per tenant and receiver domain, for task deliveries and push notifications alike.
//! A receiver that fails every POST (it hangs until the push timeout, refuses, answers an
//! error) or answers only slowly (past half the push timeout) costs each job a worker's time
//! while its POST is held open, however many endpoints or configs point at it. After
//! [`FAILURES_TO_OPEN`] such answers in a row from one tenant's POSTs to one registrable domain
//! (the Public Suffix List's: `a.hooks.example.com` and `b.hooks.example.com` are one domain,
//! so wildcard DNS cannot step around it), this process sends that tenant nothing more there for
//! [`OPEN_FOR`]: the jobs come back then, with no write and no connection (nothing is lost or
//! counted as an attempt). Then one POST tries the domain; while it runs the others keep
//! waiting, and its outcome closes the breaker or opens it again, for twice as long as before
//! (up to [`MAX_OPEN_FOR`]): a receiver down for long costs its tenant's backlog fewer and fewer
//! returns.
//!
//! A receiver that hangs is known before its POSTs time out: POSTs still open past half their
//! time count toward [`FAILURES_TO_OPEN`] as they would once they end ([`Breakers::sending`]),
//! so five POSTs hanging open the breaker at half the push timeout, not at its end.
//!
//! A domain that timed out within [`RECENT_TIMEOUT`] gets a quarter of the push timeout for
//! its POSTs ([`Breakers::timeout_for`]): a receiver that hung lately holds a worker less long.
//! Only a POST given the whole time and timing out marks a domain so, and an answer in time
//! clears it, so a receiver that is merely slow is given the whole time again a minute later.
//!
//! The breaker is the tenant's own: another tenant's endpoints at the same domain are never held
//! back by it. It lives in the process (a warm worker learns it again after a cold start); the
//! bound on a tenant's POSTs in flight across the fleet is the store's (`store/push_slots.rs`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::domain::ids::TenantId;

/// Failures or slow answers in a row, from one tenant's POSTs to one domain, that open its
/// breaker.
pub const FAILURES_TO_OPEN: u32 = 5;

/// How long an open breaker holds the tenant's POSTs to the domain back; each failed trial
/// doubles it, up to [`MAX_OPEN_FOR`].
pub const OPEN_FOR: Duration = Duration::from_secs(30);

/// The longest an open breaker holds back, however many trials failed.
pub const MAX_OPEN_FOR: Duration = Duration::from_secs(300);

/// How long a breaker opened after `failed_trials` failed trials holds back.
fn open_for(failed_trials: u32) -> Duration {
    OPEN_FOR
        .saturating_mul(1 << failed_trials.min(16))
        .min(MAX_OPEN_FOR)
}

/// How long a domain whose POST timed out is given a shorter time.
pub const RECENT_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a POST held back while a trial runs waits: as long as a held-back task delivery
/// needs to be parked on the outbox rather than come back through the queue
/// (`push/parking.rs`), since a receiver on trial is one that kept failing.
pub const TRIAL_WAIT: Duration = Duration::from_secs(5);

/// How long a trial POST may run before another may try (a trial whose job was cut never
/// reports).
const TRIAL_TIMEOUT: Duration = Duration::from_secs(60);

/// The most breakers kept; past it, the ones whose last failure is oldest go first.
const MAX_BREAKERS: usize = 10_000;

/// Whether a POST may go to its domain now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    Send,
    /// Come back after this long.
    Wait(Duration),
}

/// How a POST to a receiver went, as the breaker counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// A 2xx within half the time it was given.
    InTime,
    /// A 2xx, but only after half the time it was given: counted like a failure.
    Slow,
    /// An error status, a refused or failed connection.
    Failed,
    /// No answer within the time given; `whole_time` when that was the whole push timeout.
    TimedOut { whole_time: bool },
}

impl Answer {
    /// How a POST given `time` went: `succeeded` (a 2xx) after `took`, or `timed_out`.
    pub fn of(
        succeeded: bool,
        timed_out: bool,
        took: Duration,
        time: Duration,
        usual: Duration,
    ) -> Answer {
        match (succeeded, timed_out) {
            (true, _) if took > time / 2 => Answer::Slow,
            (true, _) => Answer::InTime,
            (false, true) => Answer::TimedOut {
                whole_time: time >= usual,
            },
            (false, false) => Answer::Failed,
        }
    }
}

#[derive(Debug)]
struct Breaker {
    failures: u32,
    last_failure: Instant,
    open_until: Option<Instant>,
    trial_since: Option<Instant>,
    /// Trials that failed since the breaker first opened.
    failed_trials: u32,
    /// When a POST given the whole push timeout last timed out.
    timed_out_at: Option<Instant>,
}

type Key = (TenantId, String);

/// How long a domain that answered a tenant's POST in time is trusted to answer the next ones
/// in time: its POSTs need no slot of the tenant's pushes in flight meanwhile.
pub const KNOWN_GOOD_FOR: Duration = Duration::from_secs(300);

/// The POSTs of this process in flight to one tenant's domain: when each was sent, and the time
/// it was given, by a number of its own.
type InFlight = HashMap<u64, (Instant, Duration)>;

/// The breakers of this process, by tenant and receiver domain, when each domain last answered
/// in time, and the POSTs in flight.
#[derive(Debug, Default)]
pub struct Breakers {
    breakers: Mutex<HashMap<Key, Breaker>>,
    answered_in_time: Mutex<HashMap<Key, Instant>>,
    in_flight: Mutex<HashMap<Key, InFlight>>,
    next_post: AtomicU64,
}

/// A POST in flight, counted as hanging by its breaker once past half its time, until this is
/// dropped (the POST ended, or its job was cut).
#[derive(Debug)]
pub struct Sending<'a> {
    breakers: &'a Breakers,
    key: Key,
    post: u64,
}

impl Drop for Sending<'_> {
    fn drop(&mut self) {
        let mut in_flight = self.breakers.in_flight();
        if let Some(posts) = in_flight.get_mut(&self.key) {
            posts.remove(&self.post);
            if posts.is_empty() {
                in_flight.remove(&self.key);
            }
        }
    }
}

impl Breaker {
    fn new(now: Instant) -> Breaker {
        Breaker {
            failures: 0,
            last_failure: now,
            open_until: None,
            trial_since: None,
            failed_trials: 0,
            timed_out_at: None,
        }
    }
}

impl Breakers {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Breaker>> {
        self.breakers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn good(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Instant>> {
        self.answered_in_time
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, HashMap<Key, InFlight>> {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes `tenant`'s POST to `domain`, given `time`, as sent at `now`, until the guard this
    /// returns is dropped: while it hangs past half its time it counts toward opening the
    /// breaker ([`Breakers::gate`]), as the slow answer or timeout it will be.
    pub fn sending(
        &self,
        tenant: &TenantId,
        domain: &str,
        time: Duration,
        now: Instant,
    ) -> Sending<'_> {
        let key = (tenant.clone(), domain.to_owned());
        let post = self.next_post.fetch_add(1, Ordering::Relaxed);
        self.in_flight()
            .entry(key.clone())
            .or_default()
            .insert(post, (now, time));
        Sending {
            breakers: self,
            key,
            post,
        }
    }

    /// How many of the POSTs in flight to `key` have been open past half their time at `now`.
    fn hanging(&self, key: &Key, now: Instant) -> u32 {
        self.in_flight().get(key).map_or(0, |posts| {
            let hanging = posts
                .values()
                .filter(|(sent, time)| now.saturating_duration_since(*sent) > *time / 2)
                .count();
            u32::try_from(hanging).unwrap_or(u32::MAX)
        })
    }

    /// Whether a POST of `tenant`'s to `domain` must hold a slot of the tenant's pushes in
    /// flight: unless the domain's last answer to the tenant came in time, within
    /// [`KNOWN_GOOD_FOR`], with no failure or slow answer since. A receiver that answers
    /// promptly holds a worker for no time worth bounding, so a busy tenant whose receivers
    /// keep up is never held back and pays no write for it; one that is new, failing, slow or
    /// quiet for a while is bounded.
    pub fn needs_slot(&self, tenant: &TenantId, domain: &str, now: Instant) -> bool {
        let good = self.good();
        good.get(&(tenant.clone(), domain.to_owned()))
            .is_none_or(|at| now.saturating_duration_since(*at) >= KNOWN_GOOD_FOR)
    }

    /// Notes how a POST went for [`Breakers::needs_slot`].
    fn note_answer(&self, key: &Key, answer: Answer, now: Instant) {
        let mut good = self.good();
        if answer != Answer::InTime {
            good.remove(key);
            return;
        }
        if good.len() >= MAX_BREAKERS && !good.contains_key(key) {
            // Forgotten domains only cost a slot's write each until they answer again.
            good.clear();
        }
        good.insert(key.clone(), now);
    }

    /// Whether `tenant`'s POST may go to `domain` at `now`: a closed breaker lets it; an open
    /// one holds it back until it has been open [`OPEN_FOR`], then lets one trial through.
    pub fn gate(&self, tenant: &TenantId, domain: &str, now: Instant) -> Gate {
        let key = (tenant.clone(), domain.to_owned());
        let hanging = self.hanging(&key, now);
        let mut breakers = self.lock();
        if let Some(open_for) = open_on_hanging(&mut breakers, &key, hanging, now) {
            tracing::warn!(tenant_id = %tenant, domain = %domain, hanging, "pushes to a receiver domain whose POSTs hang are held back for a while");
            return Gate::Wait(open_for);
        }
        let Some(breaker) = breakers.get_mut(&key) else {
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
                Gate::Wait(TRIAL_WAIT)
            }
            _ => {
                breaker.trial_since = Some(now);
                Gate::Send
            }
        }
    }

    /// The time a POST of `tenant`'s to `domain` is given: a quarter of `usual` (at least a
    /// second) when a POST there timed out within [`RECENT_TIMEOUT`], else `usual`.
    pub fn timeout_for(
        &self,
        tenant: &TenantId,
        domain: &str,
        usual: Duration,
        now: Instant,
    ) -> Duration {
        let breakers = self.lock();
        let recent = breakers
            .get(&(tenant.clone(), domain.to_owned()))
            .and_then(|breaker| breaker.timed_out_at)
            .is_some_and(|at| now.saturating_duration_since(at) < RECENT_TIMEOUT);
        if recent {
            (usual / 4).max(Duration::from_secs(1)).min(usual)
        } else {
            usual
        }
    }

    /// A POST let through by [`Breakers::gate`] was not sent (another sender held the task or
    /// config, or the tenant's bound was reached): a trial it was does not hold the others back.
    pub fn untried(&self, tenant: &TenantId, domain: &str) {
        if let Some(breaker) = self.lock().get_mut(&(tenant.clone(), domain.to_owned())) {
            breaker.trial_since = None;
        }
    }

    /// How a POST of `tenant`'s to `domain` went: an answer in time closes the breaker; a
    /// failure or a slow answer is counted, and opens it at [`FAILURES_TO_OPEN`] (and again at
    /// once after a failed trial, for twice as long). Whether the breaker opened just now.
    pub fn record(&self, tenant: &TenantId, domain: &str, answer: Answer, now: Instant) -> bool {
        let key = (tenant.clone(), domain.to_owned());
        self.note_answer(&key, answer, now);
        let mut breakers = self.lock();
        if answer == Answer::InTime {
            breakers.remove(&key);
            return false;
        }
        if breakers.len() >= MAX_BREAKERS && !breakers.contains_key(&key) {
            forget_oldest(&mut breakers);
        }
        let breaker = breakers.entry(key).or_insert_with(|| Breaker::new(now));
        breaker.failures = breaker.failures.saturating_add(1);
        breaker.last_failure = now;
        breaker.trial_since = None;
        if answer == (Answer::TimedOut { whole_time: true }) {
            breaker.timed_out_at = Some(now);
        }
        if breaker.failures < FAILURES_TO_OPEN {
            return false;
        }
        match breaker.open_until {
            // A POST sent before the breaker opened: counted, and nothing more.
            Some(until) if until > now => return false,
            Some(_) => breaker.failed_trials = breaker.failed_trials.saturating_add(1),
            None => {}
        }
        breaker.open_until = Some(now + open_for(breaker.failed_trials));
        true
    }
}

/// Opens the closed breaker at `key` when its failures in a row and its POSTs `hanging` past half
/// their time reach [`FAILURES_TO_OPEN`]; how long it holds back then.
fn open_on_hanging(
    breakers: &mut HashMap<Key, Breaker>,
    key: &Key,
    hanging: u32,
    now: Instant,
) -> Option<Duration> {
    let breaker = breakers.get(key);
    let failures = breaker.map_or(0, |breaker| breaker.failures);
    if hanging == 0
        || breaker.is_some_and(|breaker| breaker.open_until.is_some())
        || failures.saturating_add(hanging) < FAILURES_TO_OPEN
    {
        return None;
    }
    if breakers.len() >= MAX_BREAKERS && !breakers.contains_key(key) {
        forget_oldest(breakers);
    }
    let breaker = breakers
        .entry(key.clone())
        .or_insert_with(|| Breaker::new(now));
    let holds_back = open_for(breaker.failed_trials);
    breaker.open_until = Some(now + holds_back);
    Some(holds_back)
}

/// Drops the tenth of the breakers whose last failure is oldest.
fn forget_oldest(breakers: &mut HashMap<Key, Breaker>) {
    let mut by_age: Vec<Instant> = breakers.values().map(|b| b.last_failure).collect();
    by_age.sort();
    let cut = by_age[by_age.len() / 10];
    breakers.retain(|_, breaker| breaker.last_failure > cut);
}

/// What a breaker is kept by for a receiver URL: the registrable domain of its host (the Public
/// Suffix List's), or the host itself when it is an address or has no registrable domain
/// (`localhost`, a public suffix), lowercased; the whole URL when it names no host.
pub fn domain_of(url: &str) -> String {
    let Some(host) = reqwest::Url::parse(url).ok().and_then(|url| {
        url.host_str()
            .map(|host| host.trim_end_matches('.').to_ascii_lowercase())
    }) else {
        return url.to_owned();
    };
    if host.trim_matches(['[', ']']).parse::<IpAddr>().is_ok() {
        return host;
    }
    psl::domain_str(&host).map(str::to_owned).unwrap_or(host)
}

#[cfg(test)]
#[path = "breaker_tests.rs"]
mod tests;
