//! Serving push deliveries with the handler `serve` takes: [`PushEndpoint`].
//!
//! The gateway POSTs each delivery of a push agent's task to its endpoint (docs/api.md, "Push
//! delivery") and reads the task's answer from the response. [`PushEndpoint::handle`] takes that
//! POST as an `http::Request` (hyper, axum, `lambda_http` and most Rust servers hand one over) and
//! returns the `http::Response` to send back:
//!
//! 1. It verifies the delivery ([`crate::webhooks::verify_delivery`]): the timestamp within the
//!    tolerance, the Ed25519 signature with a `webhook-signing` key of the gateway's JWKS
//!    (fetched with the [`Client`] and cached; fetched again when no cached key verifies, at most
//!    once per [`PushOptions::jwks_refresh_cooldown`], and when older than
//!    [`PushOptions::jwks_max_age`]), `destination` naming this endpoint URL and agent, and the
//!    `webhook-id` not seen before ([`ReplayCache`]). A delivery that fails a check is answered
//!    `401` and the handler never runs.
//! 2. It reads the task with the [`Client`] (`GET /v1/agents/{agent}/tasks/{id}`), so the handler
//!    gets the [`Task`] `serve` would claim: its conversation, caller and `history`, whose last
//!    `user` message is the caller's answer on the delivery that follows a question. (With a
//!    [`JwksSource::Fixed`] there is no gateway to ask: the task is built from the body, see
//!    [`task_of_delivery`].) It runs the handler and answers `200` with the TaskResultIn its
//!    reply stands for: the JSON the pull path posts to `POST /v1/agents/me/tasks/{id}/result`,
//!    which the gateway applies as it is. A reply of
//!    [`TaskReply::fail`](crate::TaskReply::fail) (or a handler's `Err`) is that failed
//!    TaskResultIn.
//! 3. A handler that panics is answered `500`, so the gateway tries the delivery again (with the
//!    same `webhook-id`, which is then let through once more); after its last attempt the task
//!    fails. A JWKS or a task that cannot be read from the gateway is answered `503` with
//!    `Retry-After: 5` (tried again too, the `webhook-id` let through again).
//!
//! One attempt may take the gateway's push timeout (10 s by default), answer included; a handler
//! that needs longer answers [`TaskReply::working`](crate::TaskReply::working) at once and
//! finishes the task later with [`Client::reply`].

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures::FutureExt;
use http::header::{HeaderValue, ALLOW, CONTENT_TYPE, RETRY_AFTER};
use http::{Method, Request, Response, StatusCode};
use serde_json::{json, Map, Value};

use crate::client::Client;
use crate::serve::panic_message;
use crate::task::{IntoReply, Message, Task, TaskInput, TaskState, TaskStatus};
use crate::webhooks::{
    verify_delivery, DeliveryHeaders, Expected, ReplayCache, WebhookError, DEFAULT_TOLERANCE,
};

/// How often, at most, a signature no cached key verifies fetches the JWKS again (by default).
pub const DEFAULT_JWKS_REFRESH_COOLDOWN: Duration = Duration::from_secs(10);
/// How long a fetched JWKS is used before it is fetched again (by default).
pub const DEFAULT_JWKS_MAX_AGE: Duration = Duration::from_secs(600);
/// The `Retry-After` (seconds) of a `503` answered when the gateway cannot be read (the JWKS,
/// the task).
const GATEWAY_RETRY_AFTER_SECONDS: u64 = 5;

/// Where the gateway's signing keys come from.
#[derive(Debug, Clone)]
pub enum JwksSource {
    /// Fetched with this client (`GET /v1/billing/export/pubkey`; any key of the tenant, usually
    /// the agent's own) and cached.
    Client(Client),
    /// A fixed JWKS (`{"keys": [...]}`), never fetched: keys you distribute yourself.
    Fixed(Value),
}

