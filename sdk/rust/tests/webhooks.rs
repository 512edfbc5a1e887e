//! `webhooks`: verifying signed push deliveries and A2A push notifications with a key made here,
//! the notifications the gateway's own tests wrote (sdk/testdata/notifications.json), then a real
//! delivery and real notifications from the gateway (in-process, on the local emulators) verified
//! with the JWKS it serves.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test, with its message"
)]

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use ed25519_dalek::{Signer, SigningKey};
use forgebench_sdk::webhooks::{
    fetch_jwks, notification_destination, verify_delivery, verify_notification, DeliveryHeaders,
    Expected, ExpectedNotification, ReplayCache, WebhookCheck, WebhookError, DEFAULT_TOLERANCE,
};
use forgebench_tests::{spawn_app_with, text_message, Answer, Callee, Options};
use serde_json::{json, Value};

const URL: &str = "https://receiver.example/a2a";
const AGENT_ID: &str = "706608c0-4160-452a-86ac-ded1186326ac";
const NOW: u64 = 1_760_000_000;
const EXPECTED: Expected<'static> = Expected {
    url: URL,
    agent_id: AGENT_ID,
};

fn at(seconds: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(seconds)
}

fn new_key() -> SigningKey {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).unwrap();
    SigningKey::from_bytes(&seed)
}

fn jwk(key: &SigningKey, purpose: Option<&str>) -> Value {
    let mut jwk = json!({
        "kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": "k1",
        "x": URL_SAFE_NO_PAD.encode(key.verifying_key().as_bytes()),
    });
    if let Some(purpose) = purpose {
        jwk["purpose"] = json!(purpose);
    }
    jwk
}

fn delivery_body(url: &str, agent_id: &str) -> Vec<u8> {
    json!({
        "task_id": "task-1",
        "call_id": "call-1",
        "message": {"role": "user", "parts": [{"text": "Classify"}]},
        "destination": {"tenant_id": "tenant-1", "agent_id": agent_id, "url": url},
    })
    .to_string()
    .into_bytes()
}

fn signature(key: &SigningKey, id: &str, timestamp: u64, body: &[u8]) -> String {
    let mut signed = format!("{id}.{timestamp}.").into_bytes();
    signed.extend_from_slice(body);
    format!("v1a,{}", STANDARD.encode(key.sign(&signed).to_bytes()))
}

/// A delivery signed by `key`, and a JWKS publishing `key` for webhook signing (and a card key).
struct Signed {
    key: SigningKey,
    id: String,
    timestamp: u64,
    body: Vec<u8>,
}

impl Signed {
    fn new() -> Signed {
        Signed::at(NOW)
    }

    fn at(timestamp: u64) -> Signed {
        Signed {
            key: new_key(),
            id: "msg_delivery-1".into(),
            timestamp,
            body: delivery_body(URL, AGENT_ID),
        }
    }

    /// The headers, `changes` applied (a `None` value removes the header).
    fn headers_with(&self, changes: &[(&str, Option<&str>)]) -> Vec<(String, String)> {
        let mut headers = vec![
            ("Webhook-Id".to_owned(), self.id.clone()),
            ("Webhook-Timestamp".to_owned(), self.timestamp.to_string()),
            (
                "Webhook-Signature".to_owned(),
                signature(&self.key, &self.id, self.timestamp, &self.body),
            ),
            ("Content-Type".to_owned(), "application/json".to_owned()),
        ];
        for (name, value) in changes {
            headers.retain(|(held, _)| !held.eq_ignore_ascii_case(name));
            if let Some(value) = value {
                headers.push(((*name).to_owned(), (*value).to_owned()));
            }
        }
        headers
    }

    fn headers(&self) -> Vec<(String, String)> {
        self.headers_with(&[])
    }

    fn jwks(&self) -> Value {
        json!({"keys": [jwk(&new_key(), Some("card-signing")), jwk(&self.key, Some("webhook-signing"))]})
    }

    fn verify(&self) -> Result<Value, WebhookError> {
        self.verify_with(&self.headers(), &self.body, &self.jwks(), &EXPECTED)
    }

