//! Exit codes: what a script may branch on.

use forgebench_sdk::TaskState;

/// Success; for `call` and `tasks get`, the task completed.
pub const SUCCESS: u8 = 0;
/// Any other error: the network, a refusal other than 401/403, a bad answer.
pub const ERROR: u8 = 1;
/// The command line was wrong (clap's own code).
pub const USAGE: u8 = 2;
/// The task failed.
pub const FAILED: u8 = 3;
/// The task asks a question (`input_required`).
pub const INPUT_REQUIRED: u8 = 4;
/// The task was canceled.
pub const CANCELED: u8 = 5;
/// The task is still `submitted` or `working` when the wait ran out.
pub const STILL_WORKING: u8 = 6;
/// Refused: `403` (`not_permitted`: no live binding to that callee; or `forbidden`).
pub const REFUSED: u8 = 7;
/// The key is missing, unknown or revoked, or the token was refused (`401`); or the token
/// command gave no token.
pub const UNAUTHENTICATED: u8 = 8;

/// The exit code of a task in `state`.
pub fn for_state(state: TaskState) -> u8 {
    match state {
        TaskState::Completed => SUCCESS,
        TaskState::Failed => FAILED,
        TaskState::InputRequired => INPUT_REQUIRED,
        TaskState::Canceled => CANCELED,
        TaskState::Submitted | TaskState::Working => STILL_WORKING,
        TaskState::Unknown => ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_final_state_has_its_own_code() {
        let codes = [
            for_state(TaskState::Completed),
            for_state(TaskState::Failed),
            for_state(TaskState::InputRequired),
            for_state(TaskState::Canceled),
            for_state(TaskState::Working),
            REFUSED,
            UNAUTHENTICATED,
            ERROR,
            USAGE,
        ];
        let distinct: std::collections::HashSet<u8> = codes.iter().copied().collect();
        assert_eq!(distinct.len(), codes.len());
        assert_eq!(for_state(TaskState::Submitted), STILL_WORKING);
    }

    #[test]
    fn the_readme_s_table_has_a_row_for_each_code_and_no_other() {
        let readme = include_str!("../README.md");
        let section = readme
            .split("## Exit codes")
            .nth(1)
            .and_then(|rest| rest.split("\n## ").next())
            .unwrap_or_default();
        let documented: Vec<u8> = section
            .lines()
            .filter_map(|line| line.strip_prefix("| "))
            .filter_map(|line| line.split(' ').next()?.parse().ok())
            .collect();
        let codes = [
            SUCCESS,
            ERROR,
            USAGE,
            FAILED,
            INPUT_REQUIRED,
            CANCELED,
            STILL_WORKING,
            REFUSED,
            UNAUTHENTICATED,
        ];
        assert_eq!(documented, codes);
    }
}
