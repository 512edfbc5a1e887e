//! Trusted OpenID Connect issuers and signing in with a token provider, through the Rust SDK,
//! against the real gateway (in-process, on the local emulators) and a real provider
//! (`oauth2-mock-server`, tests/oidc-provider): each issuer operation is sent through the SDK,
//! and clients whose token provider fetches client-credentials tokens act as the agent or the
//! member their subject names.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test, with its message"
)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use forgebench_sdk::{AccessToken, Client, Error, SubjectGrantIn, TokenError, TrustedIssuer};
use forgebench_tests::{spawn_app_with, OidcProvider, Options, TestApp};
use serde_json::Value;

/// A gateway that may reach the provider on this machine's loopback.
async fn app() -> TestApp {
    spawn_app_with(Options {
        public_url: true,
        ..Options::local_push()
    })
    .await
}

fn client(app: &TestApp, key: &str) -> Client {
    Client::new(key, &app.base).expect("client")
}

/// A new tenant made through the SDK with the operator key, and a client of its admin key.
async fn tenant(app: &TestApp) -> Client {
    let operator = client(app, &app.operator_key);
    let tenant = operator.create_tenant("acme").await.unwrap();
    client(app, tenant.admin_key.expose())
}

fn fresh_audience() -> String {
    format!("gate-{}", uuid::Uuid::new_v4().simple())
}

/// A client-credentials token of `issuer` for `client_id` and `audience`, with the token
/// endpoint's `expires_in`: what a workload's token provider does.
async fn client_credentials(
    http: &reqwest::Client,
    issuer: &str,
    client_id: &str,
    audience: &str,
) -> Result<AccessToken, TokenError> {
    let response = http
        .post(format!("{issuer}/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "grant_type=client_credentials&client_id={client_id}&aud={audience}"
        ))
        .send()
        .await?
        .error_for_status()?;
    let body: Value = response.json().await?;
    let token = body["access_token"]
        .as_str()
        .ok_or("the token endpoint gave no access_token")?;
    let mut token = AccessToken::new(token);
    if let Some(seconds) = body["expires_in"].as_u64() {
        token = token.expires_in(Duration::from_secs(seconds));
    }
    Ok(token)
}

/// A client of the gateway whose token provider gets client-credentials tokens for
/// `client_id` and each of `audiences` in turn (the last one from then on), and how many times
/// it was asked.
fn token_client(
    app: &TestApp,
    issuer: &str,
    client_id: &str,
    audiences: &[&str],
) -> (Client, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let http = reqwest::Client::new();
    let issuer = issuer.to_owned();
    let client_id = client_id.to_owned();
    let audiences: Vec<String> = audiences.iter().map(|a| (*a).to_owned()).collect();
    let provider = move || {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        let audience = audiences[n.min(audiences.len() - 1)].clone();
        let (http, issuer, client_id) = (http.clone(), issuer.clone(), client_id.clone());
        async move { client_credentials(&http, &issuer, &client_id, &audience).await }
    };
    let client = Client::builder()
        .base_url(&app.base)
        .token_provider(provider)
        .build()
        .unwrap();
    (client, asked)
}

