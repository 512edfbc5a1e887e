//! What one binding adds to the tenant's rules: call-tree limits of its own, and a contract (the
//! skills the caller may use on the callee, a rate, a concurrency and a daily quota). The
//! counting itself is the store's (one conditional write on the binding's use item); the rules
//! here say what is counted, which window a moment falls in and how long a refused caller waits.

use serde::{Deserialize, Serialize};

use super::call_tree::CallTreeLimits;

/// The most skills a contract may list: as many as an agent may have tools.
pub const MAX_CONTRACT_SKILLS: usize = 64;
/// The largest rate and concurrency a contract may set.
pub const MAX_CONTRACT_RATE: u32 = 10_000;
/// The largest daily quota a contract may set.
pub const MAX_DAILY_QUOTA: u32 = 1_000_000;

/// The longest skill id an open may name or a contract list: an agent's tool name fits in it.
pub const MAX_SKILL_CHARS: usize = 128;

/// Whether `skill` is a skill id an open may name: 1 to [`MAX_SKILL_CHARS`] characters.
pub fn is_skill_id(skill: &str) -> bool {
    !skill.is_empty() && skill.chars().count() <= MAX_SKILL_CHARS
}

/// A value given where a skill id belongs that is not one; each protocol words it for its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a skill id of 1 to {MAX_SKILL_CHARS} characters")]
pub struct NotASkillId;

/// The skill a request names in `value`: absent or `null` names none.
pub fn named_skill(value: Option<&serde_json::Value>) -> Result<Option<String>, NotASkillId> {
    match value {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(skill)) if is_skill_id(skill) => Ok(Some(skill.clone())),
        Some(_) => Err(NotASkillId),
    }
}

const MINUTE_MS: u64 = 60_000;
const DAY_MS: u64 = 86_400_000;

/// A binding's own call-tree limits; each `None` is the tenant's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BindingLimits {
    pub max_call_depth: Option<u32>,
    pub refuse_cycles: Option<bool>,
    pub max_fan_out: Option<u32>,
    pub max_open_in_tree: Option<u32>,
}

impl BindingLimits {
    /// The tenant's limits with this binding's in their place.
    pub fn applied_to(&self, tenant: &CallTreeLimits) -> CallTreeLimits {
        CallTreeLimits {
            max_call_depth: self.max_call_depth.unwrap_or(tenant.max_call_depth),
            refuse_cycles: self.refuse_cycles.unwrap_or(tenant.refuse_cycles),
            max_fan_out: self.max_fan_out.or(tenant.max_fan_out),
            max_open_in_tree: self.max_open_in_tree.or(tenant.max_open_in_tree),
            ..*tenant
        }
    }

    /// Whether these limits need every call of the tenant tracked: its path kept (to find a
    /// cycle) and its opens counted (to judge a count), whatever binding it went through.
    pub fn needs_tracking(&self) -> bool {
        self.refuse_cycles == Some(true)
            || self.max_fan_out.is_some()
            || self.max_open_in_tree.is_some()
    }
}

/// What a binding's caller may do on its callee. `None` is no bound.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contract {
    /// The callee's skills (its tools' names) the caller may name; `None` is any.
    pub skills: Option<Vec<String>>,
    /// Tasks opened in one UTC minute.
    pub rate_per_minute: Option<u32>,
    /// Tasks open (not finished) at once.
    pub max_concurrent: Option<u32>,
    /// Tasks opened in one UTC day.
    pub daily_quota: Option<u32>,
}

impl Contract {
    /// Whether an open naming `skill` (or none) may go through.
    pub fn allows_skill(&self, skill: Option<&str>) -> bool {
        match (&self.skills, skill) {
            (None, _) => true,
            (Some(skills), Some(skill)) => skills.iter().any(|allowed| allowed == skill),
            (Some(_), None) => false,
        }
    }

