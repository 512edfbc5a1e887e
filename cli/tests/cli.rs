//! The `forgebench` binary against the real gateway (in-process, on the local emulators): a
//! `serve --exec` process answering tasks that `forgebench call` processes open.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test, with its message"
)]

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use forgebench_tests::{spawn_app, spawn_app_with, Answer, Callee, Options, Pair, TestApp};
use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt;
use tokio::net::TcpListener;
use tokio::process::{Child, Command};

const BINARY: &str = env!("CARGO_BIN_EXE_forgebench");

/// What one run of the binary gave.
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

/// No profile of the user's own reaches a test: the config directory is one that is not there.
const NO_CONFIG: &str = "/nonexistent/forgebench-tests";

fn command(app: &TestApp, key: &str, args: &[&str]) -> Command {
    let mut command = Command::new(BINARY);
    command
        .args(args)
        .env("XDG_CONFIG_HOME", NO_CONFIG)
        .env_remove("FORGEBENCH_PROFILE")
        .env("FORGEBENCH_URL", &app.base)
        .env("FORGEBENCH_API_KEY", key)
        .kill_on_drop(true);
    command
}

async fn run(app: &TestApp, key: &str, args: &[&str]) -> Run {
    finish(command(app, key, args)).await
}

async fn finish(mut command: Command) -> Run {
    let output = command.output().await.expect("the binary ran");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// `forgebench serve --exec <exec>` as the callee, in its own process.
fn serve(app: &TestApp, callee_key: &str, exec: &str) -> Child {
    command(
        app,
        callee_key,
        &["--json", "serve", "--wait", "1", "--exec", exec],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("serve started")
}

/// Stops a `serve` process with SIGTERM, as a supervisor would; its exit code and stdout.
async fn terminate(child: Child) -> Run {
    let pid = child.id().expect("still running").to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .unwrap();
    assert!(killed.success());
    let output = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .expect("serve stopped after SIGTERM")
        .unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

const ECHO: &str = r#"python3 -c 'import json, sys
task = json.load(sys.stdin)
print("echo: " + task["input"]["message"]["parts"][0]["text"])'"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_exec_answers_tasks_that_call_opens_from_another_process() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let server = serve(&app, &pair.callee.key, ECHO);

    let plain = run(
        &app,
        &pair.caller.key,
        &["call", &pair.callee.name, "--text", "hello"],
    )
    .await;
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    assert_eq!(plain.stdout, "echo: hello\n");
    assert!(plain.stderr.contains("completed"), "{}", plain.stderr);

    let args = [
        "--json",
        "call",
        &pair.callee.id,
        "--text",
        "as json",
        "--wait",
        "20",
    ];
    let scripted = run(&app, &pair.caller.key, &args).await;
    assert_eq!(scripted.code, 0, "{}", scripted.stderr);
    let task = scripted.json();
    assert_eq!(task["status"]["state"], "completed");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "echo: as json");

    let stopped = terminate(server).await;
    assert_eq!(stopped.code, 0, "{}", stopped.stderr);
    assert_eq!(stopped.json()["handled"], 2);
    assert!(
        !stopped.stderr.contains(&pair.callee.key),
        "serve never prints its key"
    );
}

/// Asks back when the task's text starts with "ask", answers JSON when it says "json", and
/// otherwise fails with a reason on stderr.
const BRANCHING: &str = r#"input=$(cat)
case "$input" in
  *'"text":"ask'*) printf '%s' '{"state":"input_required","message":{"role":"agent","parts":[{"text":"which invoice?"}]}}' ;;
  *'"text":"json'*) printf '%s\n' '{"category":"software"}' ;;
  *) echo "cannot classify: no invoice_id" >&2; exit 3 ;;
