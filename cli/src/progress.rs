//! `serve --exec`'s progress channel: the command writes lines to fd 3
//! ([`PROGRESS_FD`], named in `FORGEBENCH_PROGRESS_FD` too) and each becomes a progress report
//! on its task (ReportTaskProgress; the task stays working). A line that is a JSON object is
//! one data part, any other line one text part; empty lines are skipped.
//!
//! Bounded, so a runaway command cannot flood the gateway or `serve`: a line is cut at
//! [`MAX_LINE_BYTES`]; reports go at most one per [`MIN_INTERVAL`] (lines written faster are
//! coalesced: the newest waiting one is sent), at most [`MAX_REPORTS`] a task. The pipe is
//! always read, so a command never blocks writing to it. Once the command ends, what it wrote
//! last is still reported, before the task's reply.

use std::time::Duration;

use forgebench_sdk::{Client, Part};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The descriptor the command writes its progress lines to.
pub const PROGRESS_FD: i32 = 3;
/// The variable that names [`PROGRESS_FD`] to the command.
pub const PROGRESS_FD_VARIABLE: &str = "FORGEBENCH_PROGRESS_FD";
/// The longest line reported; the rest of a longer line is dropped.
pub const MAX_LINE_BYTES: usize = 2048;
/// The most progress reports one task's command makes.
pub const MAX_REPORTS: usize = 100;
/// The least time between two reports of one task.
pub const MIN_INTERVAL: Duration = Duration::from_millis(500);
/// How long the lines a command wrote before it ended are still read (a process it left
/// holding the pipe open is not waited for past it).
const DRAIN_AFTER_END: Duration = Duration::from_secs(2);

/// One task's progress channel while its command runs: the write end goes to the command,
/// the reader reports what comes through.
pub struct Progress {
    reader: JoinHandle<()>,
    ended: oneshot::Sender<()>,
}

/// A new pipe for `task_id`'s command: the end to give it as [`PROGRESS_FD`], and the
/// [`Progress`] that reports what it writes as `client`.
pub fn channel(
    client: &Client,
    task_id: &str,
) -> std::io::Result<(std::os::fd::OwnedFd, Progress)> {
    let (sender, receiver) = pipe::pipe()?;
    let write_end = sender.into_blocking_fd()?;
    let (ended, ended_signal) = oneshot::channel();
    let reporter = Reporter {
        client: client.clone(),
        task_id: task_id.to_owned(),
        sent: 0,
        coalesced: 0,
    };
    let reader = tokio::spawn(reporter.run(receiver, ended_signal));
    Ok((write_end, Progress { reader, ended }))
}

impl Progress {
    /// Called once the command ended: reads what it wrote last (for [`DRAIN_AFTER_END`] at
    /// most), reports it, and returns when done.
    pub async fn finish(self) {
        // The reader may have ended already (the pipe closed): nothing to tell it.
        let _ended = self.ended.send(());
        if let Err(error) = self.reader.await {
            eprintln!("forgebench: the progress reader stopped: {error}");
        }
    }
}

struct Reporter {
    client: Client,
    task_id: String,
    sent: usize,
    coalesced: usize,
}

impl Reporter {
    async fn run(mut self, receiver: pipe::Receiver, ended: oneshot::Receiver<()>) {
        let mut lines = BoundedLines::new(receiver);
        let mut waiting: Option<String> = None;
        let mut next_send = Instant::now();
        let drained = async {
            // A dropped sender (serve stopping the task) counts as ended too.
            let _ended = ended.await;
            tokio::time::sleep(DRAIN_AFTER_END).await;
        };
        let mut drained = std::pin::pin!(drained);
        loop {
            let may_send = waiting.is_some() && self.sent < MAX_REPORTS;
            tokio::select! {
                line = lines.next() => match line {
                    Some(line) if self.sent < MAX_REPORTS => {
                        if waiting.replace(line).is_some() {
                            self.coalesced += 1;
                        }
                    }
                    Some(_) => self.coalesced += 1,
                    None => break,
                },
                () = tokio::time::sleep_until(next_send), if may_send => {
                    if let Some(line) = waiting.take() {
                        self.report(&line).await;
                    }
                    next_send = Instant::now() + MIN_INTERVAL;
                }
                () = &mut drained => break,
            }
        }
        if let Some(line) = waiting.take().filter(|_| self.sent < MAX_REPORTS) {
            tokio::time::sleep_until(next_send).await;
            self.report(&line).await;
        }
        if self.coalesced > 0 {
            eprintln!(
                "forgebench: task {}: {} progress lines not reported (at most one each {} ms, \
                 {MAX_REPORTS} a task)",
                self.task_id,
                self.coalesced,
                MIN_INTERVAL.as_millis()
            );
        }
    }