    fn verify_with(
        &self,
        headers: &(impl DeliveryHeaders + ?Sized),
        body: &[u8],
        jwks: &Value,
        expected: &Expected<'_>,
    ) -> Result<Value, WebhookError> {
        verify_delivery(
            headers,
            body,
            jwks,
            expected,
            DEFAULT_TOLERANCE,
            at(NOW),
            None,
        )
    }
}

fn check(result: Result<Value, WebhookError>) -> WebhookCheck {
    result.expect_err("the delivery was accepted").check()
}

#[test]
fn a_signed_delivery_for_this_endpoint_verifies_and_is_returned_parsed() {
    let delivery = Signed::new().verify().unwrap();
    assert_eq!(delivery["task_id"], "task-1");
    assert_eq!(delivery["destination"]["url"], URL);
}

#[test]
fn headers_match_whatever_their_case_and_container() {
    let signed = Signed::new();
    let upper: Vec<(String, String)> = signed
        .headers()
        .into_iter()
        .map(|(name, value)| (name.to_uppercase(), value))
        .collect();
    let lower: HashMap<String, String> = signed
        .headers()
        .into_iter()
        .map(|(name, value)| (name.to_lowercase(), value))
        .collect();
    let sorted: BTreeMap<String, String> = signed.headers().into_iter().collect();
    let mut map = reqwest::header::HeaderMap::new();
    for (name, value) in signed.headers() {
        map.insert(
            reqwest::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    let jwks = signed.jwks();
    for result in [
        signed.verify_with(&upper, &signed.body, &jwks, &EXPECTED),
        signed.verify_with(upper.as_slice(), &signed.body, &jwks, &EXPECTED),
        signed.verify_with(&lower, &signed.body, &jwks, &EXPECTED),
        signed.verify_with(&sorted, &signed.body, &jwks, &EXPECTED),
        signed.verify_with(&map, &signed.body, &jwks, &EXPECTED),
    ] {
        assert_eq!(result.unwrap()["call_id"], "call-1");
    }
}

#[test]
fn other_signature_entries_are_ignored_and_any_v1a_entry_may_verify() {
    let signed = Signed::new();
    let other = signature(&new_key(), &signed.id, NOW, &signed.body);
    let genuine = signature(&signed.key, &signed.id, NOW, &signed.body);
    let value = format!("v1,c2VjcmV0 {other} v1a,not*base64 {genuine}");
    let headers = signed.headers_with(&[("webhook-signature", Some(&value))]);
    assert!(signed
        .verify_with(&headers, &signed.body, &signed.jwks(), &EXPECTED)
        .is_ok());
}

#[test]
fn a_tampered_body_id_or_timestamp_fails_the_signature_check() {
    let signed = Signed::new();
    let jwks = signed.jwks();
    let tampered = String::from_utf8(signed.body.clone())
        .unwrap()
        .replace("Classify", "Delete everything");
    let result = signed.verify_with(&signed.headers(), tampered.as_bytes(), &jwks, &EXPECTED);
    assert_eq!(check(result), WebhookCheck::Signature);
    let other_id = signed.headers_with(&[("webhook-id", Some("msg_other"))]);
    let result = signed.verify_with(&other_id, &signed.body, &jwks, &EXPECTED);
    assert_eq!(check(result), WebhookCheck::Signature);
    let moved = (NOW + 1).to_string();
    let moved = signed.headers_with(&[("webhook-timestamp", Some(&moved))]);
    let result = signed.verify_with(&moved, &signed.body, &jwks, &EXPECTED);
    assert_eq!(check(result), WebhookCheck::Signature);
}

#[test]
fn an_old_or_future_timestamp_fails_the_timestamp_check_before_the_signature() {
    let tolerance = DEFAULT_TOLERANCE.as_secs();
    let old = Signed::at(NOW - tolerance - 1);
    let error = old.verify().unwrap_err();
    assert_eq!(error.check(), WebhookCheck::Timestamp);
    assert!(error.to_string().contains("tolerance"), "{error}");
    assert_eq!(
        check(Signed::at(NOW + tolerance + 1).verify()),
        WebhookCheck::Timestamp
    );
    let edge = Signed::at(NOW - tolerance);
    assert!(edge.verify().is_ok());
    let narrow = verify_delivery(
        &edge.headers(),
        &edge.body,
        &edge.jwks(),
        &EXPECTED,
        Duration::from_secs(60),
        at(NOW),
        None,
    );
    assert_eq!(check(narrow), WebhookCheck::Timestamp);
    let stale_and_tampered = old.verify_with(&old.headers(), b"{}", &old.jwks(), &EXPECTED);
    assert_eq!(check(stale_and_tampered), WebhookCheck::Timestamp);
    // against the clock
    let fresh = Signed::at(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    );
    let now = SystemTime::now();
    let result = verify_delivery(
        &fresh.headers(),
        &fresh.body,
        &fresh.jwks(),
        &EXPECTED,
        DEFAULT_TOLERANCE,
        now,
        None,
    );
    assert!(result.is_ok());
    let result = verify_delivery(
        &old.headers(),
        &old.body,
        &old.jwks(),
        &EXPECTED,
        DEFAULT_TOLERANCE,
        now,
        None,
    );
    assert_eq!(check(result), WebhookCheck::Timestamp);
}

#[test]
fn a_timestamp_that_is_not_unix_seconds_fails_the_timestamp_check() {
    let signed = Signed::new();
    for value in [
        "",
        "17e8",
        "-1760000000",
        "+1760000000",
        "1760000000.5",
        "soon",
        "99999999999999999999999",
    ] {
        let headers = signed.headers_with(&[("webhook-timestamp", Some(value))]);
        let result = signed.verify_with(&headers, &signed.body, &signed.jwks(), &EXPECTED);
        assert_eq!(check(result), WebhookCheck::Timestamp, "{value}");
    }
}

#[test]
fn a_key_of_another_purpose_does_not_verify() {
    let signed = Signed::new();
    for jwks in [
        json!({"keys": [jwk(&signed.key, Some("card-signing"))]}),
        json!({"keys": [jwk(&signed.key, None)]}),
    ] {
        let result = signed.verify_with(&signed.headers(), &signed.body, &jwks, &EXPECTED);
        assert_eq!(check(result), WebhookCheck::Signature);
    }
}

#[test]
fn a_signature_of_another_key_does_not_verify() {
    let signed = Signed::new();
    let impostor = Signed::new();
    let result = signed.verify_with(&impostor.headers(), &signed.body, &signed.jwks(), &EXPECTED);
    assert_eq!(check(result), WebhookCheck::Signature);
}

#[test]
fn another_destination_url_or_agent_id_fails_the_destination_check() {
    let signed = Signed::new();
    let (headers, jwks) = (signed.headers(), signed.jwks());
    let other_url = Expected {
        url: "https://receiver.example/other",
        agent_id: AGENT_ID,
    };
    let error = signed
        .verify_with(&headers, &signed.body, &jwks, &other_url)
        .unwrap_err();
    assert_eq!(error.check(), WebhookCheck::Destination);
    assert!(error.to_string().contains("url"), "{error}");
    let other_agent = Expected {
        url: URL,
        agent_id: "4a0f7c52-8c1b-4b38-9a07-1d0b3f0e8f11",
    };
    let error = signed
        .verify_with(&headers, &signed.body, &jwks, &other_agent)
        .unwrap_err();
    assert_eq!(error.check(), WebhookCheck::Destination);
    assert!(error.to_string().contains("agent_id"), "{error}");
    for body in [
        delivery_body("https://elsewhere.example/a2a", AGENT_ID),
        br#"{"task_id":"t"}"#.to_vec(),
    ] {
        let elsewhere = Signed {
            body,
            ..Signed::new()
        };
        assert_eq!(check(elsewhere.verify()), WebhookCheck::Destination);
    }
}

#[test]
fn missing_headers_fail_the_check_they_belong_to() {
    let signed = Signed::new();
    let jwks = signed.jwks();
    for (changes, expected) in [
        (vec![("webhook-timestamp", None)], WebhookCheck::Timestamp),
        (vec![("webhook-id", None)], WebhookCheck::Signature),
        (vec![("webhook-signature", None)], WebhookCheck::Signature),
        (
            vec![("webhook-signature", Some("v1,c2VjcmV0"))],
            WebhookCheck::Signature,
        ),
        (
            vec![
                ("webhook-timestamp", None),
                ("webhook-id", None),
                ("webhook-signature", None),
            ],
            WebhookCheck::Timestamp,
        ),
    ] {
        let headers = signed.headers_with(&changes);
        let result = signed.verify_with(&headers, &signed.body, &jwks, &EXPECTED);
        assert_eq!(check(result), expected, "{changes:?}");
    }
    let empty = json!({"keys": []});
    let result = signed.verify_with(&signed.headers(), &signed.body, &empty, &EXPECTED);
    assert_eq!(check(result), WebhookCheck::Signature);
}

#[test]
fn errors_never_echo_the_signature_the_body_or_the_urls() {
    let signed = Signed::new();
    let (headers, jwks) = (signed.headers(), signed.jwks());
    let mut longer = signed.body.clone();
    longer.push(b' ');
    let secret_url = Expected {
        url: "https://other.example/a2a?token=hunter2",
        agent_id: AGENT_ID,
    };
    let someone = Expected {
        url: URL,
        agent_id: "someone-else",
    };
    let failures = [
        signed.verify_with(&headers, &longer, &jwks, &EXPECTED),
        signed.verify_with(&headers, &signed.body, &jwks, &secret_url),
        signed.verify_with(&headers, &signed.body, &jwks, &someone),
    ];
    let genuine = signature(&signed.key, &signed.id, NOW, &signed.body);
    for failure in failures {
        let message = failure.unwrap_err().to_string();
        for secret in [&genuine[4..], "Classify", URL, "hunter2", "someone-else"] {
            assert!(!message.contains(secret), "{message}");
        }
    }
}

#[test]
fn a_replay_cache_drops_an_id_already_accepted_and_only_after_every_check() {
    let signed = Signed::new();
    let cache = ReplayCache::default();
    let run = |signed: &Signed, body: &[u8]| {
        verify_delivery(
            &signed.headers(),
            body,
            &signed.jwks(),
            &EXPECTED,
            DEFAULT_TOLERANCE,
            at(NOW),
            Some(&cache),
        )
    };
    assert_eq!(check(run(&signed, b"{}")), WebhookCheck::Signature);
    assert!(cache.is_empty());
    assert!(run(&signed, &signed.body).is_ok());
    assert_eq!(check(run(&signed, &signed.body)), WebhookCheck::Replay);
    let next = Signed {
        id: "msg_delivery-2".into(),
        ..Signed::new()
    };
    assert!(run(&next, &next.body).is_ok());
    let later = at(NOW + DEFAULT_TOLERANCE.as_secs() + 1);
    assert!(cache.remember("msg_delivery-3", NOW, later));
    assert_eq!(cache.len(), 1);
}

#[tokio::test]
async fn a_real_delivery_verifies_with_the_gateways_jwks_and_only_at_its_own_endpoint() {
    let endpoint = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let saved = app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({"url": endpoint.url}),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    let opened = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("Classify"),
            10,
        )
        .await;
    assert_eq!(opened.state(), "completed", "{}", opened.text);
    let received = endpoint.wait_for(1).await.remove(0);

    let http = reqwest::Client::new();
    let jwks = fetch_jwks(&http, &app.base, &pair.callee.key)
        .await
        .unwrap();
    let refused = fetch_jwks(&http, &app.base, "fb_not_a_key").await;
    assert!(
        matches!(refused, Err(forgebench_sdk::Error::Unauthenticated(_))),
        "{refused:?}"
    );

    let me = Expected {
        url: &endpoint.url,
        agent_id: &pair.callee.id,
    };
    let cache = ReplayCache::default();
    let verify = |body: &[u8], jwks: &Value, expected: &Expected<'_>, now: SystemTime| {
        verify_delivery(
            &received.headers,
            body,
            jwks,
            expected,
            DEFAULT_TOLERANCE,
            now,
            Some(&cache),
        )
    };
    let delivery = verify(&received.raw_body, &jwks, &me, SystemTime::now()).unwrap();
    assert_eq!(delivery["task_id"], opened.body["id"]);
    assert_eq!(delivery["destination"]["agent_id"], pair.callee.id.as_str());
    let again = verify(&received.raw_body, &jwks, &me, SystemTime::now());
    assert_eq!(check(again), WebhookCheck::Replay);

    let other_url = endpoint.url.replace("127.0.0.1", "localhost");
    let elsewhere = Expected {
        url: &other_url,
        agent_id: &pair.callee.id,
    };
    let result = verify(&received.raw_body, &jwks, &elsewhere, SystemTime::now());
    assert_eq!(check(result), WebhookCheck::Destination);
    let someone = Expected {
        url: &endpoint.url,
        agent_id: &pair.caller.id,
    };
    let result = verify(&received.raw_body, &jwks, &someone, SystemTime::now());
    assert_eq!(check(result), WebhookCheck::Destination);
    let tampered = String::from_utf8(received.raw_body.clone())
        .unwrap()
        .replace("Classify", "Classifx");
    let result = verify(tampered.as_bytes(), &jwks, &me, SystemTime::now());
    assert_eq!(check(result), WebhookCheck::Signature);
    let late = SystemTime::now() + DEFAULT_TOLERANCE + Duration::from_secs(5);
    let result = verify(&received.raw_body, &jwks, &me, late);
    assert_eq!(check(result), WebhookCheck::Timestamp);
    let mut card_keys_only = jwks.clone();
    card_keys_only["keys"]
        .as_array_mut()
        .unwrap()
        .retain(|key| key["purpose"] != "webhook-signing");
    let result = verify(&received.raw_body, &card_keys_only, &me, SystemTime::now());
    assert_eq!(check(result), WebhookCheck::Signature);
}

