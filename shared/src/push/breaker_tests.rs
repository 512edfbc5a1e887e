//! The breaker's rules, each on its own.

use super::*;

fn fail(breakers: &Breakers, tenant: &TenantId, times: u32, now: Instant) {
    for _ in 0..times {
        let _ = breakers.record(tenant, "hooks.example", Answer::Failed, now);
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
        breakers.record(&noisy, "hooks.example", Answer::Failed, now),
        "opened"
    );
    assert!(
        !breakers.record(&noisy, "hooks.example", Answer::Failed, now),
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
    assert!(!breakers.record(&tenant, "hooks.example", Answer::InTime, now));
    fail(&breakers, &tenant, FAILURES_TO_OPEN - 1, now);
    assert_eq!(breakers.gate(&tenant, "hooks.example", now), Gate::Send);
}

#[test]
fn after_the_open_time_one_trial_goes_and_its_outcome_decides() {
    let (breakers, tenant, later) = open_until_later();
    assert_eq!(breakers.gate(&tenant, "hooks.example", later), Gate::Send);
    assert_eq!(
        breakers.gate(&tenant, "hooks.example", later),
        Gate::Wait(TRIAL_WAIT),
        "one trial at a time"
    );
    // The trial fails: open again at once, for twice as long.
    assert!(breakers.record(&tenant, "hooks.example", Answer::Failed, later));
    assert_eq!(
        breakers.gate(&tenant, "hooks.example", later),
        Gate::Wait(OPEN_FOR * 2)
    );
    // The next trial succeeds: closed.
    let again = later + OPEN_FOR * 2;
    assert_eq!(breakers.gate(&tenant, "hooks.example", again), Gate::Send);
    assert!(!breakers.record(&tenant, "hooks.example", Answer::InTime, again));
    assert_eq!(breakers.gate(&tenant, "hooks.example", again), Gate::Send);
    assert_eq!(breakers.gate(&tenant, "hooks.example", again), Gate::Send);
}

#[test]
fn each_failed_trial_holds_back_twice_as_long_up_to_five_minutes() {
    let (breakers, tenant, mut at) = open_until_later();
    let mut waits = Vec::new();
    for _ in 0..6 {
        assert_eq!(breakers.gate(&tenant, "hooks.example", at), Gate::Send);
        assert!(breakers.record(&tenant, "hooks.example", Answer::Failed, at));
        let Gate::Wait(wait) = breakers.gate(&tenant, "hooks.example", at) else {
            panic!("open");
        };
        waits.push(wait.as_secs());
        at += wait;
    }
    assert_eq!(waits, [60, 120, 240, 300, 300, 300]);
    // A POST sent before it opened and failing later extends nothing.
    assert!(!breakers.record(
        &tenant,
        "hooks.example",
        Answer::Failed,
        at - Duration::from_secs(1)
    ));
    // An answer in time closes it and starts over.
    assert!(!breakers.record(&tenant, "hooks.example", Answer::InTime, at));
    fail(&breakers, &tenant, FAILURES_TO_OPEN, at);
    assert_eq!(
        breakers.gate(&tenant, "hooks.example", at),
        Gate::Wait(OPEN_FOR)
    );
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
fn breakers_are_kept_by_registrable_domain_whatever_the_host_path_or_case() {
    assert_eq!(
        domain_of("https://Hooks.Example.com:8443/a?b=c"),
        "example.com"
    );
    assert_eq!(
        domain_of("https://x1.hooks.example.co.uk/"),
        "example.co.uk"
    );
    assert_eq!(
        domain_of("https://x2.hooks.example.co.uk./"),
        "example.co.uk"
    );
    // A private suffix of the list: each customer of a host is its own domain.
    assert_eq!(domain_of("https://a.b.github.io/"), "b.github.io");
    assert_eq!(domain_of("http://127.0.0.1:9000/x"), "127.0.0.1");
    assert_eq!(domain_of("http://[::1]:9000/x"), "[::1]");
    assert_eq!(domain_of("http://localhost:9000/x"), "localhost");
    assert_eq!(domain_of("not a url"), "not a url");
}

#[test]
fn wildcard_hosts_of_one_domain_share_a_breaker() {
    let breakers = Breakers::default();
    let tenant = TenantId::from("t");
    let now = Instant::now();
    for n in 0..FAILURES_TO_OPEN {
        let domain = domain_of(&format!("https://c{n}.hooks.example.com/"));
        breakers.record(&tenant, &domain, Answer::Failed, now);
    }
    let next = domain_of("https://c-next.hooks.example.com/");
    assert_eq!(breakers.gate(&tenant, &next, now), Gate::Wait(OPEN_FOR));
}

#[test]
fn slow_answers_count_like_failures() {
    let usual = Duration::from_secs(10);
    let slow = Answer::of(true, false, Duration::from_millis(5_001), usual, usual);
    assert_eq!(slow, Answer::Slow);
    assert_eq!(
        Answer::of(true, false, Duration::from_millis(4_999), usual, usual),
        Answer::InTime
    );
    let breakers = Breakers::default();
    let tenant = TenantId::from("t");
    let now = Instant::now();
    for _ in 0..FAILURES_TO_OPEN - 1 {
        assert!(!breakers.record(&tenant, "hooks.example", slow, now));
    }
    assert!(
        breakers.record(&tenant, "hooks.example", slow, now),
        "opened"
    );
}

#[test]
fn a_domain_that_timed_out_lately_gets_a_quarter_of_the_time() {
    let usual = Duration::from_secs(10);
    let short = Duration::from_millis(2_500);
    let breakers = Breakers::default();
    let tenant = TenantId::from("t");
    let now = Instant::now();
    assert_eq!(
        breakers.timeout_for(&tenant, "hooks.example", usual, now),
        usual
    );
    // A timeout of a POST given less than the whole time does not mark the domain.
    let cut = Answer::of(false, true, short, short, usual);
    breakers.record(&tenant, "hooks.example", cut, now);
    assert_eq!(
        breakers.timeout_for(&tenant, "hooks.example", usual, now),
        usual
    );
    let hung = Answer::of(false, true, usual, usual, usual);
    breakers.record(&tenant, "hooks.example", hung, now);
    assert_eq!(
        breakers.timeout_for(&tenant, "hooks.example", usual, now),
        short
    );
    assert_eq!(
        breakers.timeout_for(&TenantId::from("other"), "hooks.example", usual, now),
        usual
    );
    assert_eq!(
        breakers.timeout_for(&tenant, "hooks.example", usual, now + RECENT_TIMEOUT),
        usual
    );
    // An answer in time clears it.
    breakers.record(&tenant, "hooks.example", Answer::InTime, now);
    assert_eq!(
        breakers.timeout_for(&tenant, "hooks.example", usual, now),
        usual
    );
    assert_eq!(
        breakers.timeout_for(&tenant, "x", Duration::from_secs(2), now),
        Duration::from_secs(2)
    );
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
            Answer::Failed,
            now + Duration::from_millis(n),
        );
    }
    let kept = breakers.breakers.lock().unwrap().len();
    assert!(kept < MAX_BREAKERS && kept > MAX_BREAKERS / 2, "{kept}");
    assert!(breakers
        .breakers
        .lock()
        .unwrap()
        .contains_key(&(tenant, format!("h{MAX_BREAKERS}"))));
}

