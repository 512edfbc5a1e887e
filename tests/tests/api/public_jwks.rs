//! The public JWKS (`GET /.well-known/jwks.json`): read without a key, the very set the keyed
//! route (`GET /v1/billing/export/pubkey`) publishes, public keys only, and kept by caches only
//! as long as they revalidate it, so a rotated key is in the next read.

use std::collections::BTreeSet;

use forgebench_tests::{spawn_app, Reply, TestApp};
use serde_json::json;

/// `GET /.well-known/jwks.json` with no Authorization header, and `If-None-Match` when given.
async fn public_jwks(app: &TestApp, if_none_match: Option<&str>) -> Reply {
    let mut request = app.http.get(format!("{}/.well-known/jwks.json", app.base));
    if let Some(etag) = if_none_match {
        request = request.header("if-none-match", etag);
    }
    app.finish(request).await
}

fn header<'a>(reply: &'a Reply, name: &str) -> &'a str {
    reply
        .headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header: {:?}", reply.headers))
        .to_str()
        .unwrap()
}

#[tokio::test]
async fn the_public_jwks_needs_no_key_and_is_the_keyed_set_with_public_keys_only() {
    let app = spawn_app().await;
    let pair = app.pair().await;

    // Read first, before anything signed: like the keyed route, it makes each purpose's first key.
    let public = public_jwks(&app, None).await;
    assert_eq!(public.status, 200, "{}", public.text);
    let keyed = app.get("/v1/billing/export/pubkey", &pair.caller.key).await;
    assert_eq!(keyed.status, 200, "{}", keyed.text);
    assert_eq!(public.body, keyed.body, "the same set as the keyed route");

    let keys = public.body["keys"].as_array().unwrap();
    let purposes: BTreeSet<&str> = keys
        .iter()
        .map(|key| key["purpose"].as_str().unwrap())
        .collect();
    assert_eq!(
        purposes,
        BTreeSet::from(["card-signing", "webhook-signing"])
    );
    let public_members: BTreeSet<&str> =
        BTreeSet::from(["kty", "crv", "x", "kid", "alg", "use", "purpose"]);
    for key in keys {
        assert!(key.get("d").is_none(), "a private key in the JWKS: {key}");
        let members: BTreeSet<&str> = key
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(members, public_members, "{key}");
    }
    assert!(!public.text.contains("sealed"), "{}", public.text);

    // Any cache may keep it, but revalidates it before each use; the keyed route is unchanged.
    assert_eq!(header(&public, "cache-control"), "public, no-cache");
    assert_eq!(header(&keyed, "cache-control"), "private, max-age=60");
    assert_eq!(
        header(&public, "content-type"),
        "application/json",
        "{:?}",
        public.headers
    );
    let etag = header(&public, "etag").to_owned();
    let unchanged = public_jwks(&app, Some(&etag)).await;
    assert_eq!(unchanged.status, 304, "{}", unchanged.text);
    assert_eq!(header(&unchanged, "etag"), etag);
    assert_eq!(header(&unchanged, "cache-control"), "public, no-cache");

    // A key in the request is not read: an unknown one changes nothing.
    let with_unknown_key = app
        .finish(
            app.http
                .get(format!("{}/.well-known/jwks.json", app.base))
                .bearer_auth("fb_live_not_a_key"),
        )
        .await;
    assert_eq!(with_unknown_key.status, 200, "{}", with_unknown_key.text);
    assert_eq!(with_unknown_key.body, public.body);
}

#[tokio::test]
async fn a_rotated_key_is_in_the_next_read_of_the_public_jwks() {
    let app = spawn_app().await;
    let before = public_jwks(&app, None).await;
    assert_eq!(before.status, 200, "{}", before.text);
    let etag = header(&before, "etag").to_owned();

    let rotated = app
        .post(
            "/v1/signing-keys/rotate",
            &app.operator_key,
            json!({"purpose": "webhook-signing"}),
        )
        .await;
    assert_eq!(rotated.status, 200, "{}", rotated.text);
    let kid = rotated.field("kid");

    // Revalidating the copy taken before the rotation brings the new set, new key included.
    let after = public_jwks(&app, Some(&etag)).await;
    assert_eq!(after.status, 200, "{}", after.text);
    assert_ne!(header(&after, "etag"), etag);
    let webhook_kids: Vec<&str> = after.body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|key| key["purpose"] == "webhook-signing")
        .map(|key| key["kid"].as_str().unwrap())
        .collect();
    assert_eq!(webhook_kids.len(), 2, "{}", after.text);
    assert!(webhook_kids.contains(&kid.as_str()), "{}", after.text);
}
