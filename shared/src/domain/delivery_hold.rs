//! A callee's hold on its push deliveries as the sweeper reads it, and what a sweep makes of it
//! (docs/reliability.md, "Fair share in the push worker"). A push worker marks the hold
//! (`push_held_until`) when its tenant's breaker holds the callee's receiver back; the parked
//! backlog then comes back one trial at a time: once the hold has ended, one sweep starts a
//! trial (the mark moved to the trial's end, `push_trial_until` the same moment) and sends one
//! delivery, the rest waiting. A trial that fails has a worker mark a later hold; one that the
//! trial's end finds unmarked went through, and the hold ends: the rest are sent.

/// How long a trial's delivery has to fail and have a worker mark a new hold before the sweeper
/// takes it as gone through: past the longest POST (10 s), the queue's and a worker's time.
pub const TRIAL_WINDOW_SECONDS: u64 = 30;

/// The marks on a callee's agent item (seconds since the Unix epoch).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeliveryHold {
    /// Until when the callee's deliveries are held back.
    pub held_until: Option<u64>,
    /// The end of the trial a sweep started, when it did.
    pub trial_until: Option<u64>,
    /// The task whose delivery is that trial: another sweep leaves its entry alone.
    pub trial_task: Option<String>,
}

/// A hold at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldAt {
    /// No hold: deliveries go as usual.
    Free,
    /// A hold (or a trial) stands until then: parked deliveries wait that long.
    Stands(u64),
    /// The trial that ended then was not followed by a new hold: it went through.
    TrialPassed(u64),
    /// The hold that ended then had no trial since: one delivery goes as a trial.
    Ended(u64),
}

impl DeliveryHold {
    pub fn at(&self, now: u64) -> HoldAt {
        match self.held_until {
            None => HoldAt::Free,
            Some(until) if until > now => HoldAt::Stands(until),
            Some(until) if self.trial_until == Some(until) => HoldAt::TrialPassed(until),
            Some(until) => HoldAt::Ended(until),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(held_until: Option<u64>, trial_until: Option<u64>) -> DeliveryHold {
        DeliveryHold {
            held_until,
            trial_until,
            trial_task: None,
        }
    }

    #[test]
    fn a_hold_stands_until_its_end_then_asks_for_one_trial() {
        assert_eq!(hold(None, None).at(1_000), HoldAt::Free);
        assert_eq!(hold(Some(1_100), None).at(1_000), HoldAt::Stands(1_100));
        assert_eq!(hold(Some(1_100), None).at(1_100), HoldAt::Ended(1_100));
    }

    #[test]
    fn a_trial_stands_for_its_window_and_passes_unless_a_new_hold_was_marked() {
        let trial = hold(Some(1_130), Some(1_130));
        assert_eq!(trial.at(1_100), HoldAt::Stands(1_130));
        assert_eq!(trial.at(1_130), HoldAt::TrialPassed(1_130));
        // The trial failed: a worker marked a later hold, which stands, then ends.
        let failed = hold(Some(1_190), Some(1_130));
        assert_eq!(failed.at(1_150), HoldAt::Stands(1_190));
        assert_eq!(failed.at(1_190), HoldAt::Ended(1_190));
    }
}
