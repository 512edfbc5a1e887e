//! The console's page and sessions over real HTTP: a member key exchanged for an `HttpOnly`
//! cookie that stands in for it on the API, changes refused without the session's CSRF token,
//! sign-out and key revocation ending the session, and the page's security headers.

use forgebench_tests::{spawn_app, Reply, TestApp};
use serde_json::{json, Value};

const COOKIE: &str = "__Host-forgebench_session";

/// A signed-in browser, as far as the gateway can tell: its cookie and the CSRF token it read.
struct Session {
    cookie: String,
    csrf: String,
}

async fn sign_in(app: &TestApp, key: &str) -> Reply {
    let request = app
        .http
        .post(format!("{}/console/session", app.base))
        .header("content-type", "application/json")
        .body(json!({ "key": key }).to_string());
    app.finish(request).await
}

/// Signs `key` in and reads the cookie from `Set-Cookie`, checking its attributes.
async fn session_of(app: &TestApp, key: &str) -> Session {
    let reply = sign_in(app, key).await;
    assert_eq!(reply.status, 201, "{}", reply.text);
    let set_cookie = reply.headers["set-cookie"].to_str().unwrap().to_owned();
    for attribute in [
        "HttpOnly",
        "Secure",
        "SameSite=Strict",
        "Path=/",
        "Max-Age=3600",
    ] {
        assert!(
            set_cookie.contains(attribute),
            "{set_cookie} lacks {attribute}"
        );
    }
    let value = set_cookie
        .split(';')
        .next()
        .and_then(|pair| pair.strip_prefix(&format!("{COOKIE}=")))
        .unwrap()
        .to_owned();
    assert!(!reply.text.contains(key), "the key is never echoed");
    assert!(
        !reply.text.contains(&value),
        "the token is only in the cookie"
    );
    Session {
        cookie: format!("{COOKIE}={value}"),
        csrf: reply.field("csrf_token"),
    }
}

/// A request made with the session's cookie (and, when `csrf`, its CSRF token).
async fn with_session(
    app: &TestApp,
    session: &Session,
    method: &str,
    path: &str,
    body: Option<Value>,
    csrf: bool,
) -> Reply {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = app
        .http
        .request(method, format!("{}{path}", app.base))
        .header("cookie", &session.cookie);
    if csrf {
        request = request.header("x-csrf-token", &session.csrf);
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    app.finish(request).await
}

/// A new member of `role`: its id, its first key's id, and the key.
async fn member_key(app: &TestApp, admin_key: &str, role: &str) -> (String, String, String) {
    let member = app
        .post(
            "/v1/members",
            admin_key,
            json!({"name": format!("a {role}"), "role": role}),
        )
        .await;
    assert_eq!(member.status, 201, "{}", member.text);
    (
        member.field("member_id"),
        member.field("key_id"),
        member.field("key"),
    )
}

#[tokio::test]
async fn a_session_stands_in_for_the_member_key_and_a_change_needs_its_csrf_token() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let session = session_of(&app, &pair.tenant.admin_key).await;

    let me = with_session(&app, &session, "GET", "/console/session", None, false).await;
    assert_eq!(me.status, 200, "{}", me.text);
    assert_eq!(me.field("role"), "admin");
    assert_eq!(me.field("tenant_id"), pair.tenant.id);
    assert_eq!(me.field("csrf_token"), session.csrf);

    let agents = with_session(&app, &session, "GET", "/v1/agents", None, false).await;
    assert_eq!(agents.status, 200, "{}", agents.text);
    assert_eq!(agents.body["items"].as_array().unwrap().len(), 2);

    let pause = json!({"status": "paused"});
    let path = format!("/v1/agents/{}", pair.callee.name);
    let forged = with_session(&app, &session, "PATCH", &path, Some(pause.clone()), false).await;
    assert_eq!(forged.status, 403, "{}", forged.text);
    assert!(forged.text.contains("X-CSRF-Token"), "{}", forged.text);
    let other = session_of(&app, &pair.tenant.admin_key).await;
    let crossed = Session {
        cookie: session.cookie.clone(),
        csrf: other.csrf,
    };
    let crossed = with_session(&app, &crossed, "PATCH", &path, Some(pause.clone()), true).await;
    assert_eq!(
        crossed.status, 403,
        "another session's token: {}",
        crossed.text
    );
    let agent = app.get(&path, &pair.tenant.admin_key).await;
    assert_eq!(
        agent.field("status"),
        "active",
        "nothing changed without the token"
    );

    let paused = with_session(&app, &session, "PATCH", &path, Some(pause), true).await;
    assert_eq!(paused.status, 200, "{}", paused.text);
    assert_eq!(paused.field("status"), "paused");
}

#[tokio::test]
async fn sign_out_and_revoking_the_key_end_the_session() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (member_id, key_id, key) = member_key(&app, &pair.tenant.admin_key, "viewer").await;

    let signed_out = session_of(&app, &key).await;
    let without_token =
        with_session(&app, &signed_out, "DELETE", "/console/session", None, false).await;
    assert_eq!(without_token.status, 403, "{}", without_token.text);
    let out = with_session(&app, &signed_out, "DELETE", "/console/session", None, true).await;
    assert_eq!(out.status, 204, "{}", out.text);
    assert!(out.headers["set-cookie"]
        .to_str()
        .unwrap()
        .contains("Max-Age=0"));
    for path in ["/console/session", "/v1/agents"] {
        let after = with_session(&app, &signed_out, "GET", path, None, false).await;
        assert_eq!(after.status, 401, "{path} after sign-out: {}", after.text);
    }

    let revoked = session_of(&app, &key).await;
    let revoke = app
        .send(
            "DELETE",
            &format!("/v1/members/{member_id}/keys/{key_id}"),
            Some(&pair.tenant.admin_key),
            None,
        )
        .await;
    assert_eq!(revoke.status, 200, "{}", revoke.text);
    let after = with_session(&app, &revoked, "GET", "/v1/agents", None, false).await;
    assert_eq!(after.status, 401, "a revoked key's session: {}", after.text);
}

