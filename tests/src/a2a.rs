//! The [`TestApp`] helpers for an agent's A2A bindings, JSON-RPC (`/a2a/jsonrpc`) and HTTP+JSON
//! (`/a2a/…`), as an A2A 1.0 client calls them.

use serde_json::Value;

use crate::{Reply, TestApp};

impl TestApp {
    /// Calls A2A method `method` with `params` over the JSON-RPC binding of `agent`, as an A2A
    /// 1.0 client does (`A2A-Version: 1.0`).
    pub async fn a2a_rpc(&self, agent: &str, key: &str, method: &str, params: Value) -> Reply {
        let body =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.a2a_rpc_raw(agent, Some(key), Some("1.0"), &body.to_string())
            .await
    }

    /// Posts `raw` to the JSON-RPC binding of `agent` with the given key and `A2A-Version`.
    pub async fn a2a_rpc_raw(
        &self,
        agent: &str,
        key: Option<&str>,
        version: Option<&str>,
        raw: &str,
    ) -> Reply {
        let mut request = self
            .http
            .post(format!("{}/v1/agents/{agent}/a2a/jsonrpc", self.base))
            .header("content-type", "application/a2a+json")
            .body(raw.to_owned());
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(version) = version {
            request = request.header("a2a-version", version);
        }
        self.finish(request).await
    }

    /// A request to the HTTP+JSON binding of A2A (`path` under `/v1/agents/{agent}/a2a`), as an
    /// A2A 1.0 client sends it (`A2A-Version: 1.0`).
    pub async fn a2a_rest(
        &self,
        method: &str,
        agent: &str,
        path: &str,
        key: &str,
        body: Option<Value>,
    ) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = self
            .http
            .request(method, format!("{}/v1/agents/{agent}/a2a{path}", self.base))
            .bearer_auth(key)
            .header("a2a-version", "1.0");
        if let Some(body) = body {
            request = request
                .header("content-type", "application/a2a+json")
                .body(body.to_string());
        }
        self.finish(request).await
    }
}
