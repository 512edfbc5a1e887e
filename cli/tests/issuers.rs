//! `forgebench issuers …` and `--token-command` against the real gateway (in-process, on the
//! local emulators) and a real OpenID Connect provider (`oauth2-mock-server`,
//! tests/oidc-provider): the binary trusts the provider, and a token command that fetches
//! client-credentials tokens from it signs in as the agent the subject names.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test, with its message"
)]

use forgebench_tests::{spawn_app_with, OidcProvider, Options, TestApp};
use serde_json::Value;
use tokio::process::Command;

const BINARY: &str = env!("CARGO_BIN_EXE_forgebench");

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim()).unwrap_or_else(|error| {
            panic!(
                "stdout is not JSON ({error}): {}\nstderr: {}",
                self.stdout, self.stderr
            )
        })
    }
}

async fn finish(mut command: Command) -> Run {
    let output = command.output().await.expect("the binary ran");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The binary on `base` with nothing to sign in with yet.
fn bare(base: &str, args: &[&str]) -> Command {
    let mut command = Command::new(BINARY);
    command
        .args(args)
        .env("FORGEBENCH_URL", base)
        .env("XDG_CONFIG_HOME", "/nonexistent/forgebench-tests")
        .env_remove("FORGEBENCH_PROFILE")
        .env_remove("FORGEBENCH_API_KEY")
        .env_remove("FORGEBENCH_TOKEN_COMMAND")
        .kill_on_drop(true);
    command
}

/// The binary signing in with `key`.
async fn with_key(app: &TestApp, key: &str, args: &[&str]) -> Run {
    let mut command = bare(&app.base, args);
    command.env("FORGEBENCH_API_KEY", key);
    finish(command).await
}

/// The binary signing in with the tokens `token_command` prints, from the variable.
async fn with_tokens(app: &TestApp, token_command: &str, args: &[&str]) -> Run {
    let mut command = bare(&app.base, args);
    command.env("FORGEBENCH_TOKEN_COMMAND", token_command);
    finish(command).await
}

/// A shell command that asks the provider's token endpoint for a client-credentials token of
/// `client_id` for `audience` and prints the access token alone, or (`whole_answer`) the token
/// endpoint's JSON answer as it came.
fn token_command(issuer: &str, client_id: &str, audience: &str, whole_answer: bool) -> String {
    let print = if whole_answer {
        "r.text()).then(t => process.stdout.write(t))"
    } else {
        "r.json()).then(t => console.log(t.access_token))"
    };
    format!(
        "node -e 'const [issuer, sub, aud] = process.argv.slice(1); \
         fetch(issuer + \"/token\", {{method: \"POST\", body: new URLSearchParams(\
         {{grant_type: \"client_credentials\", client_id: sub, aud}})}})\
         .then(r => {print}' {issuer} {client_id} {audience}"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issuers_are_trusted_updated_and_distrusted_and_a_token_command_signs_in_as_listed() {
    let (app, provider) = tokio::join!(
        spawn_app_with(Options {
            public_url: true,
            ..Options::local_push()
        }),
        OidcProvider::start()
    );
    let tenant = with_key(
        &app,
        &app.operator_key,
        &["--json", "tenants", "create", "acme"],
    )
    .await;
    assert_eq!(tenant.code, 0, "{}", tenant.stderr);
    let admin = tenant.json()["admin_key"].as_str().unwrap().to_owned();
    let mut ids = Vec::new();
    for name in ["worker", "helper"] {
        let created = with_key(&app, &admin, &["--json", "agents", "create", name]).await;
        assert_eq!(created.code, 0, "{}", created.stderr);
        ids.push(created.json()["id"].as_str().unwrap().to_owned());
    }
    let (worker_id, helper_id) = (&ids[0], &ids[1]);
    // Each gateway has a table of its own: no other tenant trusts this pair.
    let audience = "forgebench-cli-tests".to_owned();

    let trusted = with_key(
        &app,
        &admin,
        &[
            "--json",
            "issuers",
            "trust",
            "--issuer",
            &provider.issuer,
            "--audience",
            &audience,
            "--subject",
            "svc-worker=agent:worker",
        ],
    )
    .await;
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    let trusted = trusted.json();
    assert_eq!(trusted["issuer"], provider.issuer.as_str());
    assert_eq!(trusted["subjects"][0]["subject"], "svc-worker");
    assert_eq!(trusted["subjects"][0]["agent_id"], worker_id.as_str());
    let issuer_id = trusted["id"].as_str().unwrap().to_owned();

    let listed = with_key(&app, &admin, &["issuers", "list"]).await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert_eq!(
        listed.stdout,
        format!(
            "{issuer_id}  {}  {audience}\n  svc-worker -> agent {worker_id}\n",
            provider.issuer
        )
    );

    // The token alone on stdout, or the token endpoint's whole answer: either signs in.
    for whole_answer in [false, true] {
        let command = token_command(&provider.issuer, "svc-worker", &audience, whole_answer);
        let me = with_tokens(&app, &command, &["--json", "agents", "me"]).await;
        assert_eq!(me.code, 0, "{}", me.stderr);
        assert_eq!(me.json()["id"], worker_id.as_str());
        assert!(
            !format!("{}{}", me.stdout, me.stderr).contains("eyJ"),
            "the token is never printed"
        );
    }
    // The flag works as the variable does.
    let command = token_command(&provider.issuer, "svc-worker", &audience, false);
    let mut flagged = bare(&app.base, &["--token-command", &command, "agents", "me"]);
    flagged.env("FORGEBENCH_TOKEN_COMMAND", "exit 9");
    let flagged = finish(flagged).await;
    assert_eq!(flagged.code, 0, "--token-command wins: {}", flagged.stderr);
    assert!(
        flagged.stdout.contains(worker_id.as_str()),
        "{}",
        flagged.stdout
    );

    let updated = with_key(
        &app,
        &admin,
        &[
            "--json",
            "issuers",
            "update",
            &issuer_id,
            "--subject",
            &format!("svc-worker=agent:{helper_id}"),
        ],
    )
    .await;
    assert_eq!(updated.code, 0, "{}", updated.stderr);
    assert_eq!(
        updated.json()["subjects"][0]["agent_id"],
        helper_id.as_str()
    );
    let me = with_tokens(&app, &command, &["--json", "agents", "me"]).await;
    assert_eq!(me.json()["id"], helper_id.as_str(), "{}", me.stderr);

    let no_list = with_key(&app, &admin, &["issuers", "update", &issuer_id]).await;
    assert_eq!(no_list.code, 2, "a list or --clear: {}", no_list.stderr);
    let bad = with_key(
        &app,
        &admin,
        &[
            "issuers",
            "trust",
            "--issuer",
            &provider.issuer,
            "--audience",
            "another",
            "--subject",
            "svc-worker=team:ops",
        ],
    )
    .await;
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("SUB=agent:NAME|member:ID"),
        "{}",
        bad.stderr
    );
    // An agent (here by its token) may not trust an issuer.
    let by_agent = with_tokens(
        &app,
        &command,
        &[
            "issuers",
            "trust",
            "--issuer",
            &provider.issuer,
            "--audience",
            "another",
        ],
    )
    .await;
    assert_eq!(by_agent.code, 7, "{}", by_agent.stderr);

    let cleared = with_key(
        &app,
        &admin,
        &["--json", "issuers", "update", &issuer_id, "--clear"],
    )
    .await;
    assert_eq!(cleared.code, 0, "{}", cleared.stderr);
    assert_eq!(cleared.json()["subjects"], serde_json::json!([]));
    let distrusted = with_key(&app, &admin, &["issuers", "distrust", &issuer_id]).await;
    assert_eq!(distrusted.code, 0, "{}", distrusted.stderr);
    assert_eq!(
        distrusted.stdout,
        format!("issuer {issuer_id} distrusted\n")
    );
    let refused = with_tokens(&app, &command, &["agents", "me"]).await;
    assert_eq!(
        refused.code, 8,
        "a refused token exits 8: {}",
        refused.stderr
    );
    let listed = with_key(&app, &admin, &["--json", "issuers", "list"]).await;
    assert_eq!(listed.json()["items"], serde_json::json!([]));
}

#[tokio::test]
async fn a_key_with_a_token_command_or_a_failing_token_command_sends_nothing() {
    // Nothing listens on port 1: any request would be a connection error (exit 1).
    let base = "http://127.0.0.1:1";
    let mut both = bare(base, &["agents", "me"]);
    both.env("FORGEBENCH_API_KEY", "fb_agt_secret")
        .env("FORGEBENCH_TOKEN_COMMAND", "echo eyJ.a.b");
    let both = finish(both).await;
    assert_eq!(both.code, 2, "{}", both.stderr);
    assert!(
        both.stderr.contains("mutually exclusive"),
        "{}",
        both.stderr
    );
    assert!(!both.stderr.contains("fb_agt_secret"), "{}", both.stderr);

    let mut failing = bare(base, &["agents", "me"]);
    failing.env(
        "FORGEBENCH_TOKEN_COMMAND",
        "echo eyJ.leaked.sig; echo 'no identity here' >&2; exit 4",
    );
    let failing = finish(failing).await;
    assert_eq!(failing.code, 8, "{}", failing.stderr);
    assert!(
        failing
            .stderr
            .contains("the token command failed (exit status: 4)"),
        "{}",
        failing.stderr
    );
    assert!(
        failing.stderr.contains("no identity here"),
        "the command's stderr is shown: {}",
        failing.stderr
    );
    assert!(!failing.stderr.contains("leaked"), "{}", failing.stderr);
    assert!(!failing.stdout.contains("leaked"), "{}", failing.stdout);
}