#[tokio::test]
async fn an_issuer_is_trusted_listed_updated_and_distrusted_and_its_tokens_sign_in_as_listed() {
    let (app, provider) = tokio::join!(app(), OidcProvider::start());
    let admin = tenant(&app).await;
    let worker = admin.create_agent("worker", None, None).await.unwrap();
    let helper = admin.create_agent("helper", None, None).await.unwrap();
    let dana = admin.create_member("dana", "member").await.unwrap();
    let audience = fresh_audience();

    let trusted = admin
        .trust_issuer(
            &provider.issuer,
            &audience,
            &[
                SubjectGrantIn::agent("svc-worker", "worker"),
                SubjectGrantIn::member("ops", &dana.member_id),
            ],
        )
        .await
        .unwrap();
    assert_eq!(trusted.issuer, provider.issuer);
    assert_eq!(trusted.audience, audience);
    assert_eq!(
        trusted.discovery_url,
        format!("{}/.well-known/openid-configuration", provider.issuer)
    );
    assert_eq!(trusted.subjects.len(), 2);
    assert_eq!(trusted.subjects[0].subject, "svc-worker");
    assert_eq!(
        trusted.subjects[0].agent_id.as_deref(),
        Some(worker.id.as_str())
    );
    assert_eq!(
        trusted.subjects[1].member_id.as_deref(),
        Some(dana.member_id.as_str())
    );

    // A member key reads the list too.
    let listed = client(&app, dana.key.expose())
        .list_issuers()
        .await
        .unwrap();
    assert_eq!(
        trusted.discovery.as_ref().map(|found| found.read),
        Some(true)
    );
    let as_listed = TrustedIssuer {
        discovery: None,
        ..trusted.clone()
    };
    assert_eq!(listed.items, vec![as_listed]);

    // The worker's subject signs in as the worker; the token is kept for the next request.
    let (as_worker, asked) = token_client(&app, &provider.issuer, "svc-worker", &[&audience]);
    assert_eq!(as_worker.me().await.unwrap().id, worker.id);
    assert_eq!(as_worker.me().await.unwrap().id, worker.id);
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "one token for both requests"
    );
    assert!(
        !format!("{as_worker:?}").contains("eyJ"),
        "Debug never shows the token"
    );
    // An agent, by key or by token, may not read the tenant's issuers.
    let refused = as_worker.list_issuers().await.unwrap_err();
    assert!(matches!(refused, Error::PermissionDenied(_)), "{refused:?}");

    // The member's subject acts as that member.
    let (as_dana, _) = token_client(&app, &provider.issuer, "ops", &[&audience]);
    assert_eq!(as_dana.list_issuers().await.unwrap().items.len(), 1);
    let by_member = as_dana
        .trust_issuer(&provider.issuer, &fresh_audience(), &[])
        .await
        .unwrap_err();
    assert!(
        matches!(by_member, Error::PermissionDenied(_)),
        "{by_member:?}"
    );

    let again = admin
        .trust_issuer(&provider.issuer, &audience, &[])
        .await
        .unwrap_err();
    assert!(
        matches!(again, Error::Conflict(_)),
        "the pair is trusted: {again:?}"
    );
    let unknown = admin
        .trust_issuer(
            &provider.issuer,
            &fresh_audience(),
            &[SubjectGrantIn::agent("svc", "nobody")],
        )
        .await
        .unwrap_err();
    assert!(matches!(unknown, Error::NotFound(_)), "{unknown:?}");
    // Nothing listens there yet: trusted all the same, and the answer says so.
    let unreadable = admin
        .trust_issuer("http://127.0.0.1:1", &fresh_audience(), &[])
        .await
        .unwrap();
    let found = unreadable
        .discovery
        .expect("what reading the document found");
    assert!(!found.read && found.problem.is_some(), "{found:?}");
    admin.distrust_issuer(&unreadable.id).await.unwrap();
    // An address the outbound guard never reads is refused.
    let guarded = admin
        .trust_issuer("https://169.254.169.254", &fresh_audience(), &[])
        .await
        .unwrap_err();
    assert!(matches!(guarded, Error::PermissionDenied(_)), "{guarded:?}");

    // The subject now signs in as the helper (by id), and the member's subject no more.
    let updated = admin
        .update_issuer(
            &trusted.id,
            &[SubjectGrantIn::agent("svc-worker", &helper.id)],
        )
        .await
        .unwrap();
    assert_eq!(updated.id, trusted.id);
    assert_eq!(updated.subjects.len(), 1);
    assert_eq!(
        updated.subjects[0].agent_id.as_deref(),
        Some(helper.id.as_str())
    );
    assert_eq!(as_worker.me().await.unwrap().id, helper.id);
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "the same token, signing in anew"
    );

    let removed = admin.distrust_issuer(&trusted.id).await.unwrap();
    assert_eq!(removed.id, trusted.id);
    assert!(removed.removed);
    assert!(admin.list_issuers().await.unwrap().items.is_empty());
    // Its tokens sign in no more: the client asks for a new token once, then gives up.
    let refused = as_worker.me().await.unwrap_err();
    assert!(matches!(refused, Error::Unauthenticated(_)), "{refused:?}");
    assert_eq!(refused.code(), Some("unauthenticated"));
    assert_eq!(
        asked.load(Ordering::SeqCst),
        2,
        "asked again once, not more"
    );
    let gone = admin.distrust_issuer(&trusted.id).await.unwrap_err();
    assert!(matches!(gone, Error::NotFound(_)), "{gone:?}");
}

#[tokio::test]
async fn a_token_refused_as_invalid_is_replaced_once_and_the_request_sent_again() {
    let (app, provider) = tokio::join!(app(), OidcProvider::start());
    let admin = tenant(&app).await;
    let dana = admin.create_member("dana", "member").await.unwrap();
    let audience = fresh_audience();
    admin
        .trust_issuer(
            &provider.issuer,
            &audience,
            &[SubjectGrantIn::member("ops", &dana.member_id)],
        )
        .await
        .unwrap();

    // The first token is for an audience the tenant never trusted, and the provider says it
    // lives an hour: the client keeps it until the gateway refuses it as invalid_token.
    let (as_dana, asked) = token_client(
        &app,
        &provider.issuer,
        "ops",
        &["an-audience-nobody-trusts", &audience],
    );
    // A write: the refusal came before the route did anything, so it is sent again.
    let made = as_dana
        .create_agent("made-with-a-token", None, None)
        .await
        .unwrap();
    assert_eq!(
        made.owner_member_id.as_deref(),
        Some(dana.member_id.as_str())
    );
    assert_eq!(
        asked.load(Ordering::SeqCst),
        2,
        "one refusal, one new token"
    );
    let agents = admin.list_agents().await.unwrap();
    let named: Vec<_> = agents
        .items
        .iter()
        .filter(|agent| agent.name == "made-with-a-token")
        .collect();
    assert_eq!(named.len(), 1, "created once");
    assert!(as_dana.list_agents().await.is_ok());
    assert_eq!(asked.load(Ordering::SeqCst), 2, "the new token is kept");

    // A provider whose every token is refused: one new token, one retry, then the 401.
    let (refused_client, refused_asked) = token_client(
        &app,
        &provider.issuer,
        "ops",
        &["an-audience-nobody-trusts"],
    );
    let refused = refused_client.list_agents().await.unwrap_err();
    assert!(matches!(refused, Error::Unauthenticated(_)), "{refused:?}");
    assert_eq!(refused_asked.load(Ordering::SeqCst), 2);

    // A provider that fails: its error, and nothing sent.
    let failing = Client::builder()
        .base_url(&app.base)
        .token_provider(|| async { Err::<AccessToken, TokenError>("no identity here".into()) })
        .build()
        .unwrap();
    let error = failing.me().await.unwrap_err();
    assert!(matches!(error, Error::TokenProvider(_)), "{error:?}");
}
