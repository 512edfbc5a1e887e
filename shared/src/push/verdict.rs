//! What an endpoint's answer means for the task, and when to try again.

use std::time::Duration;

use serde_json::Value;

use super::dial::{DialError, EndpointResponse};
use crate::domain::message::Part;
use crate::domain::task::{Artifact, ResultRejection, TaskResult};

/// What to do after one delivery attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The endpoint answered the task.
    Answered(TaskResult),
    /// `{"state": "working"}`: the callee finishes later through the result route.
    Accepted,
    /// Worth another attempt (timeouts, connection errors, 408, 429, 5xx).
    Retry {
        reason: String,
        retry_after: Option<Duration>,
    },
    /// Final: the task fails with this error.
    Fail(String),
}

fn one_artifact(part: Part) -> TaskResult {
    TaskResult::Completed {
        artifacts: vec![Artifact {
            name: "response".into(),
            parts: vec![part],
        }],
        message: None,
    }
}

/// Maps a 2xx body: a TaskResultIn; any other JSON as one data artifact; anything else as one
/// text artifact.
pub fn interpret_body(response: &EndpointResponse) -> Verdict {
    if response.body.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Answered(TaskResult::Completed {
            artifacts: Vec::new(),
            message: None,
        });
    }
    match serde_json::from_slice::<Value>(&response.body) {
        Ok(Value::Object(object))
            if object.contains_key("state") || object.contains_key("artifacts") =>
        {
            let mut body = Value::Object(object);
            if body.get("state").is_none() {
                body["state"] = Value::String("completed".into());
            }
            match TaskResult::parse_pull(&body) {
                Ok(result) => Verdict::Answered(result),
                Err(ResultRejection::WorkingFromPull) => Verdict::Accepted,
                Err(ResultRejection::Invalid(invalid)) => Verdict::Fail(format!(
                    "the endpoint answered with an invalid result: {invalid}"
                )),
            }
        }
        Ok(value) => match Part::parse(&serde_json::json!({ "data": value }), "response") {
            Ok(part) => Verdict::Answered(one_artifact(part)),
            Err(invalid) => Verdict::Fail(format!(
                "the endpoint's answer is not acceptable: {invalid}"
            )),
        },
        Err(_) => {
            let text = String::from_utf8_lossy(&response.body).into_owned();
            match Part::parse(&serde_json::json!({ "text": text }), "response") {
                Ok(part) => Verdict::Answered(one_artifact(part)),
                Err(invalid) => Verdict::Fail(format!(
                    "the endpoint's answer is not acceptable: {invalid}"
                )),
            }
        }
    }
}