esac"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_final_state_of_an_exec_reply_gives_call_its_exit_code() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let server = serve(&app, &pair.callee.key, BRANCHING);
    let callee = pair.callee.name.as_str();

    let failed = run(
        &app,
        &pair.caller.key,
        &["--json", "call", callee, "--text", "classify"],
    )
    .await;
    assert_eq!(failed.code, 3, "failed exits 3: {}", failed.stderr);
    let task = failed.json();
    assert_eq!(task["status"]["state"], "failed");
    // The command's stderr is the serving side's, not the caller's: the task says only that
    // the command failed; `serve` prints the stderr for whoever runs it.
    assert_eq!(task["error"], "the command failed (exit status: 3)");

    let asked = run(
        &app,
        &pair.caller.key,
        &["call", callee, "--text", "ask me"],
    )
    .await;
    assert_eq!(asked.code, 4, "input_required exits 4: {}", asked.stderr);
    assert_eq!(asked.stdout, "which invoice?\n");

    let data = run(
        &app,
        &pair.caller.key,
        &["call", callee, "--text", "json please"],
    )
    .await;
    assert_eq!(data.code, 0, "{}", data.stderr);
    assert_eq!(data.stdout, "{\"category\":\"software\"}\n");

    let stopped = terminate(server).await;
    assert_eq!(stopped.json()["handled"], 3);
    assert!(
        stopped.stderr.contains("cannot classify: no invoice_id"),
        "{}",
        stopped.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_nobody_answers_exits_still_working_and_cancel_finishes_it() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let callee = pair.callee.name.as_str();

    let waiting = run(
        &app,
        &pair.caller.key,
        &["--json", "call", callee, "--text", "hi", "--wait", "1"],
    )
    .await;
    assert_eq!(waiting.code, 6, "still working exits 6: {}", waiting.stderr);
    let task_id = waiting.json()["id"].as_str().unwrap().to_owned();
    assert!(
        waiting.stderr.contains("waiting"),
        "progress on stderr: {}",
        waiting.stderr
    );

    let canceled = run(
        &app,
        &pair.caller.key,
        &["--json", "tasks", "cancel", callee, &task_id],
    )
    .await;
    assert_eq!(canceled.code, 0, "{}", canceled.stderr);
    assert_eq!(canceled.json()["status"]["state"], "canceled");
    let read = run(&app, &pair.caller.key, &["tasks", "get", callee, &task_id]).await;
    assert_eq!(read.code, 5, "canceled exits 5: {}", read.stderr);

    let found = run(
        &app,
        &pair.caller.key,
        &["--json", "tasks", "search", "--state", "canceled"],
    )
    .await;
    assert_eq!(found.code, 0, "{}", found.stderr);
    let ids: Vec<Value> = found.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].clone())
        .collect();
    assert_eq!(ids, vec![Value::String(task_id)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_management_commands_set_up_agents_that_can_call_each_other() {
    let app = spawn_app().await;
    let tenant = run(
        &app,
        &app.operator_key,
        &["--json", "tenants", "create", "acme"],
    )
    .await;
    assert_eq!(tenant.code, 0, "{}", tenant.stderr);
    let admin = tenant.json()["admin_key"].as_str().unwrap().to_owned();

    for name in ["orchestrator", "classifier"] {
        let created = run(&app, &admin, &["--json", "agents", "create", name]).await;
        assert_eq!(created.code, 0, "{}", created.stderr);
        assert_eq!(created.json()["name"], name);
    }
    let issued = run(&app, &admin, &["--json", "keys", "issue", "orchestrator"]).await;
    let caller_key = issued.json()["key"].as_str().unwrap().to_owned();
    assert!(caller_key.starts_with("fb_agt_"));

    let refused = run(&app, &caller_key, &["call", "classifier", "--text", "hi"]).await;
    assert_eq!(
        refused.code, 7,
        "a refused call exits 7: {}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("not permitted"),
        "{}",
        refused.stderr
    );
    let request_id = refused
        .stderr
        .trim_end()
        .rsplit_once("(request id ")
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("no request id: {}", refused.stderr))
        .to_owned();
    assert!(!request_id.is_empty());
    let refused = run(
        &app,
        &caller_key,
        &["--json", "call", "classifier", "--text", "hi"],
    )
    .await;
    assert_eq!(refused.code, 7, "{}", refused.stderr);
    assert_eq!(refused.stdout, "", "an error prints nothing on stdout");
    // Progress lines come first; the error is the last line.
    let last_line = refused.stderr.trim_end().lines().last().unwrap_or_default();
    let report: Value = serde_json::from_str(last_line)
        .unwrap_or_else(|_| panic!("one line of JSON: {}", refused.stderr));
    let error = &report["error"];
    assert_eq!(error["exit_code"], 7);
    assert_eq!(error["status"], 403);
    assert_eq!(error["code"], "not_permitted");
    let json_request_id = error["request_id"].as_str().unwrap();
    assert!(!json_request_id.is_empty() && json_request_id != request_id);
    assert!(error["message"].as_str().unwrap().contains("not permitted"));

    let granted = run(
        &app,
        &admin,
        &["--json", "bindings", "grant", "orchestrator", "classifier"],
    )
    .await;
    assert_eq!(granted.code, 0, "{}", granted.stderr);
    assert!(
        granted.json()[0]["approved_at"].is_string(),
        "an admin's grant is approved at once"
    );
    let listed = run(&app, &admin, &["bindings", "list", "classifier"]).await;
    assert!(listed.stdout.starts_with("inbound "), "{}", listed.stdout);
    assert!(listed.stdout.contains("approved"), "{}", listed.stdout);

    let opened = run(
        &app,
        &caller_key,
        &["call", "classifier", "--text", "hi", "--wait", "0"],
    )
    .await;
    assert_eq!(
        opened.code, 6,
        "opened, not yet answered: {}",
        opened.stderr
    );

    let keys = run(&app, &admin, &["keys", "list", "orchestrator"]).await;
    assert_eq!(keys.code, 0, "{}", keys.stderr);
    assert!(
        !keys.stdout.contains(&caller_key),
        "a listing never shows a key"
    );
    let cards = run(&app, &caller_key, &["--json", "cards", "list"]).await;
    assert_eq!(cards.code, 0, "{}", cards.stderr);
    let listing = cards.json();
    let names: Vec<&str> = listing["cards"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|card| card["name"].as_str())
        .collect();
    assert!(names.contains(&"classifier"), "{names:?}");

    let unknown = run(&app, "fb_agt_nobody", &["agents", "me"]).await;
    assert_eq!(
        unknown.code, 8,
        "an unknown key exits 8: {}",
        unknown.stderr
    );
}

/// Waits until `pair`'s push task `task_id` has `count` delivery attempts recorded.
async fn attempts_reach(app: &TestApp, pair: &Pair, task_id: &str, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while app.delivery_attempts(pair, task_id).await.len() < count {
        assert!(Instant::now() < deadline, "{count} attempts of {task_id}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Opens a task on `pair`'s callee with `call --wait 0` and waits until its first delivery
/// attempt is recorded; its id.
async fn pushed_task(app: &TestApp, pair: &Pair, text: &str) -> String {
    let args = [
        "--json",
        "call",
        &pair.callee.name,
        "--text",
        text,
        "--wait",
        "0",
    ];
    let opened = run(app, &pair.caller.key, &args).await;
    assert_eq!(opened.code, 6, "opened, not answered: {}", opened.stderr);
    let task_id = opened.json()["id"].as_str().unwrap().to_owned();
    attempts_reach(app, pair, &task_id, 1).await;
    task_id
}

/// Runs `args` until `done` holds of the run, at most 60 s: for what the gateway does just
/// after the attempt a test waited for (it counts the attempt in the endpoint's health, then
/// releases the delivery's lease, before which a replay is refused with 409 and replays nothing).
async fn until_done(app: &TestApp, key: &str, args: &[&str], done: impl Fn(&Run) -> bool) -> Run {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let run = run(app, key, args).await;
        if done(&run) {
            return run;
        }
        assert!(
            Instant::now() < deadline,
            "{args:?}: {} {}",
            run.stdout,
            run.stderr
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_delivery_commands_show_health_replay_redrive_and_enable() {
    // 503 with a Retry-After of ten minutes (a failed task waits), until `working` is set
    let working = Arc::new(AtomicBool::new(false));
    let switch = Arc::clone(&working);
    let endpoint = Callee::start(move |_| match switch.load(Ordering::SeqCst) {
        true => Answer::json(200, json!({"state": "completed"})),
        false => Answer {
            retry_after: Some(600),
            ..Answer::json(503, json!({"detail": "busy"}))
        },
    })
    .await;
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let admin = pair.tenant.admin_key.as_str();
    let callee = pair.callee.name.as_str();
    let set = run(&app, admin, &["endpoints", "set", callee, &endpoint.url]).await;
    assert_eq!(set.code, 0, "{}", set.stderr);
    let task_id = pushed_task(&app, &pair, "classify").await;

    let health = ["--json", "endpoints", "health", callee];
    let failing = |run: &Run| run.code == 0 && run.json()["state"] == "failing";
    let health = until_done(&app, admin, &health, failing).await.json();
    assert!(
        health["consecutive_failures"].as_u64() >= Some(1),
        "{health}"
    );
    assert!(health["last_error"].as_str().unwrap_or("").contains("503"));
    let human = run(&app, admin, &["endpoints", "health", callee]).await;
    assert!(human
        .stdout
        .starts_with(&format!("{}  failing\n", endpoint.url)));
    assert!(human.stdout.contains("503"), "{}", human.stdout);

    let replay = ["--json", "tasks", "replay", callee, &task_id];
    let replayed = until_done(&app, admin, &replay, |run| run.code == 0).await;
    assert_eq!(replayed.json()["task_id"], task_id.as_str());
    attempts_reach(&app, &pair, &task_id, 2).await;
    // Both attempts, oldest first: each a 503.
    let attempts = ["--json", "tasks", "attempts", callee, &task_id];
    let listed = run(&app, admin, &attempts).await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let items = listed.json()["items"].as_array().unwrap().clone();
    assert!(items.len() >= 2, "{items:?}");
    assert_eq!(items[0]["attempt"], 1);
    assert!(
        items.iter().all(|attempt| attempt["status"] == 503),
        "{items:?}"
    );
    let human = run(&app, admin, &["tasks", "attempts", callee, &task_id]).await;
    assert!(human.stdout.starts_with("#1  "), "{}", human.stdout);
    assert!(human.stdout.contains("  503  "), "{}", human.stdout);
    let unknown = run(&app, admin, &["tasks", "replay", callee, "no-such-task"]).await;
    assert_eq!(unknown.code, 1, "not found exits 1: {}", unknown.stderr);
    let bad_since = ["endpoints", "redrive", callee, "--since", "yesterday"];
    let bad_since = run(&app, admin, &bad_since).await;
    assert_eq!(
        bad_since.code, 1,
        "a bad request exits 1: {}",
        bad_since.stderr
    );

    let (_, member_key) = app.create_member(&pair.tenant, "member").await;
    let refused = run(&app, &member_key, &["endpoints", "enable", callee]).await;
    assert_eq!(refused.code, 7, "only an admin enables: {}", refused.stderr);
    let enabled = run(&app, admin, &["--json", "endpoints", "enable", callee]).await;
    assert_eq!(enabled.code, 0, "{}", enabled.stderr);
    assert_ne!(enabled.json()["state"], "disabled");
    let pull = run(&app, admin, &["endpoints", "health", &pair.caller.name]).await;
    assert_eq!(pull.code, 1, "a pull agent has no health: {}", pull.stderr);

    working.store(true, Ordering::SeqCst);
    let since = "2020-01-01T00:00:00Z";
    let redrive = ["--json", "endpoints", "redrive", callee, "--since", since];
    let redriven = run(&app, admin, &redrive).await;
    assert_eq!(redriven.code, 0, "{}", redriven.stderr);
    assert_eq!(redriven.json()["task_ids"], json!([task_id]));
    let done = app.settled(&pair.caller.key, callee, &task_id).await;
    assert_eq!(done.state(), "completed", "{}", done.text);
    let finished = run(&app, admin, &["tasks", "replay", callee, &task_id]).await;
    assert_eq!(
        finished.code, 1,
        "a finished task is a conflict: {}",
        finished.stderr
    );
    assert!(finished.stderr.contains("conflict"), "{}", finished.stderr);
    let human = run(
        &app,
        admin,
        &["endpoints", "redrive", callee, "--since", since],
    )
    .await;
    assert_eq!(human.stdout, "redriven 0 tasks\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_replay_notification_sends_a_config_its_latest_event_again() {
    let hook = Callee::start(|_| Answer::json(200, json!({}))).await;
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let (caller, callee) = (pair.caller.key.as_str(), pair.callee.name.as_str());
    let open = [
        "--json",
        "call",
        callee,
        "--text",
        "Refund INV-7",
        "--wait",
        "0",
    ];
    let opened = run(&app, caller, &open).await;
    assert_eq!(opened.code, 6, "opened, not answered: {}", opened.stderr);
    let task_id = opened.json()["id"].as_str().unwrap().to_owned();
    let created = app
        .a2a_rest(
            "POST",
            callee,
            &format!("/tasks/{task_id}/pushNotificationConfigs"),
            caller,
            Some(json!({"id": "hook", "url": hook.url})),
        )
        .await;
    assert!(created.status < 300, "{}", created.text);
    let replay = [
        "--json",
        "tasks",
        "replay-notification",
        callee,
        &task_id,
        "hook",
    ];
    let early = run(&app, caller, &replay).await;
    assert_eq!(early.code, 1, "no event yet, a conflict: {}", early.stderr);
    assert!(early.stderr.contains("conflict"), "{}", early.stderr);

    // the caller cancels the task: the config is notified of it
    let canceled = run(&app, caller, &["tasks", "cancel", callee, &task_id]).await;
    assert_eq!(canceled.code, 0, "{}", canceled.stderr);
    let deadline = Instant::now() + Duration::from_secs(60);
    let state = |received: &forgebench_tests::Received| {
        received.body["statusUpdate"]["status"]["state"]
            .as_str()
            .map(str::to_owned)
    };
    let sent = loop {
        let received = hook.received();
        if received
            .iter()
            .any(|one| state(one).as_deref() == Some("TASK_STATE_CANCELED"))
        {
            break received;
        }
        assert!(Instant::now() < deadline, "never notified: {received:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let last = sent.last().unwrap();
    let last_id = last.headers["webhook-id"].to_str().unwrap().to_owned();

    // refused only while the notification's send still holds the config (a conflict)
    let settled = |run: &Run| run.code == 0 || !run.stderr.contains("conflict");
    let replayed = until_done(&app, caller, &replay, settled).await;
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    let replayed = replayed.json();
    assert_eq!(replayed["webhook_id"], last_id.as_str(), "{replayed}");
    assert_eq!(replayed["task_id"], task_id.as_str());
    assert_eq!(replayed["config_id"], "hook");
    let event = replayed["event"].as_u64().unwrap();
    assert_eq!(last_id, format!("{task_id}:hook:{event}"));
    while hook.received().len() <= sent.len() {
        assert!(Instant::now() < deadline, "the event was not sent again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let again = &hook.received()[sent.len()];
    assert_eq!(again.headers["webhook-id"].to_str().unwrap(), last_id);
    assert_eq!(again.raw_body, last.raw_body, "the same event");

    let other = [
        "tasks",
        "replay-notification",
        callee,
        &task_id,
        "no-such-hook",
    ];
    let unknown = run(&app, caller, &other).await;
    assert_eq!(unknown.code, 1, "not found exits 1: {}", unknown.stderr);
    let by_callee = run(&app, &pair.callee.key, &replay).await;
    assert_eq!(
        by_callee.code, 7,
        "the callee is refused: {}",
        by_callee.stderr
    );
    assert_eq!(hook.received().len(), sent.len() + 1, "once, nothing else");

    let human = &replay[1..];
    let by_admin = until_done(&app, &pair.tenant.admin_key, human, settled).await;
    assert_eq!(
        by_admin.stdout,
        format!("task {task_id} config hook: event {event} is sent again (webhook-id {last_id})\n"),
        "{}",
        by_admin.stderr
    );
}

/// A listener standing in for every host but the one a test names: the proxy variables of the
/// binary point at it, so a request to any other host (e.g. `https://api.forgebench.ai`) connects
/// here instead. It counts its connections and drops them.
async fn elsewhere() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let counter = connections.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    (url, connections)
}

/// Sends every request of `command` through `proxy`, but those to `direct` (a host, or none).
fn through(command: &mut Command, proxy: &str, direct: Option<&str>) {
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
        command.env(name, proxy).env(name.to_lowercase(), proxy);
    }
    for name in ["NO_PROXY", "no_proxy"] {
        match direct {
            Some(host) => command.env(name, host),
            None => command.env_remove(name),
        };
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_goes_to_forgebench_url_or_to_url_when_given_and_nowhere_else() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (proxy, connections) = elsewhere().await;

    let mut from_environment = command(&app, &pair.caller.key, &["--json", "agents", "me"]);
    through(&mut from_environment, &proxy, Some("127.0.0.1"));
    let environment = finish(from_environment).await;
    assert_eq!(environment.code, 0, "{}", environment.stderr);
    assert_eq!(
        environment.json()["name"],
        pair.caller.name.as_str(),
        "FORGEBENCH_URL's gateway answered for FORGEBENCH_API_KEY's agent"
    );

    // --url wins over FORGEBENCH_URL, which names the stand-in here.
    let mut named = command(
        &app,
        &pair.caller.key,
        &["--json", "--url", &app.base, "agents", "me"],
    );
    named.env("FORGEBENCH_URL", &proxy);
    through(&mut named, &proxy, Some("127.0.0.1"));
    let flag = finish(named).await;
    assert_eq!(flag.code, 0, "{}", flag.stderr);
    assert_eq!(flag.json()["name"], pair.caller.name.as_str());

    assert_eq!(connections.load(Ordering::SeqCst), 0, "no other host");
    for run in [&environment, &flag] {
        let printed = format!("{}{}", run.stdout, run.stderr);
        assert!(
            !printed.contains(&pair.caller.key),
            "the key is never printed"
        );
    }
}

#[tokio::test]
async fn without_a_url_the_cli_is_a_usage_error_and_sends_nothing() {
    let (proxy, connections) = elsewhere().await;
    let key = format!("fb_agt_{}", "7".repeat(64));
    for empty in [None, Some("")] {
        let mut command = Command::new(BINARY);
        command
            .args(["--json", "agents", "me"])
            .env("XDG_CONFIG_HOME", NO_CONFIG)
            .env("FORGEBENCH_API_KEY", &key)
            .kill_on_drop(true);
        match empty {
            Some(value) => command.env("FORGEBENCH_URL", value),
            None => command.env_remove("FORGEBENCH_URL"),
        };
        through(&mut command, &proxy, None);
        let run = finish(command).await;

        assert_eq!(run.code, 2, "a usage error: {}", run.stderr);
        assert!(run.stderr.contains("--url"), "{}", run.stderr);
        assert!(run.stderr.contains("FORGEBENCH_URL"), "{}", run.stderr);
        assert!(!run.stderr.contains(&key), "the key is never printed");
        assert_eq!(run.stdout, "");
    }
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "no request went anywhere (the old default would have gone to the hosted service)"
    );
}

/// Shell completions need no gateway, key or URL, and name every command.
#[tokio::test]
async fn completions_are_printed_for_each_shell_without_a_gateway() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef forgebench"),
        ("fish", "complete -c forgebench"),
    ] {
        let mut command = Command::new(BINARY);
        command
            .args(["completions", shell])
            .env_remove("FORGEBENCH_URL")
            .env_remove("FORGEBENCH_API_KEY")
            .kill_on_drop(true);
        let run = finish(command).await;
        assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
        assert!(run.stdout.contains(marker), "{shell}: {}", run.stdout);
        for name in ["tasks", "bindings", "issuers", "replay-notification"] {
            assert!(run.stdout.contains(name), "{shell} completes {name}");
        }
    }
    let mut unknown = Command::new(BINARY);
    unknown.args(["completions", "cmd.exe"]).kill_on_drop(true);
    assert_eq!(finish(unknown).await.code, 2);
}

/// `calls tree` draws a workflow's calls under one another; `audit` reads the log's entries a
/// page at a time or all of them, filtered.
#[tokio::test]
async fn the_ledger_commands_draw_a_call_tree_and_read_the_audit_log() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = pair.tenant.admin_key.as_str();
    let archiver = app.create_agent(admin, "archiver").await;
    let granted = app.grant(admin, &pair.callee.id, &[&archiver.name]).await;
    assert_eq!(granted.status, 200, "{}", granted.text);
    let open = |key: &str, callee: &str, parent: Option<&str>| {
        let mut args = vec!["--json", "call", callee, "--text", "hop", "--wait", "0"];
        if let Some(parent) = parent {
            args.extend(["--parent-call-id", parent]);
        }
        let (key, args): (String, Vec<String>) = (
            key.to_owned(),
            args.into_iter().map(str::to_owned).collect(),
        );
        let app = &app;
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let opened = run(app, &key, &args).await;
            assert_eq!(opened.code, 6, "{}", opened.stderr);
            opened.json()["call_id"].as_str().unwrap().to_owned()
        }
    };
    let root = open(&pair.caller.key, &pair.callee.name, None).await;
    let child = open(&pair.callee.key, &archiver.name, Some(&root)).await;
    open(&pair.callee.key, &archiver.name, Some(&root)).await;

    let tree = run(&app, admin, &["calls", "tree", &root]).await;
    assert_eq!(tree.code, 0, "{}", tree.stderr);
    let shape: Vec<String> = tree
        .stdout
        .lines()
        .map(|line| line.split("  task").next().unwrap_or_default().to_owned())
        .collect();
    let (caller, callee, third) = (&pair.caller.id, &pair.callee.id, &archiver.id);
    assert_eq!(
        shape,
        [
            format!("{caller} -> {callee}"),
            format!("├─ {callee} -> {third}"),
            format!("└─ {callee} -> {third}"),
        ]
    );
    assert!(tree.stdout.contains(&format!("call {child}")));
    let as_json = run(&app, admin, &["--json", "calls", "tree", &root]).await;
    assert_eq!(as_json.json()["items"].as_array().unwrap().len(), 3);

    let opens = [
        "--json",
        "audit",
        "--action",
        "task.open",
        "--all",
        "--limit",
        "1",
    ];
    let all = run(&app, admin, &opens).await;
    assert_eq!(all.code, 0, "{}", all.stderr);
    let entries: Vec<Value> = all
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        entries.len(),
        3,
        "every page, one entry each: {}",
        all.stdout
    );
    assert!(entries.iter().all(|entry| entry["action"] == "task.open"));
    let page = run(
        &app,
        admin,
        &["audit", "--action", "task.open", "--limit", "2"],
    )
    .await;
    assert_eq!(page.stdout.lines().count(), 2, "{}", page.stdout);
    assert!(page.stderr.contains("--cursor "), "{}", page.stderr);
    let refused = ["--json", "audit", "--outcome", "refused", "--all"];
    let refused = run(&app, admin, &refused).await;
    assert_eq!(refused.stdout, "", "nothing was refused");
}

/// `tasks watch` follows a task from its open to its answer, exits with its final state, and
/// resumes after an event id with nothing seen twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_watch_follows_a_task_to_its_end_and_resumes_after_an_event() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let callee = pair.callee.name.as_str();
    let args = [
        "--json", "call", callee, "--text", "classify", "--wait", "0",
    ];
    let opened = run(&app, &pair.caller.key, &args).await;
    let task_id = opened.json()["id"].as_str().unwrap().to_owned();
    let mut watcher = command(
        &app,
        &pair.caller.key,
        &["tasks", "watch", callee, &task_id],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut stdout = tokio::io::BufReader::new(watcher.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(60), stdout.next_line())
        .await
        .expect("the watch prints the task")
        .unwrap()
        .unwrap();
    assert!(first.contains("  task  submitted"), "{first}");
    let claimed = app.claim(&pair.callee.key, 5).await;
    assert_eq!(claimed.field("id"), task_id);
    let answered = app
        .post_result(
            &pair.callee.key,
            &task_id,
            json!({"state": "completed", "artifacts": [{"parts": [{"text": "software"}]}]}),
        )
        .await;
    assert_eq!(answered.status, 200, "{}", answered.text);
    let mut lines = Vec::new();
    while let Some(line) = tokio::time::timeout(Duration::from_secs(60), stdout.next_line())
        .await
        .expect("the watch ends with the task")
        .unwrap()
    {
        lines.push(line);
    }
    let status = watcher.wait().await.unwrap();
    assert_eq!(status.code(), Some(0), "{lines:?}");
    assert!(
        lines.iter().any(|line| line.contains("  working")),
        "{lines:?}"
    );
    assert!(
        lines.last().unwrap().contains("  final  completed"),
        "{lines:?}"
    );

    // From the claim's event on: the events after it, and no earlier one.
    let claim_id = lines
        .iter()
        .find(|line| line.contains("  working"))
        .and_then(|line| line.split("  ").next())
        .unwrap()
        .to_owned();
    let after = [
        "--json", "tasks", "watch", callee, &task_id, "--after", &claim_id,
    ];
    let resumed = run(&app, &pair.caller.key, &after).await;
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let ids: Vec<u64> = resumed
        .stdout
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["id"]
                .as_u64()
                .unwrap()
        })
        .collect();
    let claim_id: u64 = claim_id.parse().unwrap();
    assert!(
        !ids.is_empty() && ids.iter().all(|id| *id > claim_id),
        "{ids:?}"
    );
}

/// Branches on the task's text: "env" prints what of the environment it got, "hang" leaves a
/// process behind and never ends, "flood" prints 5 MB.
const LIMITED: &str = r#"input=$(cat)
case "$input" in
  *'"text":"env'*) printf '%s' "secret=${SECRET_FOR_TEST:-none} key=${FORGEBENCH_API_KEY:-none} passed=${PASSED_ONE:-none} path=${PATH:+set}" ;;
  *'"text":"hang'*) sleep 60 & echo $! > "$PID_FILE"; wait ;;
  *'"text":"flood'*) head -c 5000000 /dev/zero | tr '\0' x ;;
