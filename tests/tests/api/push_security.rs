//! The push endpoint's security: the SSRF guard at save and at dial, private networks for admins
//! only, and a secret that appears in no response, no log line and no stored item.

use std::net::IpAddr;
use std::time::Duration;

use forgebench_tests::{
    spawn_app, spawn_app_with, text_message, Answer, Callee, LogCapture, Options,
};
use serde_json::json;

const SECRET: &str = "s3cret-91d0a6-must-never-leak";

#[tokio::test]
async fn thirty_hostile_urls_are_refused_at_save() {
    // No operator allowlist: the guard as deployed.
    let app = spawn_app().await;
    let pair = app.pair().await;
    let resolver = app.app.dialer.resolver();
    let names: [(&str, &str); 6] = [
        ("metadata.attacker.test", "169.254.169.254"),
        ("loop.attacker.test", "127.0.0.1"),
        ("v6loop.attacker.test", "::1"),
        ("ec2v6.attacker.test", "fd00:ec2::254"),
        ("private.attacker.test", "10.1.2.3"),
        ("mixed.attacker.test", "93.184.216.34"),
    ];
    for (host, address) in names {
        resolver.set_override(host, vec![address.parse().unwrap()]);
    }
    // One public and one private address: every address is checked, not just the first.
    resolver.set_override(
        "mixed.attacker.test",
        vec![
            "93.184.216.34".parse().unwrap(),
            "192.168.1.10".parse().unwrap(),
        ],
    );
    let hostile = [
        "http://127.0.0.1/a2a",
        "https://127.0.0.1/a2a",
        "https://127.1/a2a",
        "https://2130706433/a2a",
        "https://0x7f000001/a2a",
        "https://0177.0.0.1/a2a",
        "https://0x7f.0x0.0x0.0x1/a2a",
        "https://localhost/a2a",
        "https://[::1]/a2a",
        "https://[::ffff:127.0.0.1]/a2a",
        "https://[::ffff:7f00:1]/a2a",
        "https://[0:0:0:0:0:ffff:169.254.169.254]/a2a",
        "https://169.254.169.254/latest/meta-data/",
        "https://2852039166/latest/meta-data/",
        "https://0xa9fea9fe/",
        "https://[fd00:ec2::254]/latest/meta-data/",
        "https://100.100.100.200/",
        "https://[64:ff9b::a9fe:a9fe]/",
        "https://[64:ff9b::7f00:1]/",
        "https://[2002:7f00:1::]/",
        "https://[2002:a9fe:a9fe::1]/",
        "https://[::127.0.0.1]/",
        "https://[::ffff:0:7f00:1]/",
        "https://[::ffff:0:169.254.169.254]/",
        "https://[::ffff:0:a00:5]/",
        "https://0.0.0.0/",
        "https://0/",
        "https://[::]/",
        "https://169.254.10.10/",
        "https://[fe80::1]/",
        "https://10.0.0.5/",
        "https://172.16.8.1/",
        "https://192.168.1.1/",
        "https://100.64.0.1/",
        "https://[fd12:3456::1]/",
        "https://224.0.0.1/",
        "https://255.255.255.255/",
        "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
        "https://metadata.attacker.test/",
        "https://loop.attacker.test/",
        "https://v6loop.attacker.test/",
        "https://ec2v6.attacker.test/",
        "https://private.attacker.test/",
        "https://mixed.attacker.test/",
        "http://93.184.216.34/a2a",
    ];
    // Not a URL the guard could dial at all: bad input.
    let malformed = [
        "https://user:pass@example.com/a2a",
        "ftp://example.com/a2a",
        "file:///etc/passwd",
        "gopher://127.0.0.1:6379/_INFO",
        "not a url",
    ];
    assert!(hostile.len() >= 30);
    for (urls, status, code) in [
        (&hostile[..], 403, "forbidden"),
        (&malformed[..], 400, "invalid_request"),
    ] {
        for url in urls {
            let reply = app
                .set_endpoint(
                    &pair.tenant.admin_key,
                    &pair.callee.name,
                    json!({ "url": url }),
                )
                .await;
            assert_eq!(reply.status, status, "{url}: {}", reply.text);
            assert_eq!(reply.body["detail"]["code"], code, "{url}");
        }
    }
    let agent = app
        .get(
            &format!("/v1/agents/{}", pair.callee.id),
            &pair.tenant.admin_key,
        )
        .await;
    assert!(agent.body["endpoint"].is_null(), "nothing was saved");
}

