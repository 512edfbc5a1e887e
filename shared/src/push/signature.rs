//! Signed deliveries, Standard Webhooks style with an asymmetric key: every POST carries
//! `webhook-id` (the task id, the same on every attempt), `webhook-timestamp` (Unix seconds) and
//! `webhook-signature: v1a,<base64 Ed25519 signature over "{id}.{timestamp}.{body}">`, made with
//! the gateway's card-signing key, so a callee verifies with the public JWKS
//! (`GET /v1/billing/export/pubkey`) and needs no shared secret.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ed25519_dalek::{Signer, SigningKey};
use reqwest::header::{HeaderMap, HeaderValue};

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
        ("webhook-id", id.to_owned()),
        ("webhook-timestamp", timestamp.to_string()),
        ("webhook-signature", value),
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
            "task-1",
            1_700_000_000,
            r#"{"task_id":"task-1"}"#,
        );
        assert_eq!(headers["webhook-id"], "task-1");
        assert_eq!(headers["webhook-timestamp"], "1700000000");
        let value = headers["webhook-signature"].to_str().unwrap();
        let encoded = value.strip_prefix("v1a,").unwrap();
        let signature = Signature::from_slice(&STANDARD.decode(encoded).unwrap()).unwrap();
        let public = key.verifying_key();
        let content = signed_content("task-1", 1_700_000_000, r#"{"task_id":"task-1"}"#);
        assert!(public.verify(content.as_bytes(), &signature).is_ok());
        let altered = signed_content("task-1", 1_700_000_001, r#"{"task_id":"task-1"}"#);
        assert!(public.verify(altered.as_bytes(), &signature).is_err());
    }
}