esac"#;

/// `serve --exec` gives its command only the environment it allows, stops one that runs past
/// `--timeout` with whatever it left running, and one that prints past the bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_exec_holds_each_command_to_its_environment_its_time_and_its_output() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let pid_file = std::env::temp_dir().join(format!("forgebench-exec-{}.pid", uuid_like()));
    let args = [
        "--json",
        "serve",
        "--wait",
        "1",
        "--timeout",
        "2",
        "--pass-env",
        "PASSED_ONE",
        "--pass-env",
        "FORGEBENCH_API_KEY",
        "--exec",
        LIMITED,
    ];
    let server = command(&app, &pair.callee.key, &args)
        .env("SECRET_FOR_TEST", "s3cret")
        .env("PASSED_ONE", "yes")
        .env("PID_FILE", &pid_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let call = |text: &'static str| {
        let key = pair.caller.key.clone();
        let callee = pair.callee.name.clone();
        let app = &app;
        async move {
            let args = ["--json", "call", &callee, "--text", text, "--wait", "20"];
            run(app, &key, &args).await.json()
        }
    };
    let env = call("env").await;
    assert_eq!(
        env["artifacts"][0]["parts"][0]["text"], "secret=none key=none passed=yes path=set",
        "{env}"
    );
    drop(server);

    let server = command(
        &app,
        &pair.callee.key,
        &[
            "--json",
            "serve",
            "--wait",
            "1",
            "--timeout",
            "2",
            "--pass-env",
            "PID_FILE",
            "--exec",
            LIMITED,
        ],
    )
    .env("PID_FILE", &pid_file)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let hung = call("hang").await;
    assert_eq!(hung["status"]["state"], "failed", "{hung}");
    assert_eq!(
        hung["error"],
        "the command ran past its 2 s and was stopped"
    );
    // Gone, or dead and waiting to be reaped (a zombie), within a moment of the task's failing.
    let left = std::fs::read_to_string(&pid_file).unwrap();
    let stat = format!("/proc/{}/stat", left.trim());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let stat = std::fs::read_to_string(&stat).ok();
        let state = stat.as_deref().and_then(|stat| stat.rsplit(") ").next());
        if state.is_none_or(|rest| rest.starts_with('Z')) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the command's process still runs: {state:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let flooded = call("flood").await;
    assert_eq!(flooded["status"]["state"], "failed", "{flooded}");
    assert!(
        flooded["error"]
            .as_str()
            .unwrap()
            .starts_with("the command printed more than"),
        "{flooded}"
    );
    let stopped = terminate(server).await;
    assert_eq!(stopped.code, 0, "{}", stopped.stderr);
    let _ = std::fs::remove_file(&pid_file);
}

