//! `serve --exec`: one claimed task through a command. The task (JSON) goes to the command's
//! stdin; its stdout becomes the reply; a non-zero exit fails the task. The command's stderr is
//! the serving side's own: it goes to `serve`'s stderr, never to the calling agent (it may
//! hold paths, environment dumps, stack traces). A command that wants the caller to know why
//! prints `{"state": "failed", "error": "..."}` on stdout.

use std::process::Stdio;

use forgebench_sdk::{Task, TaskReply, API_KEY_VARIABLE};

use crate::token::TOKEN_COMMAND_VARIABLE;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// The most of a failed command's stderr `serve` prints (its end, where the reason usually is).
pub const MAX_ERROR_CHARS: usize = 4096;

/// Runs `command` with `sh -c` on `task` and reads its reply. Never errors: a command that
/// cannot be started, or exits non-zero, fails the task.
pub async fn answer_with_command(command: &str, task: &Task) -> TaskReply {
    match run(command, task).await {
        Ok(output) if output.status.success() => reply_from_stdout(&output.stdout),
        Ok(output) => failure_from(&output, task),
        Err(error) => TaskReply::fail(format!("the command could not be run: {error}")),
    }
}

async fn run(command: &str, task: &Task) -> std::io::Result<std::process::Output> {
    let input = serde_json::to_vec(task)?;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        // The serving agent's key, or the way to its tokens, is not the command's to use or
        // leak.
        .env_remove(API_KEY_VARIABLE)
        .env_remove(TOKEN_COMMAND_VARIABLE)
        .env("FORGEBENCH_TASK_ID", &task.id)
        .env("FORGEBENCH_CONTEXT_ID", &task.context_id)
        .env("FORGEBENCH_CALL_ID", task.call_id().unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        // Written beside the wait, so a command that answers before reading all never blocks.
        tokio::spawn(async move {
            // A command that does not read its stdin closes the pipe: not an error.
            let _ignored = stdin.write_all(&input).await;
        });
    }
    child.wait_with_output().await
}

/// The reply a successful command's stdout stands for, by the push path's rules: empty is
/// `completed` with no artifacts; JSON follows [`TaskReply::from_json`] (an object with
/// `state` or `artifacts` is a TaskResultIn, any other JSON one data part); anything else is
/// one text part (without its final newline).
pub fn reply_from_stdout(stdout: &[u8]) -> TaskReply {
    let text = String::from_utf8_lossy(stdout);
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return TaskReply::done();
    }
    match serde_json::from_str(trimmed) {
        Ok(value) => TaskReply::from_json(value).unwrap_or_else(|error| {
            TaskReply::fail(format!(
                "the command's reply is not a TaskResultIn: {error}"
            ))
        }),
        Err(_) => TaskReply::done().text(text.trim_end_matches(['\n', '\r'])),
    }
}

/// A failed command: the task fails with its exit status only; its stderr (the end of it) is
/// printed here, for whoever runs `serve`.
fn failure_from(output: &std::process::Output, task: &Task) -> TaskReply {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stderr = stderr.trim();
    if !stderr.is_empty() {
        let skip = stderr.chars().count().saturating_sub(MAX_ERROR_CHARS);
        let tail: String = stderr.chars().skip(skip).collect();
        eprintln!(
            "task {}: the command failed ({}): {tail}",
            task.id, output.status
        );
    }
    TaskReply::fail(format!("the command failed ({})", output.status))
}

#[cfg(test)]
mod tests {
    use super::*;
    use forgebench_sdk::TaskState;
    use serde_json::json;

    #[test]
    fn plain_text_is_one_text_part_without_its_newline() {
        assert_eq!(
            reply_from_stdout(b"hello\nworld\n"),
            TaskReply::done().text("hello\nworld")
        );
    }

    #[test]
    fn a_result_object_is_taken_as_it_is() {
        let reply = reply_from_stdout(br#"{"state": "failed", "error": "no"}"#);
        assert_eq!(reply, TaskReply::fail("no"));
    }

    #[test]
    fn other_json_is_one_data_part_and_empty_output_completes() {
        let reply = reply_from_stdout(br#"{"category": "software"}"#);
        assert_eq!(
            reply,
            TaskReply::done().data(json!({"category": "software"}))
        );
        assert_eq!(reply_from_stdout(b"  \n").state, TaskState::Completed);
    }

    #[test]
    fn a_result_object_of_the_wrong_shape_fails_the_task() {
        let reply = reply_from_stdout(br#"{"state": 5}"#);
        assert_eq!(reply.state, TaskState::Failed);
    }
}
