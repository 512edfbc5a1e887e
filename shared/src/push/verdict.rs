//! What an endpoint's answer means for the task, and when to try again.

use std::time::Duration;

use serde_json::Value;

use super::dial::{DialError, EndpointResponse};
use crate::domain::message::Part;
pub use crate::domain::retry::{RetrySchedule, MAX_RETRIES, MAX_RETRY_AFTER, MAX_RETRY_DELAY};
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::message::{MAX_DATA_DEPTH, MAX_TEXT_CHARS};
    use crate::domain::Message;
    use crate::push::dial::MAX_RESPONSE_BYTES;
    use crate::push::ssrf::{Refusal, DESTINATION_REFUSED};
    use serde_json::json;

    fn ok(body: impl AsRef<[u8]>) -> Result<EndpointResponse, DialError> {
        Ok(EndpointResponse {
            status: 200,
            content_type: None,
            retry_after: None,
            body: body.as_ref().to_vec(),
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

    fn completed(artifacts: Vec<Artifact>) -> Verdict {
        Verdict::Answered(TaskResult::Completed {
            artifacts,
            message: None,
        })
    }

    /// The one `response` artifact holding `part`.
    fn one_part(part: Value) -> Verdict {
        completed(vec![Artifact {
            name: "response".into(),
            parts: vec![Part::parse(&part, "response").unwrap()],
        }])
    }

    fn invalid_result(why: &str) -> Verdict {
        Verdict::Fail(format!(
            "the endpoint answered with an invalid result: {why}"
        ))
    }

    fn not_acceptable(why: &str) -> Verdict {
        Verdict::Fail(format!("the endpoint's answer is not acceptable: {why}"))
    }

    #[test]
    fn each_status_maps_to_one_verdict() {
        for code in [200, 201, 202, 204, 299] {
            assert_eq!(judge(&status(code)), completed(Vec::new()), "{code}");
        }
        for code in [408, 429, 500, 502, 503, 504, 599] {
            let retry = Verdict::Retry {
                reason: format!("the endpoint answered HTTP {code}"),
                retry_after: Some(Duration::from_secs(7)),
            };
            assert_eq!(judge(&status(code)), retry, "{code}");
        }
        for code in [
            199, 300, 301, 302, 304, 400, 401, 403, 404, 407, 409, 410, 413, 422, 428, 499,
        ] {
            let fail = Verdict::Fail(format!("the endpoint refused the task: HTTP {code}"));
            assert_eq!(judge(&status(code)), fail, "{code}");
        }
    }

    #[test]
    fn each_dial_error_maps_to_one_verdict() {
        let unreachable = |why: &str| Verdict::Retry {
            reason: format!("the endpoint could not be reached: {why}"),
            retry_after: None,
        };
        for (error, expected) in [
            (DialError::Timeout, unreachable("timed out")),
            (DialError::Connect, unreachable("connection failed")),
            (DialError::Other, unreachable("request failed")),
            (
                DialError::Refused(Refusal::Private),
                Verdict::Fail(format!("delivery refused: {DESTINATION_REFUSED}")),
            ),
            (
                DialError::Refused(Refusal::BadUrl("empty host".into())),
                Verdict::Fail("delivery refused: the url is not valid: empty host".into()),
            ),
            (
                DialError::TooLarge,
                Verdict::Fail(format!(
                    "answer too large: the endpoint's response was larger than \
                     {MAX_RESPONSE_BYTES} bytes"
                )),
            ),
        ] {
            assert_eq!(judge(&Err(error.clone())), expected, "{error:?}");
        }
    }

    /// A 2xx body: a TaskResultIn (`state` or `artifacts`) as it is, other JSON as one data
    /// artifact, anything else as one text artifact, nothing at all as no artifacts.
    #[test]
    fn each_answer_body_maps_to_one_verdict() {
        let question = json!({"role": "agent", "parts": [{"text": "which one?"}]});
        let deep = (0..MAX_DATA_DEPTH + 8).fold(json!(1), |inner, _| json!([inner]));
        let long_text = "a".repeat(MAX_TEXT_CHARS + 1);
        for (body, expected) in [
            (String::new(), completed(Vec::new())),
            (" \n\t ".into(), completed(Vec::new())),
            (
                json!({"state": "completed"}).to_string(),
                completed(Vec::new()),
            ),
            (
                json!({"artifacts": [{"parts": [{"text": "a"}]}]}).to_string(),
                completed(vec![Artifact::parse(
                    &json!({"parts": [{"text": "a"}]}),
                    "a",
                )
                .unwrap()]),
            ),
            (
                json!({"state": "failed", "error": "nope"}).to_string(),
                Verdict::Answered(TaskResult::Failed {
                    error: "nope".into(),
                }),
            ),
            (
                json!({"state": "failed"}).to_string(),
                Verdict::Answered(TaskResult::Failed {
                    error: "the callee reported a failure".into(),
                }),
            ),
            (
                json!({"state": "input_required", "message": question}).to_string(),
                Verdict::Answered(TaskResult::InputRequired {
                    question: Message::parse(&question, "message").unwrap(),
                }),
            ),
            (json!({"state": "working"}).to_string(), Verdict::Accepted),
            (
                json!({"state": "bogus"}).to_string(),
                invalid_result("state must be completed, failed or input_required"),
            ),
            (
                json!({"state": "completed", "extra": 1}).to_string(),
                invalid_result("extra is not a TaskResultIn field"),
            ),
            (
                json!({"state": "input_required"}).to_string(),
                invalid_result("an input_required result needs message: the question to ask"),
            ),
            (
                json!({"category": "software"}).to_string(),
                one_part(json!({"data": {"category": "software"}})),
            ),
            (json!([1, 2]).to_string(), one_part(json!({"data": [1, 2]}))),
            (json!(42).to_string(), one_part(json!({"data": 42}))),
            (
                json!("quoted").to_string(),
                one_part(json!({"data": "quoted"})),
            ),
            (
                deep.to_string(),
                not_acceptable(&format!(
                    "response.data is nested deeper than {MAX_DATA_DEPTH} levels"
                )),
            ),
            (
                "handled: hi".into(),
                one_part(json!({"text": "handled: hi"})),
            ),
            (
                long_text,
                not_acceptable(&format!(
                    "response.text is longer than {MAX_TEXT_CHARS} characters"
                )),
            ),
        ] {
            assert_eq!(judge(&ok(&body)), expected, "{body:.80}");
        }
        assert_eq!(
            judge(&ok(b"caf\xe9")),
            one_part(json!({"text": "caf\u{fffd}"})),
            "not UTF-8: read lossily"
        );
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
