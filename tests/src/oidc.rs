//! A real OpenID Connect provider for the tests: `oauth2-mock-server` from npm
//! (`tests/oidc-provider/provider.mjs`), started on a loopback port. It serves discovery, a JWKS
//! with an RS256, an ES256 and an EdDSA key, and the client-credentials grant; and, for the
//! refusal tests, tokens a provider would never issue.

use std::path::PathBuf;
use std::process::Stdio;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A running provider; it stops when dropped.
pub struct OidcProvider {
    /// The issuer identifier, as its tokens carry it in `iss` (`http://localhost:PORT`).
    pub issuer: String,
    http: reqwest::Client,
    _process: Child,
}

impl OidcProvider {
    /// Starts a provider (its npm packages come from `scripts/install.sh`).
    pub async fn start() -> OidcProvider {
        let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("oidc-provider");
        let mut process = Command::new("node")
            .arg("provider.mjs")
            .current_dir(&folder)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs tests/oidc-provider/provider.mjs (scripts/install.sh installs it)");
        let stdout = process.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let first = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
            .await
            .expect("the provider starts within 30 s")
            .expect("the provider's output")
            .expect("the provider prints its issuer");
        let started: Value = serde_json::from_str(&first).expect("the provider's first line");
        OidcProvider {
            issuer: started["issuer"].as_str().expect("issuer").to_owned(),
            http: reqwest::Client::new(),
            _process: process,
        }
    }

    /// A token from the provider's token endpoint by the client-credentials grant, as a
    /// workload gets one: its subject is `client_id`, its audience `audience`.
    pub async fn client_credentials(&self, client_id: &str, audience: &str) -> String {
        let response = self
            .http
            .post(format!("{}/token", self.issuer))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(
                url::form_urlencoded::Serializer::new(String::new())
                    .append_pair("grant_type", "client_credentials")
                    .append_pair("client_id", client_id)
                    .append_pair("aud", audience)
                    .finish(),
            )
            .send()
            .await
            .expect("token endpoint");
        assert_eq!(response.status(), 200, "the token endpoint answers");
        let body: Value = response.json().await.expect("token response");
        body["access_token"]
            .as_str()
            .expect("access_token")
            .to_owned()
    }

    /// A token the provider signs with its key `kid` (`rs`, `es` or `ed`) and `claims` laid over
    /// its own (`iss`, `iat`, `exp`, `nbf`), less the claims `drop` names.
    pub async fn signed(&self, kid: &str, claims: Value, drop: &[&str]) -> String {
        self.test_token(json!({"kid": kid, "claims": claims, "drop": drop}))
            .await
    }

    /// A token no provider would issue: `forge` is `unpublished-key` (a key the JWKS lacks),
    /// `none` (`alg: none`, no signature) or `hs256-public-key` (HS256 keyed with the RSA key's
    /// public half).
    pub async fn forged(&self, forge: &str, claims: Value) -> String {
        self.test_token(json!({"forge": forge, "claims": claims}))
            .await
    }

    /// Adds a key `kid` of `alg` to the provider's JWKS, as a provider rotating its keys does.
    pub async fn add_key(&self, alg: &str, kid: &str) {
        let response = self
            .http
            .post(format!("{}/test/keys", self.issuer))
            .json(&json!({"alg": alg, "kid": kid}))
            .send()
            .await
            .expect("the provider's test endpoint");
        assert_eq!(response.status(), 200, "the provider adds the key");
    }

    async fn test_token(&self, request: Value) -> String {
        let response = self
            .http
            .post(format!("{}/test/token", self.issuer))
            .json(&request)
            .send()
            .await
            .expect("the provider's test endpoint");
        let body: Value = response.json().await.expect("test token");
        body["token"]
            .as_str()
            .unwrap_or_else(|| panic!("a test token: {body}"))
            .to_owned()
    }
}