// -- verify_notification ---------------------------------------------------------------------

const HOOK_URL: &str = "https://receiver.example/hooks/a2a?team=7";
const CONFIG_ID: &str = "hook-1";
const TASK_ID: &str = "task-1";

fn notification_body(url: &str, config_id: &str, task_id: &str) -> Vec<u8> {
    json!({"statusUpdate": {
        "taskId": task_id,
        "contextId": "context-1",
        "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-12-01T10:00:02.000000Z",
                   "message": {"role": "ROLE_AGENT", "parts": [{"text": "half way"}]}},
        "metadata": {"forgebench": {"destination": {
            "tenant_id": "tenant-1", "task_id": task_id, "config_id": config_id, "url": url,
        }}},
    }})
    .to_string()
    .into_bytes()
}

/// A notification signed at `timestamp` by a key of its own, for the receiver at `url`.
fn signed_notification(url: &str, timestamp: u64) -> Signed {
    Signed {
        id: format!("{TASK_ID}:{CONFIG_ID}:1"),
        body: notification_body(url, CONFIG_ID, TASK_ID),
        ..Signed::at(timestamp)
    }
}

impl Signed {
    fn verify_notification(
        &self,
        headers: &[(String, String)],
        body: &[u8],
        expected: &ExpectedNotification<'_>,
    ) -> Result<Value, WebhookError> {
        verify_notification(
            headers,
            body,
            &self.jwks(),
            expected,
            DEFAULT_TOLERANCE,
            at(NOW),
            None,
        )
    }

