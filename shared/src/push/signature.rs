//! Signed deliveries, Standard Webhooks style with an asymmetric key: every POST carries
//! `webhook-id` (the delivery's id, the same on every retry of one delivery and new for the next
//! delivery of the same task), `webhook-timestamp` (Unix seconds) and
//! `webhook-signature: v1a,<base64 Ed25519 signature over "{id}.{timestamp}.{body}">`, made with
//! the gateway's webhook-signing key, so a callee verifies with the JWKS
//! (`GET /v1/billing/export/pubkey`) and needs no shared secret.
//!
//! One key signs every tenant's deliveries, so the signature alone says only that the gateway
//! sent the body. The body names its destination (tenant, callee agent and endpoint URL), so a
//! genuine delivery made to one endpoint and replayed to another is refused by a receiver that
//! checks the destination is itself.
//!
//! A2A push notifications are signed the same way. Their body is the event's A2A
//! `StreamResponse`, which has no field for a destination, so it names it inside the event's own
//! `metadata` ([`notification_body`]): still a `StreamResponse` every A2A receiver parses, and
//! the destination is covered by the signature with the rest of the body.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ed25519_dalek::{Signer, SigningKey};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Map, Value};

use crate::domain::headers as names;
use crate::domain::notify::NotifyConfig;

/// Where a delivery is going: the tenant, the callee agent and the endpoint URL as saved.
#[derive(Debug, Clone, Copy)]
pub struct Destination<'a> {
    pub tenant_id: &'a str,
    pub agent_id: &'a str,
    pub url: &'a str,
}

/// The task a delivery carries: its id, its call and the skill its open named.
#[derive(Debug, Clone, Copy)]
pub struct Delivered<'a> {
    pub task_id: &'a str,
    pub call_id: &'a str,
    pub skill: Option<&'a str>,
}

/// The JSON body of a delivery: the task, the caller's newest message, the skill the open named
/// (only when it named one), and the destination, which the signature covers with the rest of
/// the body.
pub fn delivery_body(task: Delivered<'_>, message: &Value, destination: Destination<'_>) -> String {
    let mut body = json!({
        "task_id": task.task_id,
        "call_id": task.call_id,
        "message": message,
        "destination": {
            "tenant_id": destination.tenant_id,
            "agent_id": destination.agent_id,
            "url": destination.url,
        },
    });
    if let Some(skill) = task.skill {
        body["skill"] = Value::from(skill);
    }
    body.to_string()
}

/// Where a notification is going: the config it is sent for (its tenant, task and id) and the
/// receiver's URL exactly as saved on the config.
#[derive(Debug, Clone, Copy)]
pub struct NotificationDestination<'a> {
    pub tenant_id: &'a str,
    pub task_id: &'a str,
    pub config_id: &'a str,
    pub url: &'a str,
}

impl<'a> NotificationDestination<'a> {
    /// The destination of `config`'s notifications.
    pub fn of(config: &'a NotifyConfig) -> NotificationDestination<'a> {
        NotificationDestination {
            tenant_id: &config.tenant_id,
            task_id: &config.task_id,
            config_id: &config.id,
            url: &config.url,
        }
    }
}

/// The member of an event's `metadata` that holds what the gateway adds to a notification.
pub const NOTIFICATION_METADATA_KEY: &str = "forgebench";

/// The JSON body of a push notification: `event`, an A2A `StreamResponse` (`{"statusUpdate": …}`
/// or `{"artifactUpdate": …}`), with its destination in the update's `metadata` as
/// `{"forgebench": {"destination": {"tenant_id", "task_id", "config_id", "url"}}}`. Both update
/// events of A2A 1.0 have that `metadata` object, so the body stays a valid `StreamResponse`
/// (no member is added beside the update), and the signature covers the destination.
pub fn notification_body(mut event: Value, destination: NotificationDestination<'_>) -> String {
    let named = json!({"destination": {
        "tenant_id": destination.tenant_id,
        "task_id": destination.task_id,
        "config_id": destination.config_id,
        "url": destination.url,
    }});
    let update = event
        .as_object_mut()
        .and_then(|response| response.values_mut().next())
        .and_then(Value::as_object_mut);
    if let Some(update) = update {
        // Metadata the event may carry of its own is kept beside the destination.
        match update.get_mut("metadata").and_then(Value::as_object_mut) {
            Some(metadata) => {
                metadata.insert(NOTIFICATION_METADATA_KEY.to_owned(), named);
            }
            None => {
                let metadata = Map::from_iter([(NOTIFICATION_METADATA_KEY.to_owned(), named)]);
                update.insert("metadata".to_owned(), Value::Object(metadata));
            }
        }
    }
    event.to_string()
}

/// What is signed.
pub fn signed_content(id: &str, timestamp: u64, body: &str) -> String {
    format!("{id}.{timestamp}.{body}")
}

/// Adds the three signature headers for `body`, sent as message `id` at `timestamp`.
pub fn sign_delivery(
    headers: &mut HeaderMap,
    key: &SigningKey,
    id: &str,
    timestamp: u64,
    body: &str,
) {
    let signature = key.sign(signed_content(id, timestamp, body).as_bytes());
    let value = format!("v1a,{}", STANDARD.encode(signature.to_bytes()));
    for (name, value) in [
        (names::WEBHOOK_ID, id.to_owned()),
        (names::WEBHOOK_TIMESTAMP, timestamp.to_string()),
        (names::WEBHOOK_SIGNATURE, value),
    ] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signature, Verifier};

