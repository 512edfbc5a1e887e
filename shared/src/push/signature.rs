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

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ed25519_dalek::{Signer, SigningKey};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};

use crate::domain::headers as names;

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
}
