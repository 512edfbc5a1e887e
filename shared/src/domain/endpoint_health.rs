//! A push endpoint's health: its counters as stored, the state and success rate they give, and
//! the rule that disables an endpoint that keeps failing (docs/api.md, "Operating deliveries").

use std::time::Duration;

use serde_json::{json, Value};
use time::{Date, OffsetDateTime};

use super::clock;

/// An endpoint's counters as stored: two UTC days of attempts, and its current run of failures.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HealthCounters {
    /// The UTC day (`YYYY-MM-DD`) `ok` and `failed` count.
    pub day: Option<String>,
    pub ok: u64,
    pub failed: u64,
    /// The day before `day`'s counts, when `prev_day` is that day.
    pub prev_day: Option<String>,
    pub prev_ok: u64,
    pub prev_failed: u64,
    /// Failed attempts since the last success.
    pub consecutive_failures: u64,
    /// The first of those failures.
    pub failing_since: Option<String>,
    pub last_error: Option<String>,
    pub last_failure_at: Option<String>,
    pub last_success_at: Option<String>,
}

/// Why and since when an endpoint is disabled, as the agent's `endpoint` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disabled {
    pub at: String,
    pub reason: String,
}

impl Disabled {
    pub fn to_json(&self) -> Value {
        json!({"at": self.at, "reason": self.reason})
    }

    pub fn from_json(value: &Value) -> Option<Disabled> {
        Some(Disabled {
            at: value.get("at")?.as_str()?.to_owned(),
            reason: value.get("reason")?.as_str()?.to_owned(),
        })
    }
}

/// When an endpoint is disabled: after `failures` failed attempts in a row spanning at least
/// `span` from the first of them (`FORGEBENCH_ENDPOINT_DISABLE_FAILURES` and
/// `FORGEBENCH_ENDPOINT_DISABLE_SECONDS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DisableRule {
    pub failures: u64,
    pub span: Duration,
}

impl Default for DisableRule {
    fn default() -> Self {
        DisableRule {
            failures: 20,
            span: Duration::from_secs(3600),
        }
    }
}

impl DisableRule {
    /// The disabling `counters` call for at `now`, if they call for one.
    pub fn disables(&self, counters: &HealthCounters, now: OffsetDateTime) -> Option<Disabled> {
        if counters.consecutive_failures < self.failures {
            return None;
        }
        let since = counters.failing_since.as_deref()?;
        if clock::elapsed_since(since, now) < self.span {
            return None;
        }
        Some(Disabled {
            at: clock::format(now).to_string(),
            reason: format!(
                "{} failures in a row since {since}",
                counters.consecutive_failures
            ),
        })
    }
}

/// The UTC day of `at`, as the counters name it.
pub fn day_of(at: OffsetDateTime) -> String {
    let date = at.date();
    format!(
        "{:04}-{:02}-{:02}",
        date.year(),
        u8::from(date.month()),
        date.day()
    )
}

/// The state the API shows.
pub fn state(counters: &HealthCounters, disabled: Option<&Disabled>) -> &'static str {
    match (disabled, counters.consecutive_failures) {
        (Some(_), _) => "disabled",
        (None, 0) => "active",
        (None, _) => "failing",
    }
}

/// Attempts since the start of yesterday (UTC) at `now`: the counters of today and yesterday
/// that are still those days', and the start of yesterday.
pub fn recent_attempts(counters: &HealthCounters, now: OffsetDateTime) -> (u64, u64, String) {
    let today = now.date();
    let yesterday = today.previous_day().unwrap_or(today);
    let counts_for = |day: &Option<String>, ok: u64, failed: u64, wanted: Date| {
        if day.as_deref() == Some(day_of(wanted.midnight().assume_utc()).as_str()) {
            (ok, failed)
        } else {
            (0, 0)
        }
    };
    let mut sums = (0, 0);
    for wanted in [today, yesterday] {
        for (day, ok, failed) in [
            (&counters.day, counters.ok, counters.failed),
            (&counters.prev_day, counters.prev_ok, counters.prev_failed),
        ] {
            let (ok, failed) = counts_for(day, ok, failed, wanted);
            sums = (sums.0 + ok, sums.1 + failed);
        }
    }
    let since = clock::format(yesterday.midnight().assume_utc()).to_string();
    (sums.0, sums.1, since)
}

