//! What may follow what in a task's life: every write that changes a task's state (or acts on a
//! task in a state), with the states it may start from and those it may leave. The store builds
//! each such write's condition on the state, and the state it sets, from this table
//! (`store/tasks.rs`: `conditioned` and `target`), so the state machine is written once.

use super::TaskState;
use TaskState::{Canceled, Completed, Failed, InputRequired, Submitted, Working};

/// One kind of write on a task's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transition {
    /// A pull callee takes a queued task: a new one, or one the caller answered a question of,
    /// which waits on the queue `working`.
    Claim,
    /// A claim undone before anyone saw it (its answer could not be sent): the state before it.
    Unclaim,
    /// A queued task that no claim can read is failed in its place on the queue.
    FailUnclaimable,
    /// The push worker takes a delivery attempt's lease.
    Lease,
    /// The push worker gives an attempt's lease back or lets it lapse for a retry.
    Release,
    /// A push callee answered `working`: it finishes through the result route.
    Accept,
    /// The callee answers: a result, a failure, or a question.
    Answer,
    /// The callee reports progress.
    Progress,
    /// The caller answers the callee's question.
    Reply,
    /// The caller cancels.
    Cancel,
    /// The claim deadline passed.
    Expire,
    /// A push task whose delivery cannot succeed fails.
    FailDelivery,
    /// A push task's waiting delivery is made due now with a fresh retry budget (a replay or a
    /// redrive), or later (a delivery held back for long, parked on the outbox); its state
    /// stays.
    Redeliver,
}

impl Transition {
    /// Every transition, for checks over the whole table.
    pub const ALL: [Transition; 13] = [
        Transition::Claim,
        Transition::Unclaim,
        Transition::FailUnclaimable,
        Transition::Lease,
        Transition::Release,
        Transition::Accept,
        Transition::Answer,
        Transition::Progress,
        Transition::Reply,
        Transition::Cancel,
        Transition::Expire,
        Transition::FailDelivery,
        Transition::Redeliver,
    ];

    /// The states the task must be in for the write to apply.
    pub const fn from(self) -> &'static [TaskState] {
        match self {
            Transition::Claim | Transition::FailUnclaimable | Transition::Lease => {
                &[Submitted, Working]
            }
            Transition::FailDelivery | Transition::Redeliver => &[Submitted, Working],
            Transition::Unclaim
            | Transition::Release
            | Transition::Accept
            | Transition::Answer
            | Transition::Progress
            | Transition::Expire => &[Working],
            Transition::Reply => &[InputRequired],
            Transition::Cancel => &TaskState::OPEN,
        }
    }

    /// The states the write may leave the task in.
    pub const fn to(self) -> &'static [TaskState] {
        match self {
            Transition::Claim
            | Transition::Lease
            | Transition::Release
            | Transition::Accept
            | Transition::Progress
            | Transition::Reply => &[Working],
            Transition::Unclaim | Transition::Redeliver => &[Submitted, Working],
            Transition::FailUnclaimable | Transition::Expire | Transition::FailDelivery => {
                &[Failed]
            }
            Transition::Answer => &[Completed, Failed, InputRequired],
            Transition::Cancel => &[Canceled],
        }
    }

    /// Whether the write may start from a task in `state`.
    pub fn starts_from(self, state: TaskState) -> bool {
        self.from().contains(&state)
    }

    /// The state the write leaves a task in: its one target, or `asked` (a callee's answer,
    /// the state before an undone claim) when the table lets it leave the task there.
    pub fn target(self, asked: Option<TaskState>) -> Option<TaskState> {
        match (self.to(), asked) {
            ([only], None) => Some(*only),
            (targets, Some(asked)) if targets.contains(&asked) => Some(asked),
            _ => None,
        }
    }

    /// Whether this write may move a task from `from` to `to`.
    pub fn allows(self, from: TaskState, to: TaskState) -> bool {
        self.from().contains(&from) && self.to().contains(&to)
    }
}

/// Whether any write may move a task from `from` to `to` (staying in a state included).
pub fn may_follow(from: TaskState, to: TaskState) -> bool {
    Transition::ALL
        .iter()
        .any(|transition| transition.allows(from, to))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_is_the_table_s_one_state_or_an_asked_state_the_table_allows() {
        assert_eq!(Transition::Cancel.target(None), Some(Canceled));
        assert_eq!(Transition::Claim.target(None), Some(Working));
        assert_eq!(Transition::Expire.target(Some(Failed)), Some(Failed));
        assert_eq!(
            Transition::Answer.target(None),
            None,
            "an answer names its state"
        );
        assert_eq!(
            Transition::Answer.target(Some(InputRequired)),
            Some(InputRequired)
        );
        assert_eq!(Transition::Answer.target(Some(Canceled)), None);
        assert_eq!(Transition::Expire.target(Some(Completed)), None);
        assert_eq!(Transition::Unclaim.target(Some(Submitted)), Some(Submitted));
    }

    #[test]
    fn the_state_machine_is_this_table() {
        // Rows: from; columns: to, in `TaskState::ALL` order.
        let expected = [
            (Submitted, [true, true, false, false, true, true]),
            (Working, [true, true, true, true, true, true]),
            (InputRequired, [false, true, false, false, false, true]),
            (Completed, [false; 6]),
            (Failed, [false; 6]),
            (Canceled, [false; 6]),
        ];
        for (from, row) in expected {
            for (to, allowed) in TaskState::ALL.iter().zip(row) {
                assert_eq!(may_follow(from, *to), allowed, "{from:?} -> {to:?}");
            }
        }
    }

    #[test]
    fn a_final_state_is_final_and_only_the_callee_or_the_caller_ends_a_task() {
        for transition in Transition::ALL {
            for from in transition.from() {
                assert!(
                    TaskState::OPEN.contains(from),
                    "{transition:?} starts from {from:?}"
                );
            }
            assert!(!transition.to().is_empty(), "{transition:?} leads nowhere");
        }
        let ends = |state: TaskState| -> Vec<Transition> {
            Transition::ALL
                .into_iter()
                .filter(|transition| transition.to().contains(&state))
                .collect()
        };
        assert_eq!(ends(Completed), [Transition::Answer]);
        assert_eq!(ends(Canceled), [Transition::Cancel]);
        assert_eq!(
            ends(Failed),
            [
                Transition::FailUnclaimable,
                Transition::Answer,
                Transition::Expire,
                Transition::FailDelivery
            ]
        );
    }

    #[test]
    fn only_the_caller_s_reply_leaves_a_question_and_a_cancel_works_from_every_open_state() {
        let leaving: Vec<Transition> = Transition::ALL
            .into_iter()
            .filter(|transition| transition.from().contains(&InputRequired))
            .collect();
        assert_eq!(leaving, [Transition::Reply, Transition::Cancel]);
        for state in TaskState::OPEN {
            assert!(Transition::Cancel.allows(state, Canceled));
        }
    }
}