    /// Verified as the receiver `expected`, with its own headers and body.
    fn notified(&self, expected: &ExpectedNotification<'_>) -> Result<Value, WebhookError> {
        self.verify_notification(&self.headers(), &self.body, expected)
    }
}

#[test]
fn a_notification_signed_for_this_receiver_verifies_and_is_returned_parsed() {
    let signed = signed_notification(HOOK_URL, NOW);
    for (config_id, task_id) in [
        (None, None),
        (Some(CONFIG_ID), None),
        (None, Some(TASK_ID)),
        (Some(CONFIG_ID), Some(TASK_ID)),
    ] {
        let expected = ExpectedNotification {
            url: HOOK_URL,
            config_id,
            task_id,
        };
        let notification = signed.notified(&expected).unwrap();
        assert_eq!(notification["statusUpdate"]["taskId"], TASK_ID);
        assert_eq!(
            notification_destination(&notification),
            Some(&json!({"tenant_id": "tenant-1", "task_id": TASK_ID,
                         "config_id": CONFIG_ID, "url": HOOK_URL}))
        );
    }
}

#[test]
fn a_notification_signed_for_another_receiver_fails_the_destination_check() {
    let elsewhere = signed_notification("https://elsewhere.example/hooks/a2a?team=7", NOW);
    let error = elsewhere
        .notified(&ExpectedNotification::at(HOOK_URL))
        .unwrap_err();
    assert_eq!(error.check(), WebhookCheck::Destination);
    assert!(error.to_string().contains("url"), "{error}");
    // the URL as saved, exactly: no normalization either way
    let signed = signed_notification(HOOK_URL, NOW);
    let trailing = format!("{HOOK_URL}/");
    for url in [
        "https://receiver.example/hooks/a2a",
        "https://RECEIVER.example/hooks/a2a?team=7",
        trailing.as_str(),
    ] {
        let result = signed.notified(&ExpectedNotification::at(url));
        assert_eq!(check(result), WebhookCheck::Destination, "{url}");
    }
}