/// How a [`PushEndpoint`] verifies deliveries.
#[derive(Debug, Clone)]
pub struct PushOptions {
    /// The endpoint's URL exactly as saved on the agent (`PUT /v1/agents/{agent}/endpoint`, as
    /// `GET /v1/agents/{agent}` shows it): each delivery's `destination.url` must equal it.
    pub endpoint_url: String,
    /// The agent whose endpoint this is: each delivery's `destination.agent_id` must equal it.
    pub agent_id: String,
    /// Where the JWKS comes from.
    pub jwks: JwksSource,
    /// How far `webhook-timestamp` may be from this clock, either way (default 300 s).
    pub tolerance: Duration,
    /// The `webhook-id`s already handled; `None` accepts a repeated id. One per process by
    /// default; share one `Arc` between endpoints of one process, or give `None` and keep
    /// your own store when several processes serve the endpoint.
    pub replay: Option<Arc<ReplayCache>>,
    /// The least time between two fetches of the JWKS made because no cached key verified a
    /// signature (default 10 s), so forged requests cannot make the endpoint fetch on each one.
    pub jwks_refresh_cooldown: Duration,
    /// A fetched JWKS older than this is fetched again before use (default 10 minutes).
    pub jwks_max_age: Duration,
}

impl PushOptions {
    /// The defaults: the JWKS fetched with `client`, a tolerance of 300 s, a replay cache of
    /// its own.
    pub fn new(
        endpoint_url: impl Into<String>,
        agent_id: impl Into<String>,
        client: Client,
    ) -> PushOptions {
        PushOptions {
            endpoint_url: endpoint_url.into(),
            agent_id: agent_id.into(),
            jwks: JwksSource::Client(client),
            tolerance: DEFAULT_TOLERANCE,
            replay: Some(Arc::new(ReplayCache::new(DEFAULT_TOLERANCE))),
            jwks_refresh_cooldown: DEFAULT_JWKS_REFRESH_COOLDOWN,
            jwks_max_age: DEFAULT_JWKS_MAX_AGE,
        }
    }

    /// [`PushOptions::new`] for the agent `client`'s key belongs to (read with `GET /v1/agents/me`).
    pub async fn for_agent(
        endpoint_url: impl Into<String>,
        client: Client,
    ) -> crate::Result<PushOptions> {
        let me = client.me().await?;
        Ok(PushOptions::new(endpoint_url, me.id, client))
    }
}

/// The JWKS last fetched, and when.
struct CachedJwks {
    jwks: Arc<Value>,
    fetched: Instant,
}

/// Why a delivery got no answer from the handler.
enum Refusal {
    /// A check failed: `401`.
    Unverified(WebhookError),
    /// The JWKS could not be fetched: `503`.
    NoJwks(crate::Error),
}

/// A push endpoint serving deliveries with `handler`, the same handler [`Client::serve`] takes
/// (`Fn(Task) -> impl Future<Output = impl IntoReply>`). See the [module](self) for what it
/// answers when.
///
/// Framework-neutral: give [`PushEndpoint::handle`] the request as an `http::Request` whose body
/// is the raw bytes (`Vec<u8>`, `bytes::Bytes`, `lambda_http::Body`, `String`...), or the headers
/// and body to [`PushEndpoint::handle_delivery`]. Share it between connections in an `Arc`.
///
/// In an AWS Lambda function behind API Gateway (`lambda_http`, which this crate does not
/// depend on):
///
/// ```ignore
/// use std::sync::Arc;
/// use forgebench_sdk::{Client, PushEndpoint, PushOptions, Task, TaskReply};
/// use lambda_http::{run, service_fn, Error, Request};
///
/// async fn handle(task: Task) -> TaskReply {
///     task.done().text(format!("hello, {}", task.text()))
/// }
///
/// #[tokio::main]
/// async fn main() -> Result<(), Error> {
///     let client = Client::from_env()?; // the agent's key: it reads the JWKS
///     // the URL saved with PUT /v1/agents/{agent}/endpoint, exactly
///     let url = std::env::var("PUSH_ENDPOINT_URL")?;
///     let endpoint = Arc::new(PushEndpoint::new(handle, PushOptions::for_agent(url, client).await?));
///     run(service_fn(move |request: Request| {
///         let endpoint = Arc::clone(&endpoint);
///         async move { Ok::<_, Error>(endpoint.handle(request).await) }
///     }))
///     .await
/// }
/// ```
pub struct PushEndpoint<H> {
    handler: H,
    options: PushOptions,
    jwks: tokio::sync::Mutex<Option<CachedJwks>>,
}