    /// Whether the binding's opens are counted: it has a rate, a quota or a concurrency.
    pub fn counts_use(&self) -> bool {
        self.rate_per_minute.is_some() || self.daily_quota.is_some() || self.counts_open()
    }

    /// Whether the binding's open tasks are counted.
    pub fn counts_open(&self) -> bool {
        self.max_concurrent.is_some()
    }
}

/// The windows a moment falls in: its UTC minute and day, numbered from the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UseWindows {
    pub minute: u64,
    pub day: u64,
}

impl UseWindows {
    pub fn at(now_ms: u64) -> UseWindows {
        UseWindows {
            minute: now_ms / MINUTE_MS,
            day: now_ms / DAY_MS,
        }
    }
}

/// A binding's use as counted: the windows of its last counted open, the opens in each, and its
/// open tasks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Use {
    pub minute: u64,
    pub minute_count: u64,
    pub day: u64,
    pub day_count: u64,
    pub open: u64,
}

impl Use {
    /// This use as seen in `now`'s windows: a window that has passed holds nothing.
    pub fn in_windows(&self, now: UseWindows) -> Use {
        Use {
            minute: now.minute,
            minute_count: if self.minute == now.minute {
                self.minute_count
            } else {
                0
            },
            day: now.day,
            day_count: if self.day == now.day {
                self.day_count
            } else {
                0
            },
            open: self.open,
        }
    }
}

/// Which bound of a contract an open would pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaExceeded {
    Rate { per_minute: u32 },
    Concurrency { max: u32 },
    Daily { quota: u32 },
}

impl QuotaExceeded {
    /// How long the caller waits before the bound may admit it, in whole seconds (at least 1).
    pub fn retry_after_seconds(&self, now_ms: u64) -> u64 {
        let until = |window_ms: u64| (window_ms - now_ms % window_ms).div_ceil(1_000).max(1);
        match self {
            QuotaExceeded::Rate { .. } => until(MINUTE_MS),
            QuotaExceeded::Concurrency { .. } => 1,
            QuotaExceeded::Daily { .. } => until(DAY_MS),
        }
    }

    /// What the caller is told.
    pub fn message(&self) -> String {
        match self {
            QuotaExceeded::Rate { per_minute } => {
                format!("the binding's rate of {per_minute} tasks a minute is reached")
            }
            QuotaExceeded::Concurrency { max } => {
                format!("the binding's {max} open tasks at once are reached")
            }
            QuotaExceeded::Daily { quota } => {
                format!("the binding's daily quota of {quota} tasks is reached")
            }
        }
    }
}