#[test]
fn another_config_or_task_fails_the_destination_check() {
    let signed = signed_notification(HOOK_URL, NOW);
    let other_config = ExpectedNotification {
        config_id: Some("hook-2"),
        ..ExpectedNotification::at(HOOK_URL)
    };
    let error = signed.notified(&other_config).unwrap_err();
    assert_eq!(error.check(), WebhookCheck::Destination);
    assert!(error.to_string().contains("config_id"), "{error}");
    let other_task = ExpectedNotification {
        task_id: Some("task-2"),
        ..ExpectedNotification::at(HOOK_URL)
    };
    let error = signed.notified(&other_task).unwrap_err();
    assert_eq!(error.check(), WebhookCheck::Destination);
    assert!(error.to_string().contains("task_id"), "{error}");
}

#[test]
fn a_tampered_notification_fails_the_signature_check() {
    let signed = signed_notification(HOOK_URL, NOW);
    let me = ExpectedNotification::at(HOOK_URL);
    let tampered = String::from_utf8(signed.body.clone())
        .unwrap()
        .replace("half way", "all done");
    let result = signed.verify_notification(&signed.headers(), tampered.as_bytes(), &me);
    assert_eq!(check(result), WebhookCheck::Signature);
    // the headers of the same event signed for another receiver do not fit this body
    let moved = Signed {
        key: signed.key.clone(),
        ..signed_notification("https://elsewhere.example/x", NOW)
    };
    let result = signed.verify_notification(&moved.headers(), &signed.body, &me);
    assert_eq!(check(result), WebhookCheck::Signature);
}