impl<H> std::fmt::Debug for PushEndpoint<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushEndpoint")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<H, F, R> PushEndpoint<H>
where
    H: Fn(Task) -> F,
    F: Future<Output = R>,
    R: IntoReply,
{
    pub fn new(handler: H, options: PushOptions) -> PushEndpoint<H> {
        PushEndpoint {
            handler,
            options,
            jwks: tokio::sync::Mutex::new(None),
        }
    }

    /// The options it verifies with.
    pub fn options(&self) -> &PushOptions {
        &self.options
    }

    /// Answers one request: a `POST` is a delivery ([`PushEndpoint::handle_delivery`]); any other
    /// method is `405`.
    pub async fn handle<B: AsRef<[u8]>>(&self, request: Request<B>) -> Response<String> {
        if request.method() != Method::POST {
            let mut response = answer(
                StatusCode::METHOD_NOT_ALLOWED,
                &json!({"error": "a push endpoint takes POST"}),
            );
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("POST"));
            return response;
        }
        self.handle_delivery(request.headers(), request.body().as_ref())
            .await
    }

    /// Answers one delivery: its headers (any [`DeliveryHeaders`]: an `http::HeaderMap`, a map or
    /// a list of pairs) and its raw body, exactly as received.
    pub async fn handle_delivery<D: DeliveryHeaders + ?Sized>(
        &self,
        headers: &D,
        body: &[u8],
    ) -> Response<String> {
        let delivery = match self.verify(headers, body).await {
            Ok(delivery) => delivery,
            Err(Refusal::Unverified(error)) => {
                tracing::warn!(check = %error.check(), %error, "forgebench: a push delivery was refused");
                return answer(
                    StatusCode::UNAUTHORIZED,
                    &json!({"error": error.to_string(), "check": error.check().as_str()}),
                );
            }
            Err(Refusal::NoJwks(error)) => {
                tracing::error!(%error, "forgebench: the gateway's JWKS could not be fetched");
                return unavailable("the gateway's signing keys could not be fetched");
            }
        };
        let webhook_id = headers.header("webhook-id").unwrap_or("").trim().to_owned();
        let delivered = match task_of_delivery(&delivery) {
            Ok(task) => task,
            Err(reason) => {
                tracing::error!(
                    reason,
                    "forgebench: a verified push delivery could not be read"
                );
                return answer(StatusCode::BAD_REQUEST, &json!({"error": reason}));
            }
        };
        let task = match &self.options.jwks {
            // The task as `serve` would claim it: its conversation, caller and history.
            JwksSource::Client(client) => {
                match client.task(&self.options.agent_id, &delivered.id, 0).await {
                    Ok(task) => task,
                    Err(error) => {
                        tracing::error!(task_id = %delivered.id, %error, "forgebench: a pushed task could not be read");
                        // The gateway's retry of this delivery (the same webhook-id) is let in.
                        if let Some(replay) = &self.options.replay {
                            replay.forget(&webhook_id);
                        }
                        return unavailable("the task could not be read");
                    }
                }
            }
            JwksSource::Fixed(_) => delivered,
        };
        let task_id = task.id.clone();
        // In the trace the delivery's POST is in, when the application has OpenTelemetry.
        let handled = AssertUnwindSafe(crate::trace_context::within(
            headers.header("traceparent"),
            headers.header("tracestate"),
            async { (self.handler)(task).await.into_reply() },
        ));
        match handled.catch_unwind().await {
            Ok(reply) => {
                // A reply holds strings and `Value`s: it always serializes. Fail the task if not.
                let body = serde_json::to_string(&reply).unwrap_or_else(|error| {
                    let reason = format!("the handler's reply is not JSON: {error}");
                    json!({"state": TaskState::Failed.as_str(), "error": reason}).to_string()
                });
                json_response(StatusCode::OK, body)
            }
            Err(panic) => {
                let reason = panic_message(panic.as_ref());
                tracing::error!(
                    task_id,
                    reason,
                    "forgebench: the handler panicked; the gateway will try the delivery again"
                );
                // Let the gateway's retry of this delivery (the same webhook-id) through.
                if let Some(replay) = &self.options.replay {
                    replay.forget(&webhook_id);
                }
                answer(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &json!({"error": "the handler failed"}),
                )
            }
        }
    }

    async fn verify<D: DeliveryHeaders + ?Sized>(
        &self,
        headers: &D,
        body: &[u8],
    ) -> Result<Value, Refusal> {
        let jwks = self.jwks(false).await.map_err(Refusal::NoJwks)?;
        match self.check(headers, body, &jwks) {
            Err(WebhookError::Signature(reason))
                if matches!(self.options.jwks, JwksSource::Client(_)) =>
            {
                // A key rotated since the fetch: fetch again (within the cooldown) and retry.
                match self.jwks(true).await.map_err(Refusal::NoJwks)? {
                    fresh if !Arc::ptr_eq(&fresh, &jwks) => self.check(headers, body, &fresh),
                    _ => Err(WebhookError::Signature(reason)),
                }
            }
            outcome => outcome,
        }
        .map_err(Refusal::Unverified)
    }

    fn check<D: DeliveryHeaders + ?Sized>(
        &self,
        headers: &D,
        body: &[u8],
        jwks: &Value,
    ) -> Result<Value, WebhookError> {
        let expected = Expected {
            url: &self.options.endpoint_url,
            agent_id: &self.options.agent_id,
        };
        verify_delivery(
            headers,
            body,
            jwks,
            &expected,
            self.options.tolerance,
            SystemTime::now(),
            self.options.replay.as_deref(),
        )
    }

    /// The JWKS to verify with: the cached one, fetched first when there is none or it is too
    /// old, or (`refresh`) when the cooldown since the last fetch has passed.
    async fn jwks(&self, refresh: bool) -> crate::Result<Arc<Value>> {
        let client = match &self.options.jwks {
            JwksSource::Fixed(jwks) => return Ok(Arc::new(jwks.clone())),
            JwksSource::Client(client) => client,
        };
        // One fetch at a time: concurrent deliveries wait for it rather than fetch again.
        let mut cached = self.jwks.lock().await;
        if let Some(held) = cached.as_ref() {
            let age = held.fetched.elapsed();
            let due = if refresh {
                age >= self.options.jwks_refresh_cooldown
            } else {
                age >= self.options.jwks_max_age
            };
            if !due {
                return Ok(Arc::clone(&held.jwks));
            }
        }
        let jwks = match client.signing_keys().await {
            Ok(jwks) => Arc::new(jwks.to_value()),
            Err(error) => match cached.as_ref() {
                // A set past its age still verifies until a rotation: keep using it meanwhile.
                Some(held) if !refresh => {
                    tracing::warn!(%error, "forgebench: the gateway's JWKS could not be fetched again; the cached one is used");
                    return Ok(Arc::clone(&held.jwks));
                }
                _ => return Err(error),
            },
        };
        *cached = Some(CachedJwks {
            jwks: Arc::clone(&jwks),
            fetched: Instant::now(),
        });
        Ok(jwks)
    }
}

