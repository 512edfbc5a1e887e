//! A task's change log: one entry per change a reader can see, in the order the changes were
//! made, written by the same store write that makes the change. It is the one source of the
//! task's update events (the REST event stream, A2A streams and A2A push notifications), so
//! every reader numbers the events alike: an event's number is its place in the log, from 1.
//!
//! Entries are small (`W1764585574123456`: a letter, then the change's moment in microseconds)
//! because they live in the task's item. A change that adds a message to the history logs an
//! upper-case letter and does not copy the message: the n-th such entry from the end is the
//! n-th message from the end of the history, which the same write appended. A result's
//! artifacts log one entry each (`a0`, `a1`, …) before the final state.
//!
//! How many entries a task can have is bounded by what else bounds it: one per message after
//! the opening one (at most [`MAX_TASK_MESSAGES`] − 1), one claim or accepted delivery each time
//! the task enters its callee's queue or a delivery (at its open and after each of the caller's
//! answers; a claim that could not hand the task over takes its entry back), its artifacts (at
//! most [`MAX_ARTIFACTS`]) and one final state: [`MAX_LOGGED_CHANGES`].

use super::clock;
use super::result::MAX_ARTIFACTS;
use super::state::{TaskState, MAX_TASK_MESSAGES};

/// The most entries any task's log can hold (see the module's comment).
pub const MAX_LOGGED_CHANGES: usize =
    (MAX_TASK_MESSAGES - 1) + MAX_TASK_MESSAGES / 2 + 1 + MAX_ARTIFACTS + 1;

/// One logged change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The task moved to `state` at `at` (microseconds since the epoch); `with_message` when the
    /// same write appended a message to its history.
    State {
        state: TaskState,
        with_message: bool,
        at: u64,
    },
    /// The result's artifact at `index` (the final state's entry follows).
    Artifact { index: usize },
}

fn state_letter(state: TaskState) -> char {
    match state {
        TaskState::Submitted => 's',
        TaskState::Working => 'w',
        TaskState::InputRequired => 'i',
        TaskState::Completed => 'c',
        TaskState::Failed => 'f',
        TaskState::Canceled => 'x',
    }
}

fn letter_state(letter: char) -> Option<TaskState> {
    Some(match letter {
        's' => TaskState::Submitted,
        'w' => TaskState::Working,
        'i' => TaskState::InputRequired,
        'c' => TaskState::Completed,
        'f' => TaskState::Failed,
        'x' => TaskState::Canceled,
        _ => return None,
    })
}

impl Change {
    /// The task moved to `state` at `now` (a stored timestamp), with or without a message.
    pub fn state(state: TaskState, with_message: bool, now: &str) -> Change {
        let at = clock::parse(now)
            .map(|moment| (moment.unix_timestamp_nanos() / 1_000).max(0) as u64)
            .unwrap_or(0);
        Change::State {
            state,
            with_message,
            at,
        }
    }

    /// The entries a callee's answer logs: its artifacts, then its state with its message.
    pub fn answer(state: TaskState, artifacts: usize, now: &str) -> Vec<Change> {
        (0..artifacts)
            .map(|index| Change::Artifact { index })
            .chain([Change::state(state, true, now)])
            .collect()
    }

    /// The entry as stored.
    pub fn encode(&self) -> String {
        match self {
            Change::State {
                state,
                with_message,
                at,
            } => {
                let letter = state_letter(*state);
                let letter = if *with_message {
                    letter.to_ascii_uppercase()
                } else {
                    letter
                };
                format!("{letter}{at}")
            }
            Change::Artifact { index } => format!("a{index}"),
        }
    }

    /// A stored entry; `None` for one this version cannot read.
    pub fn decode(entry: &str) -> Option<Change> {
        let mut chars = entry.chars();
        let letter = chars.next()?;
        let rest = chars.as_str();
        if letter == 'a' {
            return Some(Change::Artifact {
                index: rest.parse().ok()?,
            });
        }
        Some(Change::State {
            state: letter_state(letter.to_ascii_lowercase())?,
            with_message: letter.is_ascii_uppercase(),
            at: rest.parse().ok()?,
        })
    }

    pub(super) fn with_message(&self) -> bool {
        matches!(
            self,
            Change::State {
                with_message: true,
                ..
            }
        )
    }
}
