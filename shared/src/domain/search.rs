//! Task search (`GET /v1/tasks`): the query, its cursor, and where a task stands in a search.
//!
//! Results are ordered by position: the task's creation, newest first, then the task id; a
//! task's position never moves. The first page fixes the search's moment, which its cursor
//! carries: later pages hold the tasks created at or before it, below the previous page's last
//! one, so the pages split one fixed ordering and no task is shown twice or skipped, however
//! tasks change between pages. Each task is judged by the filters as it is when its page is
//! read ([`SearchFilters::place_by_creation`]).

use super::clock::{self, Timestamp};
pub use super::cursor::{Cursor, Position};
use super::events::Change;
use super::ids::{AgentId, ContextId, TenantId};
use super::task::{Task, TaskState};
use super::words::QueryWords;

/// The largest page, and the one given when `limit` is not.
pub const MAX_LIMIT: usize = 100;
pub const DEFAULT_LIMIT: usize = 50;

/// Which of an agent's tasks a search looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Sent to the agent (it is the callee).
    Inbound,
    /// Sent by the agent (it is the caller).
    Outbound,
    Both,
}

/// One side of an agent's tasks, each read from its own indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Inbound,
    Outbound,
}

impl Direction {
    pub fn parse(text: &str) -> Option<Direction> {
        Some(match text {
            "inbound" => Direction::Inbound,
            "outbound" => Direction::Outbound,
            "both" => Direction::Both,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Inbound => "inbound",
            Direction::Outbound => "outbound",
            Direction::Both => "both",
        }
    }

    pub fn sides(self) -> &'static [Side] {
        match self {
            Direction::Inbound => &[Side::Inbound],
            Direction::Outbound => &[Side::Outbound],
            Direction::Both => &[Side::Inbound, Side::Outbound],
        }
    }
}

/// A search's filters, all of which a task must meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchFilters {
    /// The tenant of the agent and of the search.
    pub tenant: TenantId,
    /// Whose tasks: the agent the key speaks for, or the one an admin or viewer named; `None`
    /// for every task of the tenant (an admin or viewer who names none).
    pub agent: Option<AgentId>,
    pub direction: Direction,
    pub state: Option<TaskState>,
    pub context_id: Option<ContextId>,
    pub words: Option<QueryWords>,
    /// Only tasks whose position is after this moment (formatted).
    pub since: Option<Timestamp>,
}

impl SearchFilters {
    /// Whether this search finds `task`: a task of its tenant, on the searched side of its
    /// agent when it has one (every task of the tenant when it has none).
    fn side_of(&self, task: &Task) -> bool {
        let Some(agent) = &self.agent else {
            return task.tenant_id == self.tenant;
        };
        task.tenant_id == self.tenant
            && self.direction.sides().iter().any(|side| match side {
                Side::Inbound => task.callee_agent_id == *agent,
                Side::Outbound => task.caller_agent_id == *agent,
            })
    }

    /// Whether `task`, in `state` with its latest change at `changed_at` (as of whatever
    /// moment the caller judges it), meets the filters (its words aside, which the store
    /// checks): on the searched side, in the searched state and conversation, changed after
    /// `since`.
    fn admits(&self, task: &Task, state: TaskState, changed_at: &str) -> bool {
        self.side_of(task)
            && self.state.is_none_or(|wanted| state == wanted)
            && self
                .context_id
                .as_ref()
                .is_none_or(|context| *context == task.context_id)
            && self.since.as_deref().is_none_or(|since| changed_at > since)
    }

    /// Where `task` stands in a search, when it belongs to it: by its creation,
    /// which never moves, judged as it is now.
    pub fn place_by_creation(&self, task: &Task) -> Option<Position> {
        self.admits(task, task.state, &task.changed_at())
            .then(|| Position {
                created_at: task.created_at.clone(),
                task_id: task.id.clone(),
            })
    }
}

/// The moment (formatted) of a logged change, from its microseconds.
fn moment_of(at: u64) -> Timestamp {
    let nanos = i128::from(at) * 1_000;
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .map(clock::format)
        .unwrap_or_default()
}