/// The [`Task`] a delivery body (`{"task_id", "call_id", "message", "destination"}`) stands for
/// on its own: what the handler of a [`PushEndpoint`] with a [`JwksSource::Fixed`] receives
/// (with [`JwksSource::Client`] it receives the task read from the gateway, as `serve` claims
/// it):
///
/// - `id` is `task_id`, `call_id` is `call_id`, `callee_agent_id` is `destination.agent_id`;
/// - `status.state` is `working` (the task is being delivered);
/// - `input.message` (what [`Task::message`], [`Task::text`] and [`Task::data`] read) and the one
///   entry of `history` are the delivery's `message`: the caller's opening message, or, on the
///   delivery that follows the caller's answer to a question, that answer;
/// - `context_id` and the caller are unknown (empty, `None`): a delivery does not carry them;
/// - `extra` holds `"delivery": "push"` and the `destination`.
pub fn task_of_delivery(delivery: &Value) -> Result<Task, String> {
    let task_id = delivery
        .get("task_id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .ok_or("the delivery names no task_id")?;
    let message: Message =
        serde_json::from_value(delivery.get("message").cloned().unwrap_or(Value::Null))
            .map_err(|error| format!("the delivery's message is not a message: {error}"))?;
    let destination = delivery.get("destination").cloned().unwrap_or(Value::Null);
    let callee_agent_id = destination
        .get("agent_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut extra = Map::new();
    extra.insert("delivery".into(), Value::String("push".into()));
    extra.insert("destination".into(), destination);
    Ok(Task {
        id: task_id.to_owned(),
        context_id: String::new(),
        caller_agent_id: None,
        callee_agent_id,
        status: TaskStatus {
            state: TaskState::Working,
            message: None,
            timestamp: None,
        },
        input: Some(TaskInput {
            message: message.clone(),
        }),
        artifacts: Vec::new(),
        error: None,
        history: Some(vec![message]),
        skill: delivery
            .get("skill")
            .and_then(Value::as_str)
            .map(str::to_owned),
        call_id: delivery
            .get("call_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        parent_call_id: None,
        root_call_id: None,
        // A delivery's trace context comes in its `traceparent` header, not in its body.
        traceparent: None,
        tracestate: None,
        extra,
    })
}

fn json_response(status: StatusCode, body: String) -> Response<String> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn answer(status: StatusCode, body: &Value) -> Response<String> {
    json_response(status, body.to_string())
}

/// `503` with a `Retry-After`: the gateway tries the delivery again.
fn unavailable(error: &str) -> Response<String> {
    let mut response = answer(StatusCode::SERVICE_UNAVAILABLE, &json!({ "error": error }));
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(GATEWAY_RETRY_AFTER_SECONDS));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_becomes_a_working_task_with_its_message_as_input() {
        let delivery = json!({
            "task_id": "t1", "call_id": "c1",
            "message": {"role": "user", "parts": [{"text": "Classify"}, {"data": {"invoice_id": "INV-1"}}]},
            "destination": {"tenant_id": "tn", "agent_id": "a1", "url": "https://me.example/a2a"},
        });
        let task = task_of_delivery(&delivery).expect("a task");
        assert_eq!(task.id, "t1");
        assert_eq!(task.call_id(), Some("c1"));
        assert_eq!(task.callee_agent_id.as_deref(), Some("a1"));
        assert_eq!(task.state(), TaskState::Working);
        assert_eq!(task.text(), "Classify");
        assert_eq!(task.data().get("invoice_id"), Some(&json!("INV-1")));
        assert_eq!(
            task.history,
            Some(vec![task.message().cloned().expect("input")])
        );
        assert_eq!(task.extra["delivery"], "push");
        assert_eq!(task.extra["destination"]["tenant_id"], "tn");
    }

    #[test]
    fn a_delivery_without_a_task_id_or_message_is_not_a_task() {
        assert!(task_of_delivery(&json!({"message": {"role": "user", "parts": []}})).is_err());
        assert!(task_of_delivery(&json!({"task_id": "t1"})).is_err());
        assert!(task_of_delivery(&json!({"task_id": "t1", "message": {"parts": 1}})).is_err());
    }
}