#[test]
fn an_old_notification_fails_the_timestamp_check_before_the_signature() {
    let tolerance = DEFAULT_TOLERANCE.as_secs();
    let old = signed_notification(HOOK_URL, NOW - tolerance - 1);
    let me = ExpectedNotification::at(HOOK_URL);
    let error = old.notified(&me).unwrap_err();
    assert_eq!(error.check(), WebhookCheck::Timestamp);
    assert!(error.to_string().contains("tolerance"), "{error}");
    let stale_and_tampered = old.verify_notification(&old.headers(), b"{}", &me);
    assert_eq!(check(stale_and_tampered), WebhookCheck::Timestamp);
    let wider = verify_notification(
        &old.headers(),
        &old.body,
        &old.jwks(),
        &me,
        DEFAULT_TOLERANCE + Duration::from_secs(1),
        at(NOW),
        None,
    );
    assert!(wider.is_ok(), "{wider:?}");
}

#[test]
fn a_body_naming_no_notification_destination_fails_the_destination_check() {
    for body in [
        delivery_body(HOOK_URL, AGENT_ID),
        br#"{"statusUpdate":{"taskId":"t"}}"#.to_vec(),
        br#"{"statusUpdate":{"metadata":{"forgebench":{}}}}"#.to_vec(),
        b"[]".to_vec(),
        b"not json".to_vec(),
    ] {
        let signed = Signed {
            body,
            ..Signed::new()
        };
        let result = signed.notified(&ExpectedNotification::at(HOOK_URL));
        assert_eq!(check(result), WebhookCheck::Destination);
    }
    // and a notification is no delivery: it names no delivery destination
    let notification = signed_notification(HOOK_URL, NOW);
    assert_eq!(check(notification.verify()), WebhookCheck::Destination);
}