#[test]
fn a_domain_that_answered_in_time_needs_no_slot_until_it_fails_or_goes_quiet() {
    let breakers = Breakers::default();
    let tenant = TenantId::from("t");
    let now = Instant::now();
    assert!(breakers.needs_slot(&tenant, "hooks.example", now), "new");
    breakers.record(&tenant, "hooks.example", Answer::InTime, now);
    assert!(!breakers.needs_slot(&tenant, "hooks.example", now));
    assert!(breakers.needs_slot(&TenantId::from("other"), "hooks.example", now));
    assert!(breakers.needs_slot(&tenant, "other.example", now));
    assert!(
        breakers.needs_slot(&tenant, "hooks.example", now + KNOWN_GOOD_FOR),
        "quiet too long"
    );
    breakers.record(&tenant, "hooks.example", Answer::Slow, now);
    assert!(breakers.needs_slot(&tenant, "hooks.example", now), "slow");
    breakers.record(&tenant, "hooks.example", Answer::InTime, now);
    breakers.record(
        &tenant,
        "hooks.example",
        Answer::TimedOut { whole_time: true },
        now,
    );
    assert!(
        breakers.needs_slot(&tenant, "hooks.example", now),
        "timed out"
    );
}

/// Five POSTs of `tenant`'s to `hooks.example`, each given `time`, sent at `now`.
fn five_sent<'a>(
    breakers: &'a Breakers,
    tenant: &TenantId,
    time: Duration,
    now: Instant,
) -> Vec<Sending<'a>> {
    (0..FAILURES_TO_OPEN)
        .map(|_| breakers.sending(tenant, "hooks.example", time, now))
        .collect()
}

#[test]
fn posts_hanging_past_half_their_time_open_the_breaker_before_they_time_out() {
    let breakers = Breakers::default();
    let (noisy, quiet) = (TenantId::from("noisy"), TenantId::from("quiet"));
    let (now, time) = (Instant::now(), Duration::from_secs(10));
    let hanging = five_sent(&breakers, &noisy, time, now);
    let early = now + Duration::from_secs(4);
    assert_eq!(breakers.gate(&noisy, "hooks.example", early), Gate::Send);
    let past_half = now + Duration::from_secs(6);
    assert_eq!(
        breakers.gate(&noisy, "hooks.example", past_half),
        Gate::Wait(OPEN_FOR)
    );
    assert_eq!(
        breakers.gate(&quiet, "hooks.example", past_half),
        Gate::Send
    );
    assert_eq!(
        breakers.gate(&noisy, "other.example", past_half),
        Gate::Send
    );
    // They time out: counted, and the breaker stays open as it was opened.
    drop(hanging);
    let timed_out = now + time;
    for _ in 0..FAILURES_TO_OPEN {
        let answer = Answer::TimedOut { whole_time: true };
        assert!(!breakers.record(&noisy, "hooks.example", answer, timed_out));
    }
    assert_eq!(
        breakers.gate(&noisy, "hooks.example", timed_out),
        Gate::Wait(OPEN_FOR - Duration::from_secs(4))
    );
}

#[test]
fn hanging_posts_count_with_the_failures_before_them_and_not_once_answered() {
    let breakers = Breakers::default();
    let tenant = TenantId::from("t");
    let (now, time) = (Instant::now(), Duration::from_secs(10));
    let past_half = now + Duration::from_secs(6);
    let answered = five_sent(&breakers, &tenant, time, now);
    drop(answered);
    assert_eq!(
        breakers.gate(&tenant, "hooks.example", past_half),
        Gate::Send
    );
    let mut four = five_sent(&breakers, &tenant, time, now);
    four.pop();
    assert_eq!(
        breakers.gate(&tenant, "hooks.example", past_half),
        Gate::Send
    );
    fail(&breakers, &tenant, 1, now);
    assert_eq!(
        breakers.gate(&tenant, "hooks.example", past_half),
        Gate::Wait(OPEN_FOR)
    );
}