/// Maps one attempt's outcome.
pub fn judge(outcome: &Result<EndpointResponse, DialError>) -> Verdict {
    match outcome {
        Ok(response) if (200..300).contains(&response.status) => interpret_body(response),
        Ok(response) if matches!(response.status, 408 | 429) || response.status >= 500 => {
            Verdict::Retry {
                reason: format!("the endpoint answered HTTP {}", response.status),
                retry_after: response.retry_after,
            }
        }
        Ok(response) => Verdict::Fail(format!(
            "the endpoint refused the task: HTTP {}",
            response.status
        )),
        Err(DialError::Refused(refusal)) => Verdict::Fail(format!("delivery refused: {refusal}")),
        Err(DialError::TooLarge) => Verdict::Fail(DialError::TooLarge.to_string()),
        Err(error) => Verdict::Retry {
            reason: format!("the endpoint could not be reached: {error}"),
            retry_after: None,
        },
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(body: &str) -> Result<EndpointResponse, DialError> {
        Ok(EndpointResponse {
            status: 200,
            content_type: None,
            retry_after: None,
            body: body.as_bytes().to_vec(),
        })
    }

    fn status(code: u16) -> Result<EndpointResponse, DialError> {
        Ok(EndpointResponse {
            status: code,
            content_type: None,
            retry_after: Some(Duration::from_secs(7)),
            body: Vec::new(),
        })
    }

    #[test]
    fn a_task_result_is_taken_as_it_is() {
        let verdict = judge(&ok(r#"{"state": "failed", "error": "nope"}"#));
        assert_eq!(
            verdict,
            Verdict::Answered(TaskResult::Failed {
                error: "nope".into()
            })
        );
        assert_eq!(judge(&ok(r#"{"state": "working"}"#)), Verdict::Accepted);
        let artifacts_only = judge(&ok(r#"{"artifacts": [{"parts": [{"text": "a"}]}]}"#));
        assert!(matches!(
            artifacts_only,
            Verdict::Answered(TaskResult::Completed { .. })
        ));
        assert!(matches!(
            judge(&ok(r#"{"state": "bogus"}"#)),
            Verdict::Fail(_)
        ));
    }

    #[test]
    fn other_json_is_one_data_artifact_and_text_is_one_text_artifact() {
        let data = judge(&ok(r#"{"category": "software"}"#));
        let Verdict::Answered(TaskResult::Completed { artifacts, .. }) = data else {
            panic!("{data:?}")
        };
        assert_eq!(
            serde_json::to_value(&artifacts).unwrap(),
            json!([{"name": "response", "parts": [{"data": {"category": "software"}}]}])
        );
        let text = judge(&ok("handled: hi"));
        let Verdict::Answered(TaskResult::Completed { artifacts, .. }) = text else {
            panic!("{text:?}")
        };
        assert_eq!(
            serde_json::to_value(&artifacts).unwrap(),
            json!([{"name": "response", "parts": [{"text": "handled: hi"}]}])
        );
    }

    #[test]
    fn transient_failures_retry_and_other_4xx_fail_at_once() {
        for code in [408, 429, 500, 502, 503, 504] {
            assert!(
                matches!(
                    judge(&status(code)),
                    Verdict::Retry {
                        retry_after: Some(_),
                        ..
                    }
                ),
                "{code}"
            );
        }
        for code in [301, 400, 401, 403, 404, 410, 422] {
            assert!(matches!(judge(&status(code)), Verdict::Fail(_)), "{code}");
        }
        assert!(matches!(
            judge(&Err(DialError::Timeout)),
            Verdict::Retry { .. }
        ));
        assert!(matches!(
            judge(&Err(DialError::Connect)),
            Verdict::Retry { .. }
        ));
        assert!(matches!(
            judge(&Err(DialError::Refused(
                super::super::ssrf::Refusal::Private
            ))),
            Verdict::Fail(_)
        ));
    }

    #[test]
    fn the_schedule_jitters_and_honours_retry_after_within_bounds() {
        let schedule = RetrySchedule::default();
        assert_eq!(schedule.max_attempts(), 6);
        assert_eq!(
            schedule.delay_after(1, None, 0.0),
            Some(Duration::from_secs(4))
        );
        assert_eq!(
            schedule.delay_after(1, None, 1.0),
            Some(Duration::from_secs(6))
        );
        assert_eq!(
            schedule.delay_after(5, None, 0.5),
            Some(Duration::from_secs(1800))
        );
        assert_eq!(schedule.delay_after(6, None, 0.5), None);
        assert_eq!(
            schedule.delay_after(1, Some(Duration::from_secs(3600)), 0.5),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(
            schedule.delay_after(1, Some(Duration::ZERO), 0.5),
            Some(Duration::from_secs(1))
        );
        assert_eq!(RetrySchedule::parse("0.2, 1").unwrap().max_attempts(), 3);
        assert!(RetrySchedule::parse("x").is_err());
    }

    #[test]
    fn a_schedule_out_of_bounds_is_refused_not_a_panic() {
        for bad in [
            "inf",
            "-inf",
            "NaN",
            "1e30",
            "-1",
            "43201",
            "5,",
            "",
            "1,1,1,1,1,1,1,1,1",
        ] {
            assert!(RetrySchedule::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            RetrySchedule::parse("0, 43200").unwrap().delays,
            [Duration::ZERO, MAX_RETRY_DELAY]
        );
    }
}