fn uuid_like() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

/// A Ctrl-C at the terminal reaches the whole foreground process group: `serve` stops claiming
/// and lets the task in hand finish, and its command, in a group of its own, never sees it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_lets_the_task_in_hand_finish_and_never_reaches_its_command() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let exec = "cat > /dev/null; sleep 2; echo finished";
    let server = command(
        &app,
        &pair.callee.key,
        &["--json", "serve", "--wait", "1", "--exec", exec],
    )
    .process_group(0)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let group = server.id().unwrap().to_string();
    let args = [
        "--json",
        "call",
        &pair.callee.name,
        "--text",
        "slow",
        "--wait",
        "0",
    ];
    let opened = run(&app, &pair.caller.key, &args).await;
    let task_id = opened.json()["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    while app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await
        .state()
        != "working"
    {
        assert!(Instant::now() < deadline, "the task was claimed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // As a terminal's Ctrl-C: SIGINT to every process of serve's group.
    let interrupted = Command::new("kill")
        .args(["-INT", "--", &format!("-{group}")])
        .status()
        .await
        .unwrap();
    assert!(interrupted.success());
    let output = tokio::time::timeout(Duration::from_secs(30), server.wait_with_output())
        .await
        .expect("serve stopped")
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let done = app
        .settled(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(done.state(), "completed", "{}", done.text);
    assert_eq!(done.body["artifacts"][0]["parts"][0]["text"], "finished");
}

/// Runs the binary as `key`, asserts it exited 0 and returns its JSON on stdout.
async fn json_of(app: &TestApp, key: &str, args: &[&str]) -> Value {
    let mut with_json = vec!["--json"];
    with_json.extend_from_slice(args);
    let ran = run(app, key, &with_json).await;
    assert_eq!(ran.code, 0, "{args:?}: {}", ran.stderr);
    ran.json()
}

/// The governance commands, each checked by reading back what it changed: a member's second
/// key (it signs in, then is refused once revoked), a binding's limits and contract, an agent's
/// tools (on its card too), the tenant's settings and policies (a tried policy only logs, an
/// enforced one refuses, a removed one is gone) and the signing keys (rotated, listed, retired).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_governance_commands_change_what_they_say_and_read_it_back() {
    let app = spawn_app_with(Options {
        signing_key_lifetime: Duration::ZERO,
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let admin = pair.tenant.admin_key.as_str();

    let member = json_of(
        &app,
        admin,
        &["members", "create", "pat", "--role", "viewer"],
    )
    .await;
    let member_id = member["member_id"].as_str().unwrap();
    let issued = json_of(&app, admin, &["members", "issue-key", member_id]).await;
    let second_key = issued["key"].as_str().unwrap();
    assert!(run(&app, second_key, &["settings", "get"]).await.code == 0);
    let key_id = issued["key_id"].as_str().unwrap();
    let revoked = json_of(&app, admin, &["members", "revoke-key", member_id, key_id]).await;
    assert_eq!(revoked["revoked"], true);
    let refused = run(&app, second_key, &["settings", "get"]).await;
    assert_eq!(refused.code, 8, "a revoked key exits 8: {}", refused.stderr);

    let update = [
        "bindings",
        "update",
        &pair.callee.name,
        &pair.binding_id,
        "--max-call-depth",
        "3",
        "--skills",
        "lookup,refund",
        "--daily-quota",
        "40",
    ];
    let updated = json_of(&app, admin, &update).await;
    assert_eq!(updated["limits"]["max_call_depth"], 3);
    assert_eq!(updated["contract"]["skills"], json!(["lookup", "refund"]));
    let cleared = [
        "bindings",
        "update",
        &pair.caller.name,
        &pair.binding_id,
        "--daily-quota",
        "none",
        "--skills",
        "none",
    ];
    let cleared = json_of(&app, admin, &cleared).await;
    assert_eq!(cleared["contract"]["daily_quota"], Value::Null);
    assert_eq!(cleared["contract"]["skills"], Value::Null);
    assert_eq!(cleared["limits"]["max_call_depth"], 3, "the rest stays");
    let listed = json_of(&app, admin, &["bindings", "list", &pair.callee.name]).await;
    assert_eq!(listed["inbound"][0]["limits"]["max_call_depth"], 3);
    let nothing = run(&app, admin, &["bindings", "update", "a", "b"]).await;
    assert_eq!(nothing.code, 2, "nothing to change: {}", nothing.stderr);

    walk_tools(&app, &pair).await;
    walk_settings_and_policies(&app, &pair).await;
    walk_signing_keys(&app, admin).await;
    walk_agents_members_and_bindings(&app, &pair).await;
}

/// The management commands no other test runs: a member's agent granted a pending binding an
/// admin approves and revokes, the listings, an agent paused, a key revoked, a question
/// answered.
async fn walk_agents_members_and_bindings(app: &TestApp, pair: &Pair) {
    let admin = pair.tenant.admin_key.as_str();
    let member = json_of(app, admin, &["members", "create", "sam"]).await;
    let member_key = member["key"].as_str().unwrap();
    let members = run(app, admin, &["members", "list"]).await;
    assert!(
        members.stdout.contains("  sam  member  "),
        "{}",
        members.stdout
    );
    assert!(
        !members.stdout.contains(member_key),
        "a listing never shows a key"
    );
    json_of(app, member_key, &["agents", "create", "sams-agent"]).await;
    let grant = ["bindings", "grant", "sams-agent", &pair.callee.name];
    let granted = json_of(app, member_key, &grant).await;
    assert_eq!(granted[0]["approved_at"], Value::Null, "pending");
    let binding_id = granted[0]["id"].as_str().unwrap();
    let approve = ["bindings", "approve", &pair.callee.name, binding_id];
    assert!(json_of(app, admin, &approve).await["approved_at"].is_string());
    let revoke = ["bindings", "revoke", "sams-agent", binding_id];
    assert_eq!(json_of(app, member_key, &revoke).await["revoked"], true);

    let listed = run(app, admin, &["agents", "list"]).await;
    assert_eq!(listed.stdout.lines().count(), 3, "{}", listed.stdout);
    let update = ["agents", "update", "sams-agent", "--status", "paused"];
    assert_eq!(json_of(app, member_key, &update).await["status"], "paused");
    let got = run(app, admin, &["agents", "get", "sams-agent"]).await;
    assert!(
        got.stdout.contains("  sams-agent  paused  pull"),
        "{}",
        got.stdout
    );

    let issued = json_of(app, admin, &["keys", "issue", "sams-agent"]).await;
    let key_id = issued["key_id"].as_str().unwrap();
    json_of(app, admin, &["keys", "revoke", "sams-agent", key_id]).await;
    let keys = json_of(app, admin, &["keys", "list", "sams-agent"]).await;
    assert!(keys["items"][0]["revoked_at"].is_string(), "{keys}");

    let asked = app.asked(pair).await;
    let answer = ["tasks", "answer", &pair.callee.name, &asked, "yes, go on"];
    let answered = json_of(app, &pair.caller.key, &answer).await;
    assert_eq!(answered["status"]["state"], "working");
    assert_eq!(
        answered["history"].as_array().unwrap().last().unwrap()["parts"][0]["text"],
        "yes, go on"
    );
}

async fn walk_tools(app: &TestApp, pair: &Pair) {
    let callee = pair.callee.name.as_str();
    let put = [
        "tools",
        "put",
        callee,
        "lookup",
        "--description",
        "Looks an invoice up",
        "--tag",
        "invoices",
    ];
    let tool = json_of(app, &pair.tenant.admin_key, &put).await;
    assert_eq!(tool["tags"], json!(["invoices"]));
    let listed = run(app, &pair.tenant.admin_key, &["tools", "list", callee]).await;
    assert_eq!(listed.stdout, "lookup  Looks an invoice up  [invoices]\n");
    let card = json_of(app, &pair.caller.key, &["cards", "get", callee]).await;
    assert_eq!(card["skills"][0]["description"], "Looks an invoice up");
    let delete = ["tools", "delete", callee, "lookup"];
    let removed = json_of(app, &pair.tenant.admin_key, &delete).await;
    assert_eq!(removed["removed"], true);
    let listed = json_of(app, &pair.callee.key, &["tools", "list", callee]).await;
    assert_eq!(listed["items"], json!([]));
}

async fn walk_settings_and_policies(app: &TestApp, pair: &Pair) {
    let admin = pair.tenant.admin_key.as_str();
    let changed = [
        "settings",
        "update",
        "--max-call-depth",
        "5",
        "--max-fan-out",
        "20",
        "--word-search",
        "false",
    ];
    let changed = json_of(app, admin, &changed).await;
    assert_eq!(
        (&changed["max_call_depth"], &changed["max_fan_out"]),
        (&json!(5), &json!(20))
    );
    json_of(app, admin, &["settings", "update", "--max-fan-out", "none"]).await;
    let read = run(app, admin, &["settings", "get"]).await;
    assert!(
        read.stdout.contains("max_call_depth    5\n"),
        "{}",
        read.stdout
    );
    assert!(
        read.stdout.contains("max_fan_out       none\n"),
        "{}",
        read.stdout
    );
    assert!(
        read.stdout.contains("word_search       false\n"),
        "{}",
        read.stdout
    );

    let policy = format!(
        r#"forbid(principal, action == Action::"open", resource) when {{ resource.name == "{}" }};"#,
        pair.callee.name
    );
    let saved = json_of(
        app,
        admin,
        &["policies", "set", "no-callee", "--policy", &policy],
    )
    .await;
    assert_eq!(saved["items"][0]["mode"], "dry_run");
    let check = ["policies", "check", &pair.caller.name, &pair.callee.name];
    let tried = run(app, admin, &check).await;
    assert_eq!(tried.stdout, "allowed  would refuse no-callee\n");
    let enforce = ["policies", "set", "no-callee", "--mode", "enforce"];
    json_of(app, admin, &enforce).await;
    let refused = json_of(app, admin, &check).await;
    assert_eq!(refused["allowed"], false);
    assert_eq!(refused["policies"], json!(["no-callee"]));
    let call = ["call", &pair.callee.name, "--text", "hi", "--wait", "0"];
    assert_eq!(run(app, &pair.caller.key, &call).await.code, 7);
    let removed = json_of(app, admin, &["policies", "remove", "no-callee"]).await;
    assert_eq!(removed["items"], json!([]));
    let listed = run(app, admin, &["policies", "list"]).await;
    assert_eq!(listed.stdout, "version 3\n");
    assert_eq!(json_of(app, admin, &check).await["allowed"], true);
}

async fn walk_signing_keys(app: &TestApp, admin: &str) {
    let operator = app.operator_key.as_str();
    let rotate = ["signing-keys", "rotate", "--purpose", "webhook-signing"];
    let refused = run(app, admin, &rotate).await;
    assert_eq!(
        refused.code, 7,
        "an admin may not rotate: {}",
        refused.stderr
    );
    let old = json_of(app, operator, &rotate).await;
    let new = json_of(app, operator, &rotate).await;
    assert_eq!(old["purpose"], "webhook-signing");
    let (old, new) = (old["kid"].as_str().unwrap(), new["kid"].as_str().unwrap());
    let listed = run(app, admin, &["signing-keys", "list"]).await;
    for kid in [old, new] {
        assert!(
            listed
                .stdout
                .contains(&format!("{kid}  webhook-signing  EdDSA")),
            "{}",
            listed.stdout
        );
    }
    let active = run(app, operator, &["signing-keys", "retire", new]).await;
    assert_eq!(active.code, 1, "the active key stays: {}", active.stderr);
    // Retired once no process may still sign with it (0 s here, plus 2 s for clocks).
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let retired = run(app, operator, &["signing-keys", "retire", old]).await;
    assert_eq!(retired.stdout, format!("{old}  webhook-signing  retired\n"));
    let listed = json_of(app, admin, &["signing-keys", "list"]).await;
    let kids: Vec<&str> = listed["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|key| key["kid"].as_str())
        .collect();
    assert!(kids.contains(&new) && !kids.contains(&old), "{kids:?}");
}

/// `--all` follows the cursor to the end: five tasks in pages of two and five agents' cards in
/// pages of two are each seen once, where one page shows two and names the next cursor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_follows_the_cursor_through_every_page_of_tasks_and_cards() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let mut opened = Vec::new();
    for n in 0..5 {
        let message = forgebench_tests::text_message(&format!("task {n}"));
        let reply = app
            .open_task(&pair.caller.key, &pair.callee.name, message, 0)
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        opened.push(reply.field("id"));
    }
    let search = ["tasks", "search", "--direction", "outbound", "--limit", "2"];
    let page = json_of(&app, &pair.caller.key, &search).await;
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    assert!(page["next_cursor"].is_string());
    let mut every = search.to_vec();
    every.extend(["--all", "--json"]);
    let all = run(&app, &pair.caller.key, &every).await;
    assert_eq!(all.code, 0, "{}", all.stderr);
    let mut found: Vec<String> = all
        .stdout
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    found.sort();
    opened.sort();
    assert_eq!(found, opened, "each task once");

    for name in ["agent-c", "agent-d", "agent-e"] {
        app.create_agent(&pair.tenant.admin_key, name).await;
    }
    let cards = ["cards", "list", "--limit", "2"];
    let page = json_of(&app, &pair.caller.key, &cards).await;
    assert_eq!(page["cards"].as_array().unwrap().len(), 2);
    let all = run(&app, &pair.caller.key, &[&cards[..], &["--all"]].concat()).await;
    assert_eq!(all.code, 0, "{}", all.stderr);
    let names: Vec<&str> = all
        .stdout
        .lines()
        .map(|line| line.split("  ").next().unwrap())
        .collect();
    let mut expected = vec![
        "agent-c",
        "agent-d",
        "agent-e",
        pair.caller.name.as_str(),
        pair.callee.name.as_str(),
    ];
    expected.sort_unstable();
    assert_eq!(names, expected, "every card once, by name");
}

/// `serve --exec`'s command reports progress by writing lines to fd 3: a text line and a JSON
/// line join the task's history as progress messages while it works; a flood of a thousand
/// lines is coalesced and bounded, its last line still reported before the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_command_reports_progress_on_its_fd_and_a_flood_is_bounded() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let canceled_flag = std::env::temp_dir().join(format!("forgebench-canceled-{}", uuid_like()));
    let exec = format!(
        r#"input=$(cat)
case "$input" in
*"cancel me"*)
  echo first >&3
  while [ ! -e '{flag}' ]; do sleep 0.1; done
  for i in 1 2 3 4 5; do echo "after $i" >&3; sleep 0.6; done
  echo done; exit 0;;
esac
echo reading >&3
sleep 1
echo '{{"step": 2}}' >&"$FORGEBENCH_PROGRESS_FD"
sleep 1
i=0
while [ $i -lt 1000 ]; do echo "line $i" >&3; i=$((i+1)); done
echo done"#,
        flag = canceled_flag.display()
    );
    let server = serve(&app, &pair.callee.key, &exec);
    let call = [
        "--json",
        "call",
        &pair.callee.name,
        "--text",
        "go",
        "--wait",
        "30",
    ];
    let called = run(&app, &pair.caller.key, &call).await;
    assert_eq!(called.code, 0, "{}", called.stderr);
    let task_id = called.json()["id"].as_str().unwrap().to_owned();
    let read = json_of(
        &app,
        &pair.caller.key,
        &["tasks", "get", &pair.callee.name, &task_id],
    )
    .await;
    assert_eq!(read["artifacts"][0]["parts"][0]["text"], "done");
    let mut progress: Vec<&Value> = read["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "agent")
        .collect();
    let answer = progress.pop().unwrap();
    assert_eq!(
        answer["parts"],
        json!([{"text": "done"}]),
        "the answer comes last"
    );
    assert_eq!(progress[0]["parts"], json!([{"text": "reading"}]));
    assert_eq!(progress[1]["parts"], json!([{"data": {"step": 2}}]));
    let flood = &progress[2..];
    assert!(
        !flood.is_empty() && flood.len() < 1000,
        "{} of the flood's lines reported",
        flood.len()
    );
    assert_eq!(
        flood.last().unwrap()["parts"],
        json!([{"text": "line 999"}]),
        "the newest line is reported before the answer"
    );
    // The caller cancels while the command works: the next line's report is refused (409)
    // and no later line is sent.
    let call = [
        "--json",
        "call",
        &pair.callee.name,
        "--text",
        "cancel me",
        "--wait",
        "0",
    ];
    let opened = run(&app, &pair.caller.key, &call).await;
    let canceled = opened.json()["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !app
        .get_task(&pair.caller.key, &pair.callee.name, &canceled)
        .await
        .text
        .contains("\"first\"")
    {
        assert!(Instant::now() < deadline, "the first line was reported");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let cancel = app
        .cancel(&pair.caller.key, &pair.callee.name, &canceled)
        .await;
    assert_eq!(cancel.status, 200, "{}", cancel.text);
    std::fs::write(&canceled_flag, b"").unwrap();
    let stopped = terminate(server).await;
    assert!(
        stopped.stderr.contains(&format!(
            "{} progress lines not reported",
            1000 - flood.len()
        )),
        "{}",
        stopped.stderr
    );
    let refused = stopped.stderr.matches("progress not reported:").count();
    assert_eq!(refused, 1, "{}", stopped.stderr);
    assert!(
        stopped
            .stderr
            .contains(&format!("task {canceled}: 4 progress lines not reported")),
        "{}",
        stopped.stderr
    );
    std::fs::remove_file(&canceled_flag).unwrap();
}

/// A config directory of the test's own holding `config`, with `mode`: its path.
fn config_home(config: &str, mode: u32) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let home = std::env::temp_dir().join(format!("forgebench-profiles-{}", uuid_like()));
    let file = home.join("forgebench").join("config.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, config).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
    home
}

/// `agents me` as the binary sees it with `home` as its config directory, `env` set and no
/// other URL or credential; its run.
async fn me_with(home: &std::path::Path, env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut command = Command::new(BINARY);
    command
        .args(args)
        .args(["--json", "agents", "me"])
        .env("XDG_CONFIG_HOME", home)
        .env_remove("FORGEBENCH_PROFILE")
        .env_remove("FORGEBENCH_URL")
        .env_remove("FORGEBENCH_API_KEY")
        .env_remove("FORGEBENCH_TOKEN_COMMAND")
        .envs(env.iter().copied())
        .kill_on_drop(true);
    finish(command).await
}

/// Profiles give the URL and the key where no flag or variable does: the default one, one named
/// with `--profile` or `FORGEBENCH_PROFILE` (the flag first); a variable's key or URL over the
/// profile's, a flag's over the variable's. A profile not in the file is a usage error naming
/// it; a file others may read is refused while it holds a key, without printing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_fill_in_what_flags_and_variables_leave_and_keys_stay_private() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (caller, callee) = (&pair.caller, &pair.callee);
    let config = format!(
        "[profiles.default]\nurl = \"{base}\"\nkey = \"{}\"\n\n\
         [profiles.callee]\nurl = \"{base}\"\nkey = \"{}\"\n\n\
         [profiles.nowhere]\nurl = \"http://127.0.0.1:9\"\nkey = \"{}\"\n",
        caller.key,
        callee.key,
        callee.key,
        base = app.base
    );
    let home = config_home(&config, 0o600);
    let me = |run: Run| {
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.json()["name"].as_str().unwrap().to_owned()
    };
    let callee_profile = [("FORGEBENCH_PROFILE", "callee")];
    assert_eq!(me(me_with(&home, &[], &[]).await), caller.name, "default");
    assert_eq!(
        me(me_with(&home, &[], &["--profile", "callee"]).await),
        callee.name
    );
    assert_eq!(me(me_with(&home, &callee_profile, &[]).await), callee.name);
    let flag_over_variable = me_with(&home, &callee_profile, &["--profile", "default"]).await;
    assert_eq!(me(flag_over_variable), caller.name);
    let key_variable = [("FORGEBENCH_API_KEY", callee.key.as_str())];
    assert_eq!(me(me_with(&home, &key_variable, &[]).await), callee.name);
    let key_flag = ["--key", caller.key.as_str()];
    assert_eq!(
        me(me_with(&home, &key_variable, &key_flag).await),
        caller.name
    );
    let url_variable = [("FORGEBENCH_URL", app.base.as_str())];
    let nowhere = ["--profile", "nowhere"];
    assert_eq!(
        me(me_with(&home, &url_variable, &nowhere).await),
        callee.name
    );

    let missing = me_with(&home, &[], &["--profile", "staging"]).await;
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    let said: Value = serde_json::from_str(missing.stderr.trim()).unwrap();
    let message = said["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("no profile staging in "), "{message}");
    assert!(message.ends_with("forgebench/config.toml"), "{message}");

    let exposed = config_home(&config, 0o644);
    let refused = me_with(&exposed, &[], &[]).await;
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("mode 644"), "{}", refused.stderr);
    assert!(refused.stderr.contains("chmod 600"), "{}", refused.stderr);
    assert!(
        !refused.stderr.contains(&caller.key),
        "the key is never printed"
    );
    let without_key = config_home(
        &format!("[profiles.default]\nurl = \"{}\"\n", app.base),
        0o644,
    );
    let url_only = me_with(&without_key, &key_variable, &[]).await;
    assert_eq!(
        me(url_only),
        callee.name,
        "a file without a key may be anyone's to read"
    );
    for dir in [home, exposed, without_key] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}