#[tokio::test]
async fn a_host_that_passed_at_save_and_resolves_to_loopback_later_is_never_dialed() {
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let app = spawn_app().await;
    let pair = app.pair().await;
    let resolver = app.app.dialer.resolver();
    // Saved as a private-network endpoint (plain http, admin-allowed), so that without the
    // dial-time guard the POST would really reach the server below.
    resolver.set_override("callee.example.test", vec!["10.9.8.7".parse().unwrap()]);
    let url = format!("http://callee.example.test:{}/a2a", callee.port);
    let saved = app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({"url": url, "allow_private_network": true}),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);

    // The name is re-pointed at the loopback address where a server really listens.
    let loopback: IpAddr = "127.0.0.1".parse().unwrap();
    resolver.set_override("callee.example.test", vec![loopback]);
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &opened.field("id"))
        .await;
    assert_eq!(settled.state(), "failed");
    assert!(
        settled.field("error").contains("delivery refused"),
        "{}",
        settled.text
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(callee.received().is_empty(), "the POST must never happen");
}

#[tokio::test]
async fn private_networks_need_the_flag_and_the_flag_needs_an_admin() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let (_, member) = app.create_member(&tenant, "member").await;
    let agent = app.create_agent(&member, "internal").await;
    let url = "http://10.20.30.40:8080/a2a";
    let without = app
        .set_endpoint(&member, &agent.name, json!({ "url": url }))
        .await;
    assert_eq!(without.status, 403, "{}", without.text);
    let by_member = app
        .set_endpoint(
            &member,
            &agent.name,
            json!({"url": url, "allow_private_network": true}),
        )
        .await;
    assert_eq!(by_member.status, 403);
    let by_admin = app
        .set_endpoint(
            &tenant.admin_key,
            &agent.name,
            json!({"url": url, "allow_private_network": true}),
        )
        .await;
    assert_eq!(by_admin.status, 200, "{}", by_admin.text);
    assert_eq!(by_admin.body["endpoint"]["allow_private_network"], true);
    // Loopback stays refused even with the flag.
    let loopback = app
        .set_endpoint(
            &tenant.admin_key,
            &agent.name,
            json!({"url": "http://127.0.0.1/", "allow_private_network": true}),
        )
        .await;
    assert_eq!(loopback.status, 403);
}

#[tokio::test]
async fn auth_is_kept_when_omitted_dropped_with_clear_auth_and_null_reverts_to_pull() {
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    let callee = &pair.callee.name;
    let set = app
        .set_endpoint(
            admin,
            callee,
            json!({"url": "http://127.0.0.1:9/a2a", "auth": {"type": "bearer", "secret": SECRET}}),
        )
        .await;
    assert_eq!(
        set.body["endpoint"]["auth"],
        json!({"type": "bearer", "configured": true})
    );
    let kept = app
        .set_endpoint(admin, callee, json!({"url": "http://127.0.0.1:10/a2a"}))
        .await;
    assert_eq!(kept.body["endpoint"]["auth"]["configured"], true);
    assert_eq!(kept.body["endpoint"]["url"], "http://127.0.0.1:10/a2a");
    let cleared = app
        .set_endpoint(
            admin,
            callee,
            json!({"url": "http://127.0.0.1:10/a2a", "clear_auth": true}),
        )
        .await;
    assert!(cleared.body["endpoint"]["auth"].is_null());
    let both = app
        .set_endpoint(admin, callee, json!({"url": "http://127.0.0.1:10/a2a", "clear_auth": true, "auth": {"type": "bearer", "secret": "x"}}))
        .await;
    assert_eq!(both.status, 400);
    let pull = app
        .set_endpoint(admin, callee, json!({ "url": null }))
        .await;
    assert!(pull.body["endpoint"].is_null());
    let opened = app
        .open_task(&pair.caller.key, callee, text_message("x"), 0)
        .await;
    assert_eq!(opened.body["delivery"], "pull");
}

#[tokio::test]
async fn the_secret_is_in_no_response_no_log_line_and_no_stored_item() {
    let captured = LogCapture::install();
    let callee = Callee::start(|n| match n {
        0 => Answer::text(500, "boom"),
        1 => Answer::text(401, "unauthorized"),
        _ => Answer::json(200, json!({})),
    })
    .await;
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    let mut texts = Vec::new();
    let set = app
        .set_endpoint(
            admin,
            &pair.callee.name,
            json!({"url": callee.url, "auth": {"type": "bearer", "secret": SECRET}}),
        )
        .await;
    texts.push(set.text.clone());
    // A bad request that carries the secret must not echo it either.
    let bad = app
        .set_endpoint(admin, &pair.callee.name, json!({"url": "https://169.254.169.254/", "auth": {"type": "bearer", "secret": SECRET}}))
        .await;
    assert_eq!(bad.status, 403);
    texts.push(bad.text.clone());
    let bad_auth = app
        .set_endpoint(
            admin,
            &pair.callee.name,
            json!({"url": callee.url, "auth": {"type": "weird", "secret": SECRET}}),
        )
        .await;
    texts.push(bad_auth.text.clone());
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &opened.field("id"))
        .await;
    texts.push(settled.text.clone());
    texts.push(
        app.get(&format!("/v1/agents/{}", pair.callee.id), admin)
            .await
            .text,
    );
    texts.push(app.get("/v1/agents", admin).await.text);
    texts.push(app.get("/v1/audit", admin).await.text);
    texts.push(
        app.get(
            &format!(
                "/v1/agents/{}/tasks/{}/attempts",
                pair.callee.id,
                opened.field("id")
            ),
            admin,
        )
        .await
        .text,
    );
    // The endpoint did receive it: the secret is real, and it went where it should.
    assert!(callee
        .received()
        .iter()
        .any(|r| r.headers["authorization"] == format!("Bearer {SECRET}").as_str()));
    for text in &texts {
        assert!(
            !text.contains(SECRET),
            "a response holds the secret: {text}"
        );
    }
    let items = format!("{:?}", app.scan_all().await);
    assert!(
        !items.contains(SECRET),
        "a stored item holds the secret in clear"
    );
    if let Some(captured) = captured {
        let logs = captured.text();
        assert!(logs.contains("delivery attempt"), "the logs were captured");
        assert!(!logs.contains(SECRET), "a log line holds the secret");
        assert!(!logs.contains(&pair.caller.key), "a log line holds a key");
    }
}