    /// Reports `line`; after a refusal that would not pass (the task no longer working, a key
    /// refused) it reports no more.
    async fn report(&mut self, line: &str) {
        self.sent += 1;
        let reported = self
            .client
            .progress_parts(&self.task_id, parts_of(line))
            .await;
        if let Err(error) = reported {
            eprintln!(
                "forgebench: task {}: progress not reported: {error}",
                self.task_id
            );
            if !error.is_passing() {
                self.sent = MAX_REPORTS;
            }
        }
    }
}

/// A line's parts: a JSON object is one data part, anything else one text part.
pub fn parts_of(line: &str) -> Vec<Part> {
    match serde_json::from_str::<Value>(line) {
        Ok(value @ Value::Object(_)) => vec![Part::Data(value)],
        _ => vec![Part::Text(line.to_owned())],
    }
}

/// The lines of a pipe, each cut at [`MAX_LINE_BYTES`], empty ones skipped, read in chunks so
/// a line without end never grows past its bound.
struct BoundedLines {
    receiver: pipe::Receiver,
    line: Vec<u8>,
    chunk: Vec<u8>,
    at: usize,
    closed: bool,
}

impl BoundedLines {
    fn new(receiver: pipe::Receiver) -> BoundedLines {
        BoundedLines {
            receiver,
            line: Vec::new(),
            chunk: Vec::new(),
            at: 0,
            closed: false,
        }
    }

    /// The next line, or `None` once the pipe is closed (its last line without a newline
    /// counts). Cancel-safe: what was read stays for the next call.
    async fn next(&mut self) -> Option<String> {
        loop {
            while self.at < self.chunk.len() {
                let byte = self.chunk[self.at];
                self.at += 1;
                if byte == b'\n' {
                    if let Some(line) = self.take_line() {
                        return Some(line);
                    }
                } else if self.line.len() < MAX_LINE_BYTES {
                    self.line.push(byte);
                }
            }
            if self.closed {
                return self.take_line();
            }
            // Into a buffer of its own: `read` is cancel-safe (nothing read when another
            // branch wins), and the state changes only once it returned.
            let mut buffer = [0u8; 8192];
            match self.receiver.read(&mut buffer).await {
                Ok(0) | Err(_) => self.closed = true,
                Ok(read) => {
                    self.chunk.clear();
                    self.chunk.extend_from_slice(&buffer[..read]);
                    self.at = 0;
                }
            }
        }
    }

    fn take_line(&mut self) -> Option<String> {
        let line = String::from_utf8_lossy(&self.line)
            .trim_end_matches('\r')
            .trim()
            .to_owned();
        self.line.clear();
        (!line.is_empty()).then_some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_json_object_is_data_and_anything_else_text() {
        assert_eq!(
            parts_of(r#"{"step": 2, "of": 3}"#),
            vec![Part::Data(json!({"step": 2, "of": 3}))]
        );
        assert_eq!(parts_of("[1, 2]"), vec![Part::Text("[1, 2]".into())]);
        assert_eq!(parts_of("reading"), vec![Part::Text("reading".into())]);
    }

    #[tokio::test]
    async fn lines_are_cut_at_their_bound_and_empty_ones_skipped() {
        use tokio::io::AsyncWriteExt;
        let (mut sender, receiver) = pipe::pipe().unwrap();
        let long = "x".repeat(MAX_LINE_BYTES * 3);
        let written = format!("first\r\n\n   \n{long}\nlast");
        tokio::spawn(async move {
            sender.write_all(written.as_bytes()).await.unwrap();
        });
        let mut lines = BoundedLines::new(receiver);
        assert_eq!(lines.next().await.as_deref(), Some("first"));
        assert_eq!(
            lines.next().await.map(|line| line.len()),
            Some(MAX_LINE_BYTES)
        );
        assert_eq!(lines.next().await.as_deref(), Some("last"));
        assert_eq!(lines.next().await, None);
    }

    #[tokio::test]
    async fn a_read_given_up_loses_and_repeats_nothing() {
        use tokio::io::AsyncWriteExt;
        let (mut sender, receiver) = pipe::pipe().unwrap();
        let mut lines = BoundedLines::new(receiver);
        sender.write_all(b"one\n").await.unwrap();
        assert_eq!(lines.next().await.as_deref(), Some("one"));
        let nothing_yet = tokio::time::timeout(Duration::from_millis(20), lines.next()).await;
        assert!(nothing_yet.is_err(), "no line was written yet");
        sender.write_all(b"two\n").await.unwrap();
        drop(sender);
        assert_eq!(lines.next().await.as_deref(), Some("two"));
        assert_eq!(lines.next().await, None);
    }
}