#[tokio::test]
async fn a_viewers_session_reads_and_changes_nothing_and_sees_only_its_tenant() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let elsewhere = app.pair().await;
    let (_, _, key) = member_key(&app, &pair.tenant.admin_key, "viewer").await;
    let session = session_of(&app, &key).await;
    assert_eq!(
        with_session(&app, &session, "GET", "/console/session", None, false)
            .await
            .field("role"),
        "viewer"
    );
    let agents = with_session(&app, &session, "GET", "/v1/agents", None, false).await;
    assert_eq!(agents.status, 200, "{}", agents.text);
    let names: Vec<&str> = agents.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|agent| agent["id"].as_str().unwrap())
        .collect();
    assert!(names.contains(&pair.callee.id.as_str()));
    assert!(!names.contains(&elsewhere.callee.id.as_str()));
    let theirs = format!("/v1/agents/{}", elsewhere.callee.id);
    let other_tenant = with_session(&app, &session, "GET", &theirs, None, false).await;
    assert_eq!(other_tenant.status, 404, "{}", other_tenant.text);
    let change = with_session(
        &app,
        &session,
        "PATCH",
        &format!("/v1/agents/{}", pair.callee.name),
        Some(json!({"status": "paused"})),
        true,
    )
    .await;
    assert_eq!(
        change.status, 403,
        "a viewer changes nothing: {}",
        change.text
    );
}

#[tokio::test]
async fn only_a_members_key_signs_in_and_only_as_json() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    for (key, status) in [
        (pair.caller.key.as_str(), 403),
        (app.operator_key.as_str(), 403),
        (
            "fb_adm_0000000000000000000000000000000000000000000000000000000000000000",
            401,
        ),
    ] {
        let refused = sign_in(&app, key).await;
        assert_eq!(refused.status, status, "{}", refused.text);
        assert!(refused.headers.get("set-cookie").is_none());
    }
    let form = app
        .http
        .post(format!("{}/console/session", app.base))
        .header("content-type", "text/plain")
        .body(json!({ "key": pair.tenant.admin_key }).to_string());
    let form = app.finish(form).await;
    assert_eq!(form.status, 415, "{}", form.text);
    assert!(form.headers.get("set-cookie").is_none());
    // A bearer key wins over any cookie: the cookie is not even read.
    let forged = Session {
        cookie: format!("{COOKIE}=fb_ses_{}", "0".repeat(64)),
        csrf: String::new(),
    };
    let request = app
        .http
        .get(format!("{}/v1/agents", app.base))
        .bearer_auth(&pair.tenant.admin_key)
        .header("cookie", &forged.cookie);
    assert_eq!(app.finish(request).await.status, 200);
    let unknown = with_session(&app, &forged, "GET", "/v1/agents", None, false).await;
    assert_eq!(unknown.status, 401, "{}", unknown.text);
}

#[tokio::test]
async fn the_page_and_its_files_carry_a_strict_content_security_policy() {
    let app = spawn_app().await;
    for (path, content_type) in [
        ("/console", "text/html"),
        ("/console/app.js", "text/javascript"),
        ("/console/app.css", "text/css"),
    ] {
        let reply = app
            .finish(app.http.get(format!("{}{path}", app.base)))
            .await;
        assert_eq!(reply.status, 200, "{path}");
        let header = |name: &str| reply.headers[name].to_str().unwrap().to_owned();
        assert!(header("content-type").starts_with(content_type), "{path}");
        let policy = header("content-security-policy");
        for directive in [
            "default-src 'none'",
            "script-src 'self'",
            "frame-ancestors 'none'",
        ] {
            assert!(policy.contains(directive), "{path}: {policy}");
        }
        assert!(!policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"));
        assert_eq!(header("x-content-type-options"), "nosniff");
    }
    let page = app
        .finish(app.http.get(format!("{}/console", app.base)))
        .await;
    assert!(
        page.text.contains("console/app.js"),
        "the page loads its script"
    );
    assert!(!page.text.contains("<script>"), "no inline script");
    // From /console/ the page's relative file names would miss: the browser is sent on.
    let slash = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("{}/console/", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(slash.status(), 308);
    assert_eq!(slash.headers()["location"], "../console");
    let missing = app
        .finish(app.http.get(format!("{}/console/secrets.txt", app.base)))
        .await;
    assert_eq!(missing.status, 404);
    // Every file the document names is served, and the page loads only those.
    let document = app
        .finish(app.http.get(format!("{}/openapi.json", app.base)))
        .await;
    let named = document.body["paths"]["/console/{asset}"]["get"]["parameters"][0]["schema"]
        ["enum"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!named.is_empty());
    for asset in named {
        let asset = asset.as_str().unwrap();
        let reply = app
            .finish(app.http.get(format!("{}/console/{asset}", app.base)))
            .await;
        assert_eq!(reply.status, 200, "{asset}");
    }
}
