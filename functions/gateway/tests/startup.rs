//! The one gateway binary picks its job from `FORGEBENCH_ROUTE` at cold start: a missing or
//! unknown name stops it with a log line that names the variable and the value, before it reads
//! any other setting; a known name gets past that check (and here, with no table configured,
//! stops on the next setting instead).

#![allow(
    clippy::expect_used,
    reason = "a test: a failed expect stops it with its message"
)]

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs the binary with only the given variables set, and waits (bounded) for it to exit.
fn run_gateway(variables: &[(&str, &str)]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gateway"))
        .env_clear()
        .envs(variables.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the gateway binary starts");
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > Duration::from_secs(30) {
            child.kill().expect("kill");
            panic!("the gateway did not stop on its configuration");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn logs(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn an_unknown_route_refuses_to_start_and_names_the_route() {
    let output = run_gateway(&[("FORGEBENCH_ROUTE", "open-tasks")]);
    assert!(!output.status.success());
    let logs = logs(&output);
    assert!(logs.contains("refusing to start"), "{logs}");
    assert!(logs.contains("FORGEBENCH_ROUTE"), "{logs}");
    assert!(logs.contains("open-tasks"), "{logs}");
}

#[test]
fn a_missing_route_refuses_to_start() {
    let output = run_gateway(&[]);
    assert!(!output.status.success());
    let logs = logs(&output);
    assert!(logs.contains("refusing to start"), "{logs}");
    assert!(logs.contains("FORGEBENCH_ROUTE is not set"), "{logs}");
}

#[test]
fn a_known_route_gets_past_the_route_check() {
    for route in ["open-task", "push-worker", "sweep-deadlines"] {
        let output = run_gateway(&[("FORGEBENCH_ROUTE", route)]);
        // No table is configured here, so the next setting stops it: not the route.
        assert!(!output.status.success(), "{route}");
        let logs = logs(&output);
        assert!(!logs.contains("refusing to start"), "{route}: {logs}");
        assert!(logs.contains("FORGEBENCH_TABLE"), "{route}: {logs}");
    }
}