#[test]
fn a_replay_cache_drops_a_notification_already_accepted() {
    let signed = signed_notification(HOOK_URL, NOW);
    let cache = ReplayCache::default();
    let run = || {
        verify_notification(
            &signed.headers(),
            &signed.body,
            &signed.jwks(),
            &ExpectedNotification::at(HOOK_URL),
            DEFAULT_TOLERANCE,
            at(NOW),
            Some(&cache),
        )
    };
    assert!(run().is_ok());
    assert_eq!(check(run()), WebhookCheck::Replay);
}

#[test]
fn notification_errors_never_echo_the_body_or_the_urls() {
    let signed = signed_notification(HOOK_URL, NOW);
    let mut longer = signed.body.clone();
    longer.push(b' ');
    let secret_url = ExpectedNotification::at("https://other.example/?token=hunter2");
    let secret_config = ExpectedNotification {
        config_id: Some("secret-config"),
        ..ExpectedNotification::at(HOOK_URL)
    };
    let failures = [
        signed.notified(&secret_url),
        signed.verify_notification(
            &signed.headers(),
            &longer,
            &ExpectedNotification::at(HOOK_URL),
        ),
        signed.notified(&secret_config),
    ];
    for failure in failures {
        let message = failure.unwrap_err().to_string();
        for secret in ["hunter2", HOOK_URL, "half way", "secret-config"] {
            assert!(!message.contains(secret), "{message}");
        }
    }
}

/// The notifications the gateway's tests built and signed (shared/src/push/signature.rs).
fn vectors() -> Value {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/notifications.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_gateways_own_notifications_verify_for_their_receiver_only() {
    let vector = vectors();
    let text = |name: &str| vector[name].as_str().unwrap().to_owned();
    let (url, config_id, task_id) = (text("url"), text("config_id"), text("task_id"));
    let notifications = vector["notifications"].as_array().unwrap();
    assert!(notifications.len() >= 2);
    let mut kinds = Vec::new();
    for notification in notifications {
        let headers: BTreeMap<String, String> =
            serde_json::from_value(notification["headers"].clone()).unwrap();
        let body = notification["body"].as_str().unwrap();
        let now = at(headers["webhook-timestamp"].parse().unwrap());
        let verify = |body: &str, expected: &ExpectedNotification<'_>, now: SystemTime| {
            verify_notification(
                &headers,
                body.as_bytes(),
                &vector["jwks"],
                expected,
                DEFAULT_TOLERANCE,
                now,
                None,
            )
        };
        let me = ExpectedNotification {
            url: &url,
            config_id: Some(&config_id),
            task_id: Some(&task_id),
        };
        let verified = verify(body, &me, now).unwrap();
        kinds.extend(verified.as_object().unwrap().keys().cloned());
        assert_eq!(
            notification_destination(&verified),
            Some(
                &json!({"tenant_id": vector["tenant_id"], "task_id": task_id,
                         "config_id": config_id, "url": url})
            )
        );
        let bare = ExpectedNotification::at("https://receiver.example/hooks/a2a");
        assert_eq!(check(verify(body, &bare, now)), WebhookCheck::Destination);
        let other_config = ExpectedNotification {
            config_id: Some("another-hook"),
            ..me
        };
        assert_eq!(
            check(verify(body, &other_config, now)),
            WebhookCheck::Destination
        );
        let moved = body.replace(&url, "https://elsewhere.example/");
        assert_eq!(check(verify(&moved, &me, now)), WebhookCheck::Signature);
        let late = now + DEFAULT_TOLERANCE + Duration::from_secs(1);
        assert_eq!(check(verify(body, &me, late)), WebhookCheck::Timestamp);
    }
    kinds.sort();
    assert_eq!(kinds, ["artifactUpdate", "statusUpdate"]);
}

