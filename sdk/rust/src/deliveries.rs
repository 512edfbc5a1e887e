//! Operating push deliveries (docs/api.md, "Operating deliveries"): an endpoint's health,
//! enabling an endpoint the gateway disabled, redriving the deliveries waiting for a retry,
//! replaying one task's delivery, and replaying an A2A push notification config's latest event.

use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::client::{segment, Client, Request};
use crate::error::Result;
use crate::manage::agent_path;

/// A push endpoint's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndpointState {
    /// Its latest attempt succeeded (or none was made yet).
    Active,
    /// Its latest attempt failed.
    Failing,
    /// Switched off after a run of failures, until an admin enables it.
    Disabled,
    /// A state this SDK does not know yet.
    #[serde(other)]
    Unknown,
}

impl EndpointState {
    /// The state as the gateway spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            EndpointState::Active => "active",
            EndpointState::Failing => "failing",
            EndpointState::Disabled => "disabled",
            EndpointState::Unknown => "unknown",
        }
    }
}

/// When a push endpoint that kept failing was switched off, and why (its failures in a row and
/// since when).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointDisabled {
    pub at: String,
    pub reason: String,
}

/// The deliveries of an endpoint that succeeded and failed since `since`, the start of
/// yesterday (UTC). `ok` may lag by a minute: the gateway adds successes up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointAttemptCounts {
    pub ok: u64,
    pub failed: u64,
    pub since: String,
}

/// The gateway disables an endpoint that failed `failures` attempts in a row spanning at least
/// `seconds`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointDisableAfter {
    pub failures: u32,
    pub seconds: u64,
}

/// A push endpoint's health: [`Client::endpoint_health`], and the answer of
/// [`Client::enable_endpoint`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointHealth {
    pub agent_id: String,
    pub url: String,
    pub state: EndpointState,
    /// The share of the deliveries counted in `attempts` that succeeded (0 to 1); `None` before
    /// any.
    pub success_rate: Option<f64>,
    pub attempts: EndpointAttemptCounts,
    /// Failed attempts in a row since the latest success (0 while it succeeds).
    pub consecutive_failures: u32,
    /// The first failure of the current run; `None` while the endpoint succeeds.
    pub failing_since: Option<String>,
    pub last_error: Option<String>,
    pub last_failure_at: Option<String>,
    pub last_success_at: Option<String>,
    /// Set while the endpoint is disabled.
    pub disabled: Option<EndpointDisabled>,
    pub disable_after: EndpointDisableAfter,
}

/// The answer of [`Client::redrive_deliveries`]: the tasks whose waiting delivery is attempted
/// again now (at most 100, oldest first), and the `since` of the next call when more may wait.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redriven {
    pub redriven: u32,
    pub task_ids: Vec<String>,
    pub next_since: Option<String>,
}

/// The answer of [`Client::replay_delivery`]: the task, and its delivery's `webhook-id` (kept: a
/// replay is a retry of the same delivery).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replayed {
    pub task_id: String,
    pub webhook_id: String,
}

/// The answer of [`Client::replay_notification`]: the task's A2A push notification config that
/// is sent its latest event again, that event's number (its place in the task's events, from 1),
/// and its `webhook-id` (`{task_id}:{config_id}:{event}`: the one it was first sent under, so a
/// receiver that handled it drops it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayedNotification {
    pub task_id: String,
    pub config_id: String,
    pub event: u64,
    pub webhook_id: String,
}

fn endpoint_path(agent: &str, action: &str) -> Result<String> {
    Ok(format!("{}/endpoint/{action}", agent_path(agent)?))
}

fn health_request(agent: &str) -> Result<Request> {
    Ok(Request::get(endpoint_path(agent, "health")?))
}

/// Sent again after a broken connection: an endpoint that is not disabled is left as it is.
fn enable_request(agent: &str) -> Result<Request> {
    Ok(Request::new(Method::POST, endpoint_path(agent, "enable")?).repeatable(true))
}

/// Not sent again after a broken connection: a repeat would attempt the deliveries once more.
fn redrive_request(agent: &str, since: &str) -> Result<Request> {
    let body = json!({ "since": since });
    Ok(Request::post(endpoint_path(agent, "redrive")?, body))
}

/// Not sent again after a broken connection: a repeat could find the first one's attempt under
/// way (a `409`).
fn replay_request(callee: &str, task_id: &str) -> Result<Request> {
    let path = format!("{}/tasks/{}/replay", agent_path(callee)?, segment(task_id)?);
    Ok(Request::new(Method::POST, path))
}

/// Not sent again after a broken connection: a repeat would send the event once more (or find
/// the first one's send under way, a `409`).
fn replay_notification_request(callee: &str, task_id: &str, config_id: &str) -> Result<Request> {
    let path = format!(
        "{}/tasks/{}/notifications/{}/replay",
        agent_path(callee)?,
        segment(task_id)?,
        segment(config_id)?
    );
    Ok(Request::new(Method::POST, path))
}

impl Client {
    /// The push endpoint's health: its state, the run of failures and the last error, and the
    /// deliveries counted since yesterday. The agent's owner, an admin or a viewer; `404` for an
    /// agent without a push endpoint: `GET /v1/agents/{agent}/endpoint/health`.
    pub async fn endpoint_health(&self, agent: &str) -> Result<EndpointHealth> {
        self.send_json(health_request(agent)?).await
    }