/// The health as `GET /v1/agents/{agent}/endpoint/health` shows it.
pub fn health_json(
    agent_id: &str,
    url: &str,
    counters: &HealthCounters,
    disabled: Option<&Disabled>,
    rule: &DisableRule,
    now: OffsetDateTime,
) -> Value {
    let (ok, failed, since) = recent_attempts(counters, now);
    let success_rate = (ok + failed > 0).then(|| ok as f64 / (ok + failed) as f64);
    json!({
        "agent_id": agent_id,
        "url": url,
        "state": state(counters, disabled),
        "success_rate": success_rate,
        "attempts": {"ok": ok, "failed": failed, "since": since},
        "consecutive_failures": counters.consecutive_failures,
        "failing_since": counters.failing_since,
        "last_error": counters.last_error,
        "last_failure_at": counters.last_failure_at,
        "last_success_at": counters.last_success_at,
        "disabled": disabled.map(Disabled::to_json),
        "disable_after": {"failures": rule.failures, "seconds": rule.span.as_secs()},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn failing(failures: u64, since: &str) -> HealthCounters {
        HealthCounters {
            consecutive_failures: failures,
            failing_since: Some(since.into()),
            ..HealthCounters::default()
        }
    }

    #[test]
    fn an_endpoint_is_disabled_after_enough_failures_spanning_long_enough() {
        let rule = DisableRule {
            failures: 3,
            span: Duration::from_secs(3600),
        };
        let now = datetime!(2026-12-07 10:00:00 UTC);
        assert_eq!(
            rule.disables(&failing(2, "2026-12-07T08:00:00.000000Z"), now),
            None
        );
        assert_eq!(
            rule.disables(&failing(30, "2026-12-07T09:30:00.000000Z"), now),
            None,
            "many failures, but within half an hour"
        );
        let disabled = rule
            .disables(&failing(3, "2026-12-07T09:00:00.000000Z"), now)
            .expect("three failures over an hour");
        assert_eq!(
            disabled.reason,
            "3 failures in a row since 2026-12-07T09:00:00.000000Z"
        );
        assert_eq!(
            rule.disables(&failing(0, "2026-12-07T08:00:00.000000Z"), now),
            None
        );
    }

    #[test]
    fn the_state_is_disabled_then_failing_then_active() {
        let disabled = Disabled {
            at: "t".into(),
            reason: "r".into(),
        };
        assert_eq!(state(&failing(1, "t"), Some(&disabled)), "disabled");
        assert_eq!(state(&failing(1, "t"), None), "failing");
        assert_eq!(state(&HealthCounters::default(), None), "active");
    }

    #[test]
    fn attempts_count_today_and_yesterday_only() {
        let now = datetime!(2026-12-07 00:05:00 UTC);
        let counters = HealthCounters {
            day: Some("2026-12-07".into()),
            ok: 1,
            failed: 1,
            prev_day: Some("2026-12-06".into()),
            prev_ok: 97,
            prev_failed: 1,
            ..HealthCounters::default()
        };
        assert_eq!(
            recent_attempts(&counters, now),
            (98, 2, "2026-12-06T00:00:00.000000Z".into())
        );
        let stale = HealthCounters {
            day: Some("2026-12-06".into()),
            prev_day: Some("2026-12-05".into()),
            ..counters.clone()
        };
        assert_eq!(recent_attempts(&stale, now).0, 1, "only the 6th counts");
        let json = health_json(
            "a",
            "https://x.example",
            &counters,
            None,
            &DisableRule::default(),
            now,
        );
        assert_eq!(json["success_rate"], json!(0.98));
        assert_eq!(json["state"], "active");
        assert_eq!(
            json["disable_after"],
            json!({"failures": 20, "seconds": 3600})
        );
        let none = health_json(
            "a",
            "u",
            &HealthCounters::default(),
            None,
            &DisableRule::default(),
            now,
        );
        assert_eq!(none["success_rate"], Value::Null);
    }

    #[test]
    fn a_day_is_named_as_the_counters_name_it() {
        assert_eq!(day_of(datetime!(2026-01-02 23:59:59 UTC)), "2026-01-02");
    }
}