impl Task {
    /// The moment of the task's latest logged change, or its opening: its place in searches
    /// (the item's `changed_at`, which the indexes sort by, is always this).
    pub fn changed_at(&self) -> Timestamp {
        self.changes
            .iter()
            .rev()
            .find_map(|change| match change {
                Change::State { at, .. } => Some(moment_of(*at)),
                Change::Artifact { .. } => None,
            })
            .unwrap_or_else(|| self.created_at.clone())
    }

    /// [`Task::changed_at`] as it was before the latest logged change, which a claim that could
    /// not hand the task over takes back.
    pub fn changed_before_latest_change(&self) -> Timestamp {
        let mut earlier = self.clone();
        earlier.changes.pop();
        earlier.changed_at()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0b6c3f3e-7d39-4f57-9a57-1a8f4e1f2c11";

    fn task(changes: &[(TaskState, &str)]) -> Task {
        let mut task = crate::domain::events::tests::opened();
        task.id = ID.into();
        task.state = changes
            .last()
            .map_or(TaskState::Submitted, |(state, _)| *state);
        task.changes = changes
            .iter()
            .map(|(state, at)| Change::state(*state, false, at))
            .collect();
        task
    }

    fn filters(direction: Direction, state: Option<TaskState>) -> SearchFilters {
        SearchFilters {
            tenant: crate::domain::events::tests::opened().tenant_id,
            agent: Some("callee".into()),
            direction,
            state,
            context_id: None,
            words: None,
            since: None,
        }
    }

    #[test]
    fn a_task_is_placed_by_its_creation_and_judged_as_it_is_now() {
        let task = task(&[
            (TaskState::Working, "2026-12-01T10:00:01.000000Z"),
            (TaskState::Completed, "2026-12-01T10:00:05.000000Z"),
        ]);
        assert_eq!(task.changed_at(), "2026-12-01T10:00:05.000000Z");
        let completed = filters(Direction::Inbound, Some(TaskState::Completed));
        assert_eq!(
            completed.place_by_creation(&task),
            Some(Position {
                created_at: task.created_at.clone(),
                task_id: ID.into(),
            })
        );
        let working = filters(Direction::Inbound, Some(TaskState::Working));
        assert_eq!(working.place_by_creation(&task), None, "completed now");
        let outbound = filters(Direction::Outbound, None);
        assert_eq!(
            outbound.place_by_creation(&task),
            None,
            "the agent is the callee, not the caller"
        );
        let mut since = filters(Direction::Both, None);
        since.since = Some("2026-12-01T10:00:05.000000Z".into());
        assert_eq!(since.place_by_creation(&task), None, "since is strict");
        since.since = Some("2026-12-01T10:00:04.999999Z".into());
        assert!(since.place_by_creation(&task).is_some(), "changed after it");
    }

    #[test]
    fn without_an_agent_a_search_finds_every_task_of_its_tenant_and_none_else() {
        let task = task(&[(TaskState::Working, "2026-12-01T10:00:01.000000Z")]);
        let mut tenant_wide = filters(Direction::Inbound, Some(TaskState::Working));
        tenant_wide.agent = None;
        assert!(tenant_wide.place_by_creation(&task).is_some());
        tenant_wide.tenant = "another-tenant".into();
        assert_eq!(tenant_wide.place_by_creation(&task), None);
        let mut elsewhere = filters(Direction::Inbound, None);
        elsewhere.tenant = "another-tenant".into();
        assert_eq!(
            elsewhere.place_by_creation(&task),
            None,
            "an agent id of another tenant"
        );
    }

    #[test]
    fn a_cursor_reads_back_as_the_place_it_names() {
        let cursor = Cursor {
            snapshot: "2026-12-01T10:00:06.000000Z".into(),
            after: Position {
                created_at: "2026-12-01T10:00:01.000000Z".into(),
                task_id: ID.into(),
            },
        };
        assert_eq!(Cursor::decode(&cursor.encode()), Some(cursor));
        assert_eq!(Cursor::decode(""), None);
        assert_eq!(Cursor::decode("bm90LWpzb24"), None);
    }
}
