//! `serve --exec`: one claimed task through a command. The task (JSON) goes to the command's
//! stdin; its stdout becomes the reply; a non-zero exit, a run past `--timeout` or more than
//! [`MAX_OUTPUT_BYTES`] on stdout fails the task. The command runs in a process group of its
//! own, with an allow-list of `serve`'s environment, and may report progress on fd 3
//! ([`crate::progress`]). The command's stderr is
//! the serving side's own: it goes to `serve`'s stderr, never to the calling agent (it may
//! hold paths, environment dumps, stack traces). A command that wants the caller to know why
//! prints `{"state": "failed", "error": "..."}` on stdout.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use command_fds::{CommandFdExt, FdMapping};
use forgebench_sdk::{Client, Task, TaskReply, API_KEY_VARIABLE};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::progress::{self, PROGRESS_FD, PROGRESS_FD_VARIABLE};
use crate::token::TOKEN_COMMAND_VARIABLE;

/// The most of a failed command's stderr `serve` prints (its end, where the reason usually is).
pub const MAX_ERROR_CHARS: usize = 4096;

/// The most a command may print on stdout: the reply it stands for must fit in a task anyway.
pub const MAX_OUTPUT_BYTES: usize = 4 * 1024 * 1024;

/// The most of a command's stderr kept (its end) while it runs.
const MAX_STDERR_BYTES: usize = 64 * 1024;

/// The variables of `serve`'s environment every command gets; others only when named with
/// `--pass-env` (the serving agent's key, tokens and any other secret stay out by default).
pub const PASSED_ALWAYS: [&str; 10] = [
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
];

/// What `serve --exec` holds each command to.
#[derive(Debug, Clone)]
pub struct ExecLimits {
    /// How long one task's command may run; past it its process group is killed and the task
    /// fails.
    pub timeout: Duration,
    /// Variables of `serve`'s environment passed on beyond [`PASSED_ALWAYS`].
    pub pass_env: Vec<String>,
}

/// How a command's run ended.
enum Ran {
    Exited {
        status: ExitStatus,
        stdout: Vec<u8>,
        stderr: Vec<u8>,
    },
    TimedOut,
    TooMuchOutput,
}

/// Runs `command` with `sh -c` on `task` under `limits` and reads its reply. Never errors: a
/// command that cannot be started, exits non-zero, runs past its time or prints past
/// [`MAX_OUTPUT_BYTES`] fails the task.
pub async fn answer_with_command(
    client: &Client,
    command: &str,
    task: &Task,
    limits: &ExecLimits,
) -> TaskReply {
    match run(client, command, task, limits).await {
        Ok(Ran::Exited { status, stdout, .. }) if status.success() => reply_from_stdout(&stdout),
        Ok(Ran::Exited { status, stderr, .. }) => failure_from(status, &stderr, task),
        Ok(Ran::TimedOut) => TaskReply::fail(format!(
            "the command ran past its {} s and was stopped",
            limits.timeout.as_secs()
        )),
        Ok(Ran::TooMuchOutput) => TaskReply::fail(format!(
            "the command printed more than {MAX_OUTPUT_BYTES} bytes and was stopped"
        )),
        Err(error) => TaskReply::fail(format!("the command could not be run: {error}")),
    }
}