impl Contract {
    /// The bound `current` (in the windows of now) has reached, if any: the concurrency first,
    /// since it frees soonest, then the rate, then the day's quota.
    pub fn exceeded_by(&self, current: &Use) -> Option<QuotaExceeded> {
        let reached = |limit: Option<u32>, count: u64| limit.filter(|max| count >= u64::from(*max));
        if let Some(max) = reached(self.max_concurrent, current.open) {
            return Some(QuotaExceeded::Concurrency { max });
        }
        if let Some(per_minute) = reached(self.rate_per_minute, current.minute_count) {
            return Some(QuotaExceeded::Rate { per_minute });
        }
        reached(self.daily_quota, current.day_count).map(|quota| QuotaExceeded::Daily { quota })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_named_skill_is_a_short_nonempty_string_or_nothing() {
        assert_eq!(named_skill(None), Ok(None));
        assert_eq!(named_skill(Some(&json!(null))), Ok(None));
        assert_eq!(
            named_skill(Some(&json!("summarize"))),
            Ok(Some("summarize".into()))
        );
        let longest = "é".repeat(MAX_SKILL_CHARS);
        assert_eq!(
            named_skill(Some(&json!(longest))),
            Ok(Some(longest.clone()))
        );
        for refused in [
            json!(""),
            json!(7),
            json!(["a"]),
            json!(format!("{longest}x")),
        ] {
            assert_eq!(named_skill(Some(&refused)), Err(NotASkillId), "{refused}");
        }
    }

    #[test]
    fn a_binding_limit_replaces_the_tenants_and_none_keeps_it() {
        let tenant = CallTreeLimits {
            max_fan_out: Some(5),
            counts_since: 7,
            ..CallTreeLimits::default()
        };
        let own = BindingLimits {
            max_call_depth: Some(3),
            max_open_in_tree: Some(9),
            ..BindingLimits::default()
        };
        let applied = own.applied_to(&tenant);
        assert_eq!(applied.max_call_depth, 3);
        assert!(!applied.refuse_cycles);
        assert_eq!(applied.max_fan_out, Some(5));
        assert_eq!(applied.max_open_in_tree, Some(9));
        assert_eq!(applied.counts_since, 7);
        assert_eq!(BindingLimits::default().applied_to(&tenant), tenant);
        assert!(own.needs_tracking());
        let depth_only = BindingLimits {
            max_call_depth: Some(2),
            refuse_cycles: Some(false),
            ..BindingLimits::default()
        };
        assert!(!depth_only.needs_tracking());
    }

    #[test]
    fn skills_bound_only_a_contract_that_lists_them() {
        let open = Contract::default();
        assert!(open.allows_skill(None) && open.allows_skill(Some("any")));
        let listed = Contract {
            skills: Some(vec!["lookup".into()]),
            ..Contract::default()
        };
        assert!(listed.allows_skill(Some("lookup")));
        assert!(!listed.allows_skill(Some("refund")));
        assert!(!listed.allows_skill(None));
    }

    #[test]
    fn a_passed_window_holds_nothing_and_open_tasks_carry_over() {
        let now = UseWindows::at(3 * DAY_MS + 5 * MINUTE_MS + 1);
        let counted = Use {
            minute: now.minute - 1,
            minute_count: 9,
            day: now.day,
            day_count: 40,
            open: 2,
        };
        let current = counted.in_windows(now);
        assert_eq!(
            (current.minute_count, current.day_count, current.open),
            (0, 40, 2)
        );
        let yesterday = Use {
            day: now.day - 1,
            ..counted
        }
        .in_windows(now);
        assert_eq!(yesterday.day_count, 0);
    }

    #[test]
    fn each_bound_refuses_at_its_count_and_says_how_long_to_wait() {
        let contract = Contract {
            rate_per_minute: Some(2),
            max_concurrent: Some(3),
            daily_quota: Some(10),
            ..Contract::default()
        };
        let under = Use {
            minute_count: 1,
            day_count: 9,
            open: 2,
            ..Use::default()
        };
        assert_eq!(contract.exceeded_by(&under), None);
        let rate = Use {
            minute_count: 2,
            ..under
        };
        assert_eq!(
            contract.exceeded_by(&rate),
            Some(QuotaExceeded::Rate { per_minute: 2 })
        );
        let busy = Use { open: 3, ..rate };
        assert_eq!(
            contract.exceeded_by(&busy),
            Some(QuotaExceeded::Concurrency { max: 3 })
        );
        let spent = Use {
            day_count: 10,
            ..under
        };
        assert_eq!(
            contract.exceeded_by(&spent),
            Some(QuotaExceeded::Daily { quota: 10 })
        );

        let now = 2 * DAY_MS + 59 * MINUTE_MS + 59_500;
        assert_eq!(
            QuotaExceeded::Rate { per_minute: 2 }.retry_after_seconds(now),
            1
        );
        assert_eq!(
            QuotaExceeded::Rate { per_minute: 2 }.retry_after_seconds(now - 20_000),
            21
        );
        let to_midnight = QuotaExceeded::Daily { quota: 10 }.retry_after_seconds(now);
        assert_eq!(
            to_midnight,
            (DAY_MS - 59 * MINUTE_MS - 59_500).div_ceil(1_000)
        );
        assert_eq!(
            QuotaExceeded::Concurrency { max: 3 }.retry_after_seconds(now),
            1
        );
    }
}
