//! A task's states, how the callee receives it, and how many messages its history holds.

use serde::Serialize;

/// The most messages a task's history holds (the opening message, progress reports, answers).
pub const MAX_TASK_MESSAGES: usize = 500;

/// The history length up to which a progress report is taken: the last place is kept for the
/// answer, so a task full of progress can still be answered.
pub const MAX_HISTORY_BEFORE_ANSWER: usize = MAX_TASK_MESSAGES - 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Submitted,
    Working,
    InputRequired,
    Completed,
    Failed,
    Canceled,
}

impl TaskState {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Submitted => "submitted",
            TaskState::Working => "working",
            TaskState::InputRequired => "input_required",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Canceled => "canceled",
        }
    }

    pub fn parse(text: &str) -> Option<TaskState> {
        Some(match text {
            "submitted" => TaskState::Submitted,
            "working" => TaskState::Working,
            "input_required" => TaskState::InputRequired,
            "completed" => TaskState::Completed,
            "failed" => TaskState::Failed,
            "canceled" => TaskState::Canceled,
            _ => return None,
        })
    }

    /// Every state, from the first a task has to the final ones.
    pub const ALL: [TaskState; 6] = [
        TaskState::Submitted,
        TaskState::Working,
        TaskState::InputRequired,
        TaskState::Completed,
        TaskState::Failed,
        TaskState::Canceled,
    ];

    /// States the caller may still cancel.
    pub const OPEN: [TaskState; 3] = [
        TaskState::Submitted,
        TaskState::Working,
        TaskState::InputRequired,
    ];

    /// Whether the task is still open: not completed, failed or canceled.
    pub fn is_open(self) -> bool {
        TaskState::OPEN.contains(&self)
    }

    /// Whether a caller waiting on the task should keep waiting.
    pub fn is_pending(self) -> bool {
        matches!(self, TaskState::Submitted | TaskState::Working)
    }
}

/// How the callee receives its tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Delivery {
    Pull,
    Push,
}

impl Delivery {
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::Pull => "pull",
            Delivery::Push => "push",
        }
    }
}