    #[test]
    fn the_signature_verifies_over_id_timestamp_and_body_only() {
        let key = SigningKey::from_bytes(&[9u8; 32]);
        let mut headers = HeaderMap::new();
        sign_delivery(
            &mut headers,
            &key,
            "delivery-1",
            1_700_000_000,
            r#"{"task_id":"task-1"}"#,
        );
        assert_eq!(headers["webhook-id"], "delivery-1");
        assert_eq!(headers["webhook-timestamp"], "1700000000");
        let value = headers["webhook-signature"].to_str().unwrap();
        let encoded = value.strip_prefix("v1a,").unwrap();
        let signature = Signature::from_slice(&STANDARD.decode(encoded).unwrap()).unwrap();
        let public = key.verifying_key();
        let content = signed_content("delivery-1", 1_700_000_000, r#"{"task_id":"task-1"}"#);
        assert!(public.verify(content.as_bytes(), &signature).is_ok());
        let altered = signed_content("delivery-1", 1_700_000_001, r#"{"task_id":"task-1"}"#);
        assert!(public.verify(altered.as_bytes(), &signature).is_err());
    }

    #[test]
    fn the_body_names_its_destination() {
        let destination = Destination {
            tenant_id: "tenant-a",
            agent_id: "agent-a",
            url: "https://a.example/hook",
        };
        let task = Delivered {
            task_id: "t",
            call_id: "c",
            skill: None,
        };
        let body = delivery_body(task, &json!({"role": "user"}), destination);
        let parsed: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            parsed,
            json!({"task_id": "t", "call_id": "c", "message": {"role": "user"},
                   "destination": {"tenant_id": "tenant-a", "agent_id": "agent-a",
                                   "url": "https://a.example/hook"}})
        );
    }

    /// A config of `task` at `url`, as the store gives it to the worker.
    fn config(task: &crate::domain::Task, url: &str) -> NotifyConfig {
        NotifyConfig {
            tenant_id: task.tenant_id.clone(),
            task_id: task.id.clone(),
            id: "hook-1".into(),
            url: url.into(),
            token: None,
            sealed_token: None,
            scheme: None,
            sealed_credentials: None,
            created_at: crate::domain::clock::Timestamp::default(),
            delivered: 0,
            attempts: 0,
            expires_at: None,
        }
    }

    /// A task with two events: the callee's progress report, then an artifact of its result.
    fn task_with_events() -> crate::domain::Task {
        use crate::domain::content::Stored;
        use crate::domain::events::Change;
        use crate::domain::result::Artifact;
        use crate::domain::{Message, Part, TaskState};
        let mut task = crate::domain::events::tests::opened();
        task.history
            .push(Stored::Inline(Message::agent(vec![Part::Text(
                "half way".into(),
            )])));
        task.state = TaskState::Working;
        task.changes.push(Change::state(
            TaskState::Working,
            true,
            "2026-12-01T10:00:02.000000Z",
        ));
        task.artifacts = Stored::Inline(vec![Artifact {
            name: "label".into(),
            parts: vec![Part::Text("utilities".into())],
        }]);
        task.changes.push(Change::Artifact { index: 0 });
        task
    }

    /// Each event of `task` as the worker sends it to `config`: its `webhook-id` and body.
    fn notifications(task: &crate::domain::Task, config: &NotifyConfig) -> Vec<(String, String)> {
        task.events_after(0)
            .iter()
            .map(|event| {
                let event_json = crate::a2a::wire::stream_event_json(task, event);
                let body = notification_body(event_json, NotificationDestination::of(config));
                (config.notification_id(event.number), body)
            })
            .collect()
    }

    #[test]
    fn a_notification_names_its_destination_in_the_update_s_metadata() {
        let task = task_with_events();
        let config = config(&task, "https://a.example/hook?x=1");
        let sent = notifications(&task, &config);
        assert_eq!(sent.len(), 2);
        let destination = json!({"forgebench": {"destination": {
            "tenant_id": task.tenant_id.as_str(), "task_id": task.id.as_str(),
            "config_id": "hook-1", "url": "https://a.example/hook?x=1",
        }}});
        let events = task.events_after(0);
        for (((_, body), event), kind) in sent
            .iter()
            .zip(&events)
            .zip(["statusUpdate", "artifactUpdate"])
        {
            let parsed: Value = serde_json::from_str(body).unwrap();
            // Still a StreamResponse: the update alone at the top, as a stream carries it, and
            // the destination only in the update's metadata.
            let members: Vec<&String> = parsed.as_object().unwrap().keys().collect();
            assert_eq!(members, [kind], "{body}");
            let mut update = parsed[kind].clone();
            assert_eq!(update["metadata"], destination, "{body}");
            update.as_object_mut().unwrap().remove("metadata");
            let streamed = crate::a2a::wire::stream_event_json(&task, event);
            assert_eq!(update, streamed[kind], "{body}");
        }
    }

    #[test]
    fn metadata_the_event_already_has_is_kept_beside_the_destination() {
        let destination = NotificationDestination {
            tenant_id: "t",
            task_id: "k",
            config_id: "c",
            url: "https://a.example/",
        };
        let event = json!({"statusUpdate": {"taskId": "k", "metadata": {"other": 1}}});
        let parsed: Value = serde_json::from_str(&notification_body(event, destination)).unwrap();
        assert_eq!(parsed["statusUpdate"]["metadata"]["other"], 1);
        assert_eq!(
            parsed["statusUpdate"]["metadata"]["forgebench"]["destination"]["url"],
            "https://a.example/"
        );
    }

    /// The file of signed notifications the SDKs' verifiers are tested against.
    fn vectors_path() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../sdk/testdata/notifications.json")
    }