#[tokio::test]
async fn real_notifications_verify_with_the_gateways_jwks_and_only_at_their_own_receiver() {
    let receiver = Callee::start(|_| Answer::json(200, json!({}))).await;
    let hook = format!("{}?team=7", receiver.url);
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let sent = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "SendMessage",
            json!({"message": {"messageId": "m-1", "role": "ROLE_USER",
                               "parts": [{"text": "Classify"}]},
                   "configuration": {"returnImmediately": true,
                                     "taskPushNotificationConfig": {"id": "hook", "url": hook}}}),
        )
        .await;
    let task_id = sent.body["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", sent.text))
        .to_owned();
    assert_eq!(app.claim(&pair.callee.key, 5).await.field("id"), task_id);
    let done = json!({"state": "completed",
                      "artifacts": [{"name": "label", "parts": [{"text": "utilities"}]}]});
    let answered = app.post_result(&pair.callee.key, &task_id, done).await;
    assert_eq!(answered.status, 200, "{}", answered.text);
    // the claim, the artifact, the completion
    let received = receiver.wait_for(3).await;

    let http = reqwest::Client::new();
    let jwks = fetch_jwks(&http, &app.base, &pair.caller.key)
        .await
        .unwrap();
    let me = ExpectedNotification {
        url: &hook,
        config_id: Some("hook"),
        task_id: Some(&task_id),
    };
    let cache = ReplayCache::default();
    let verify = |post: &forgebench_tests::Received,
                  body: &[u8],
                  expected: &ExpectedNotification<'_>,
                  now: SystemTime| {
        verify_notification(
            &post.headers,
            body,
            &jwks,
            expected,
            DEFAULT_TOLERANCE,
            now,
            Some(&cache),
        )
    };
    let mut kinds = Vec::new();
    for post in &received {
        let notification = verify(post, &post.raw_body, &me, SystemTime::now()).unwrap();
        kinds.extend(notification.as_object().unwrap().keys().cloned());
        let destination = notification_destination(&notification).unwrap();
        assert_eq!(destination["url"], hook.as_str());
        assert_eq!(destination["config_id"], "hook");
        assert_eq!(destination["task_id"], task_id.as_str());
        assert_eq!(destination["tenant_id"], pair.tenant.id.as_str());
    }
    assert_eq!(kinds, ["statusUpdate", "artifactUpdate", "statusUpdate"]);

    let first = &received[0];
    let again = verify(first, &first.raw_body, &me, SystemTime::now());
    assert_eq!(check(again), WebhookCheck::Replay);
    for other in [
        ExpectedNotification::at(&receiver.url),
        ExpectedNotification {
            config_id: Some("another-hook"),
            ..me
        },
        ExpectedNotification {
            task_id: Some(&pair.caller.id),
            ..me
        },
    ] {
        let result = verify(first, &first.raw_body, &other, SystemTime::now());
        assert_eq!(check(result), WebhookCheck::Destination, "{other:?}");
    }
    let tampered = String::from_utf8(first.raw_body.clone())
        .unwrap()
        .replace("?team=7", "?team=8");
    let result = verify(first, tampered.as_bytes(), &me, SystemTime::now());
    assert_eq!(check(result), WebhookCheck::Signature);
    let late = SystemTime::now() + DEFAULT_TOLERANCE + Duration::from_secs(5);
    let result = verify(first, &first.raw_body, &me, late);
    assert_eq!(check(result), WebhookCheck::Timestamp);
}
