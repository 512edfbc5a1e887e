//! Plain HTTP to the gateway: the [`Reply`] every helper returns, and the [`TestApp`] helpers that
//! send any request (with a JSON body, a raw body, `post`, `get`) and read its answer.

use serde_json::Value;

use crate::TestApp;

/// One HTTP answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Reply {
    pub fn field(&self, name: &str) -> String {
        self.body[name].as_str().unwrap_or_default().to_owned()
    }

    pub fn state(&self) -> String {
        self.body["status"]["state"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

impl TestApp {
    /// Sends a request with an optional key and JSON body.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = self.http.request(method, format!("{}{}", self.base, path));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        self.finish(request).await
    }

    /// Sends a request whose body is exactly `raw`.
    pub async fn send_raw(&self, method: &str, path: &str, key: &str, raw: &str) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let request = self
            .http
            .request(method, format!("{}{}", self.base, path))
            .bearer_auth(key)
            .header("content-type", "application/json")
            .body(raw.to_owned());
        self.finish(request).await
    }

    pub async fn finish(&self, request: reqwest::RequestBuilder) -> Reply {
        let response = request.send().await.expect("request reached the gateway");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.expect("body");
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            body,
            text,
        }
    }

    pub async fn post(&self, path: &str, key: &str, body: Value) -> Reply {
        self.send("POST", path, Some(key), Some(body)).await
    }

    pub async fn get(&self, path: &str, key: &str) -> Reply {
        self.send("GET", path, Some(key), None).await
    }
}