/// The command in a process group of its own (a Ctrl-C at the terminal reaches `serve`, which
/// lets the tasks in hand finish, not the commands), with only the environment `limits` pass,
/// the task's ids and its progress channel ([`crate::progress`]). Its whole group is killed
/// when it ends, times out or prints too much; what it reported last goes before the reply.
async fn run(
    client: &Client,
    command: &str,
    task: &Task,
    limits: &ExecLimits,
) -> std::io::Result<Ran> {
    let input = serde_json::to_vec(task)?;
    let (progress_end, progress) = progress::channel(client, &task.id)?;
    // Built and dropped here: the command holds the pipe's write end until it is dropped, and
    // the reader sees the pipe close only once no one else holds it.
    let mut child = command_for(command, task, limits, progress_end)?.spawn()?;
    let group = child
        .id()
        .and_then(|id| rustix::process::Pid::from_raw(id.try_into().ok()?));
    if let Some(mut stdin) = child.stdin.take() {
        // Written beside the wait, so a command that answers before reading all never blocks.
        tokio::spawn(async move {
            // A command that does not read its stdin closes the pipe: not an error.
            let _ignored = stdin.write_all(&input).await;
        });
    }
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let ran = tokio::time::timeout(limits.timeout, async {
        let read = tokio::try_join!(
            read_at_most(stdout, MAX_OUTPUT_BYTES),
            read_tail(stderr, MAX_STDERR_BYTES)
        );
        match read {
            Ok((Some(stdout), stderr)) => Ok(Ran::Exited {
                status: child.wait().await?,
                stdout,
                stderr,
            }),
            Ok((None, _)) => Ok(Ran::TooMuchOutput),
            Err(error) => Err(error),
        }
    })
    .await
    .unwrap_or(Ok(Ran::TimedOut));
    if let Some(group) = group {
        // What the command left running goes with it (gone already: nothing to do).
        let _gone = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
    progress.finish().await;
    ran
}

/// `sh -c command` as [`run`] starts it; `progress_end` becomes its fd 3.
fn command_for(
    command: &str,
    task: &Task,
    limits: &ExecLimits,
    progress_end: std::os::fd::OwnedFd,
) -> std::io::Result<Command> {
    let mut child = Command::new("sh");
    child.arg("-c").arg(command).env_clear();
    // The serving agent's key, or the way to its tokens, is never the command's to use or leak,
    // even when named.
    let secret = |name: &&str| *name == API_KEY_VARIABLE || *name == TOKEN_COMMAND_VARIABLE;
    let passed = limits.pass_env.iter().map(String::as_str);
    let names = PASSED_ALWAYS.iter().copied().chain(passed);
    for name in names.filter(|name| !secret(name)) {
        if let Some(value) = std::env::var_os(name) {
            child.env(name, value);
        }
    }
    let progress = FdMapping {
        parent_fd: progress_end,
        child_fd: PROGRESS_FD,
    };
    child
        .fd_mappings(vec![progress])
        .map_err(std::io::Error::other)?;
    child
        .env("FORGEBENCH_TASK_ID", &task.id)
        .env("FORGEBENCH_CONTEXT_ID", &task.context_id)
        .env("FORGEBENCH_CALL_ID", task.call_id().unwrap_or_default())
        .env(PROGRESS_FD_VARIABLE, PROGRESS_FD.to_string())
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    Ok(child)
}

/// All of `pipe`, or `None` once it passes `max` bytes.
async fn read_at_most(
    pipe: Option<impl AsyncRead + Unpin>,
    max: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut read = Vec::new();
    let Some(pipe) = pipe else {
        return Ok(Some(read));
    };
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    pipe.take(limit).read_to_end(&mut read).await?;
    Ok((read.len() <= max).then_some(read))
}

/// The last `max` bytes of `pipe`, read to its end.
async fn read_tail(pipe: Option<impl AsyncRead + Unpin>, max: usize) -> std::io::Result<Vec<u8>> {
    let mut kept = Vec::new();
    let Some(mut pipe) = pipe else {
        return Ok(kept);
    };
    let mut chunk = [0u8; 8192];
    loop {
        let n = pipe.read(&mut chunk).await?;
        if n == 0 {
            return Ok(kept);
        }
        kept.extend_from_slice(&chunk[..n]);
        if kept.len() > max {
            kept.drain(..kept.len() - max);
        }
    }
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
fn failure_from(status: ExitStatus, stderr: &[u8], task: &Task) -> TaskReply {
    let stderr = String::from_utf8_lossy(stderr);
    let stderr = stderr.trim();
    if !stderr.is_empty() {
        let skip = stderr.chars().count().saturating_sub(MAX_ERROR_CHARS);
        let tail: String = stderr.chars().skip(skip).collect();
        eprintln!("task {}: the command failed ({status}): {tail}", task.id);
    }
    TaskReply::fail(format!("the command failed ({status})"))
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
