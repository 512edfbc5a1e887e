//! The OpenAPI document says what the gateway does: clients are generated from it, so each rule
//! the gateway enforces is in the document, and nothing the document allows is refused. Each
//! test drives the rule over HTTP and reads the same rule out of the document the gateway serves.

use forgebench_tests::spawn_app;

#[tokio::test]
async fn a_405_names_the_methods_the_path_takes_in_allow() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let reply = app
        .send("PUT", "/v1/agents", Some(&tenant.admin_key), None)
        .await;
    assert_eq!(reply.status, 405, "{}", reply.text);
    assert_eq!(reply.body["detail"]["code"], "method_not_allowed");
    assert_eq!(reply.headers["allow"], "POST, GET");
    let reply = app
        .send("POST", "/v1/agents/a/tools", Some(&tenant.admin_key), None)
        .await;
    assert_eq!(reply.status, 405, "{}", reply.text);
    assert_eq!(reply.headers["allow"], "GET");
}