#[tokio::test]
async fn an_operator_range_never_opens_a_metadata_address() {
    let app = spawn_app_with(Options {
        push_allowed_cidrs: "169.254.0.0/16,100.64.0.0/10,fd00:ec2::/32",
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://100.100.100.200/",
        "http://[fd00:ec2::254]/",
        "http://[::ffff:0:169.254.169.254]/",
    ] {
        let reply = app
            .set_endpoint(admin, &pair.callee.name, json!({ "url": url }))
            .await;
        assert_eq!(reply.status, 403, "{url} was accepted: {}", reply.text);
    }
    // The rest of the operator's range is open; a name re-pointed at metadata later is not.
    let resolver = app.app.dialer.resolver();
    resolver.set_override("link.example.test", vec!["169.254.10.10".parse().unwrap()]);
    let saved = app
        .set_endpoint(
            admin,
            &pair.callee.name,
            json!({"url": "http://link.example.test:9/a2a"}),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    resolver.set_override(
        "link.example.test",
        vec!["169.254.169.254".parse().unwrap()],
    );
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &opened.field("id"))
        .await;
    assert_eq!(settled.state(), "failed", "{}", settled.text);
    assert!(
        settled.field("error").contains("delivery refused"),
        "{}",
        settled.text
    );
}

#[tokio::test]
async fn a_refusal_says_the_rules_and_never_where_the_host_leads() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    let resolver = app.app.dialer.resolver();
    for (host, address) in [
        ("metadata.attacker.test", "169.254.169.254"),
        ("loop.attacker.test", "127.0.0.1"),
        ("private.attacker.test", "10.9.8.7"),
        ("public.attacker.test", "93.184.216.34"),
    ] {
        resolver.set_override(host, vec![address.parse().unwrap()]);
    }
    let mut messages = std::collections::BTreeSet::new();
    for url in [
        "https://metadata.attacker.test/",
        "https://loop.attacker.test/",
        "https://private.attacker.test/",
        "http://public.attacker.test/",
        "https://127.0.0.1/",
        "https://[::ffff:0:a9fe:a9fe]/",
    ] {
        let reply = app
            .set_endpoint(admin, &pair.callee.name, json!({ "url": url }))
            .await;
        assert_eq!(reply.status, 403, "{url}: {}", reply.text);
        messages.insert(reply.body["detail"]["message"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        messages.len(),
        1,
        "one message for every outcome: {messages:?}"
    );
    let message = messages.pop_first().unwrap();
    for telling in [
        "169.254",
        "127.0.0.1",
        "10.9.8.7",
        "loopback",
        "metadata",
        "resolves to",
    ] {
        assert!(!message.contains(telling), "{telling} in {message}");
    }

    // At dial time too: the task's error and the attempt's say no more.
    resolver.set_override("later.attacker.test", vec!["10.9.8.7".parse().unwrap()]);
    let saved = app
        .set_endpoint(
            admin,
            &pair.callee.name,
            json!({"url": "http://later.attacker.test:9/a2a", "allow_private_network": true}),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    resolver.set_override("later.attacker.test", vec!["127.0.0.1".parse().unwrap()]);
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &opened.field("id"))
        .await;
    assert_eq!(settled.state(), "failed", "{}", settled.text);
    let attempts = app
        .get(
            &format!(
                "/v1/agents/{}/tasks/{}/attempts",
                pair.callee.id,
                opened.field("id")
            ),
            admin,
        )
        .await;
    for text in [&settled.text, &attempts.text] {
        assert!(!text.contains("127.0.0.1"), "{text}");
        assert!(!text.contains("loopback"), "{text}");
    }
    assert!(
        settled
            .field("error")
            .contains(forgebench::push::ssrf::DESTINATION_REFUSED),
        "{}",
        settled.text
    );
}