    /// The test vectors: each notification of [`task_with_events`] to one config, signed with a
    /// fixed key at a fixed time, with the JWKS that publishes the key.
    fn vectors() -> Value {
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let timestamp = 1_796_119_210;
        let task = task_with_events();
        let config = config(&task, "https://receiver.example/hooks/a2a?team=7");
        let notifications: Vec<Value> = notifications(&task, &config)
            .into_iter()
            .map(|(id, body)| {
                let mut headers = HeaderMap::new();
                sign_delivery(&mut headers, &key, &id, timestamp, &body);
                let header = |name: &str| headers[name].to_str().unwrap().to_owned();
                json!({
                    "headers": {
                        "webhook-id": header(names::WEBHOOK_ID),
                        "webhook-timestamp": header(names::WEBHOOK_TIMESTAMP),
                        "webhook-signature": header(names::WEBHOOK_SIGNATURE),
                    },
                    "body": body,
                })
            })
            .collect();
        json!({
            "about": "Push notifications as the gateway builds and signs them, written by \
                      shared/src/push/signature.rs (WRITE_SDK_TEST_VECTORS=1 cargo test -p \
                      forgebench notification_vectors). Each verifies with this JWKS at its \
                      webhook-timestamp, for the receiver at `url`.",
            "jwks": {"keys": [crate::domain::card::jwk("vector-key", &key.verifying_key(), "webhook-signing")]},
            "url": config.url,
            "tenant_id": config.tenant_id.as_str(),
            "task_id": config.task_id.as_str(),
            "config_id": config.id,
            "notifications": notifications,
        })
    }

    #[test]
    fn the_sdks_notification_vectors_are_what_the_gateway_sends() {
        let made = vectors();
        let path = vectors_path();
        if std::env::var_os("WRITE_SDK_TEST_VECTORS").is_some() {
            let text = serde_json::to_string_pretty(&made).unwrap() + "\n";
            std::fs::write(&path, text).unwrap();
        }
        let stored = std::fs::read_to_string(&path).unwrap_or_default();
        let stored: Value = serde_json::from_str(&stored).unwrap_or(Value::Null);
        assert_eq!(
            stored,
            made,
            "{} is not what the gateway sends; write it again with \
             WRITE_SDK_TEST_VECTORS=1 cargo test -p forgebench notification_vectors",
            path.display()
        );
    }
}