    /// Switches a disabled push endpoint on again (an admin: `403` otherwise), clearing its run
    /// of failures; answers with its health. An endpoint that is not disabled is left as it is,
    /// so the request is sent again after a broken connection:
    /// `POST /v1/agents/{agent}/endpoint/enable`.
    pub async fn enable_endpoint(&self, agent: &str) -> Result<EndpointHealth> {
        self.send_json(enable_request(agent)?).await
    }

    /// Attempts again now every delivery still waiting for a retry, of the agent's tasks opened
    /// at or after `since` (RFC 3339), at most 100 a call: call again from
    /// [`Redriven::next_since`] while it is `Some`. `400` for a `since` that is not RFC 3339,
    /// `409` for a disabled endpoint. Not sent again after a broken connection (a repeat would
    /// attempt them once more): `POST /v1/agents/{agent}/endpoint/redrive`.
    pub async fn redrive_deliveries(&self, agent: &str, since: &str) -> Result<Redriven> {
        self.send_json(redrive_request(agent, since)?).await
    }

    /// Attempts a push task's waiting delivery now, with a fresh retry budget (`202`). `409`
    /// unless the task is a push task still waiting for its delivery (a finished, pull or
    /// accepted task, an attempt under way, a disabled endpoint); `404` for an unknown task. Not
    /// sent again after a broken connection:
    /// `POST /v1/agents/{callee}/tasks/{task_id}/replay`.
    pub async fn replay_delivery(&self, callee: &str, task_id: &str) -> Result<Replayed> {
        self.send_json(replay_request(callee, task_id)?).await
    }

    /// Sends an A2A push notification config of the task the latest event it received, again
    /// (`202`), under the `webhook-id` it was first sent under (`{task_id}:{config_id}:{event}`),
    /// with the config's current credentials and a fresh retry budget. The task's caller (the
    /// agent that manages its push notification configs) or an admin: `403` for anyone else who
    /// may read the task; `404` for a config the task does not have; `409` for one that has
    /// received no event yet, or while an event is being sent to it. Not sent again after a
    /// broken connection (a repeat would send the event once more):
    /// `POST /v1/agents/{callee}/tasks/{task_id}/notifications/{config_id}/replay`.
    pub async fn replay_notification(
        &self,
        callee: &str,
        task_id: &str,
        config_id: &str,
    ) -> Result<ReplayedNotification> {
        self.send_json(replay_notification_request(callee, task_id, config_id)?)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_health_reads_its_nulls_and_an_unknown_state() {
        let health: EndpointHealth = serde_json::from_value(json!({
            "agent_id": "a-1", "url": "https://callee.example.com/a2a", "state": "resting",
            "success_rate": null, "attempts": {"ok": 0, "failed": 0, "since": "2026-12-06T00:00:00Z"},
            "consecutive_failures": 0, "failing_since": null, "last_error": null,
            "last_failure_at": null, "last_success_at": null, "disabled": null,
            "disable_after": {"failures": 20, "seconds": 3600}
        }))
        .expect("a health");
        assert_eq!(health.state, EndpointState::Unknown);
        assert_eq!(health.success_rate, None);
        assert_eq!(health.disable_after.failures, 20);
    }

    #[test]
    fn the_requests_escape_their_segments_and_only_enable_is_sent_again() {
        let health = health_request("invoice classifier").expect("a request");
        assert_eq!(health.method, Method::GET);
        assert_eq!(
            health.path,
            "/v1/agents/invoice%20classifier/endpoint/health"
        );
        let enable = enable_request("a").expect("a request");
        assert_eq!(
            (
                enable.method,
                enable.path.as_str(),
                enable.body,
                enable.repeatable
            ),
            (Method::POST, "/v1/agents/a/endpoint/enable", None, true)
        );
        let redrive = redrive_request("a", "2026-12-07T09:00:00Z").expect("a request");
        assert_eq!(redrive.path, "/v1/agents/a/endpoint/redrive");
        assert_eq!(redrive.body, Some(json!({"since": "2026-12-07T09:00:00Z"})));
        assert!(!redrive.repeatable);
        let replay = replay_request("a", "t/1").expect("a request");
        assert_eq!(
            (
                replay.method,
                replay.path.as_str(),
                replay.body,
                replay.repeatable
            ),
            (Method::POST, "/v1/agents/a/tasks/t%2F1/replay", None, false)
        );
        assert!(health_request("").is_err() && replay_request("a", "").is_err());
    }

    #[test]
    fn a_notification_replay_names_its_config_and_is_not_sent_again() {
        let replay = replay_notification_request("invoice classifier", "t/1", "refund hook")
            .expect("a request");
        assert_eq!(
            (
                replay.method,
                replay.path.as_str(),
                replay.body,
                replay.repeatable
            ),
            (
                Method::POST,
                "/v1/agents/invoice%20classifier/tasks/t%2F1/notifications/refund%20hook/replay",
                None,
                false
            )
        );
        for (callee, task_id, config_id) in [("", "t", "c"), ("a", "", "c"), ("a", "t", "")] {
            assert!(replay_notification_request(callee, task_id, config_id).is_err());
        }
        let replayed: ReplayedNotification = serde_json::from_value(json!({
            "task_id": "t-1", "config_id": "hook", "event": 4, "webhook_id": "t-1:hook:4"
        }))
        .expect("an answer");
        assert_eq!(
            (replayed.event, replayed.webhook_id.as_str()),
            (4, "t-1:hook:4")
        );
    }
}
