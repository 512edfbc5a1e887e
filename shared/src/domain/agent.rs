//! Agents: their names, how routes refer to them, their lifecycle status.

use super::clock::Timestamp;
use serde::Serialize;
use uuid::Uuid;

use super::ids::{AgentId, MemberId, TenantId};
use super::Invalid;

/// Names that are route segments and so can never be agent names.
pub const RESERVED_NAMES: [&str; 2] = ["me", "cards"];

/// Default time a callee has to answer a claimed task before it fails.
pub const DEFAULT_CLAIM_TIMEOUT_SECONDS: u64 = 15 * 60;
/// Bounds of the per-agent claim deadline.
pub const CLAIM_TIMEOUT_RANGE: std::ops::RangeInclusive<u64> = 1..=24 * 60 * 60;

/// An agent name: `[a-z0-9][a-z0-9-]{0,62}`, not reserved, never a UUID. Names never change, so
/// anything keyed by a name stays valid for the agent's whole life.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct AgentName(String);

impl AgentName {
    /// `text` if it has a name's shape (`[a-z0-9][a-z0-9-]{0,62}`), reserved or not.
    pub fn shaped(text: &str) -> Option<&str> {
        let bytes = text.as_bytes();
        let shape_ok = !bytes.is_empty()
            && bytes.len() <= 63
            && (bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
        shape_ok.then_some(text)
    }

    pub fn parse(text: &str) -> Result<AgentName, Invalid> {
        if AgentName::shaped(text).is_none() {
            return Err(Invalid::new(
                "name must match [a-z0-9][a-z0-9-]{0,62}: lowercase letters, digits and dashes",
            ));
        }
        if RESERVED_NAMES.contains(&text) {
            return Err(Invalid(format!("name \"{text}\" is reserved")));
        }
        if Uuid::parse_str(text).is_ok() {
            return Err(Invalid::new(
                "name must not be a UUID: ids and names share routes",
            ));
        }
        Ok(AgentName(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// How a route names an agent: by its permanent id or by its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentRef {
    Id(Uuid),
    Name(AgentName),
    /// A segment that can be neither; no agent answers to it.
    Unknown,
}

impl AgentRef {
    pub fn parse(segment: &str) -> AgentRef {
        if let Ok(id) = Uuid::parse_str(segment) {
            return AgentRef::Id(id);
        }
        match AgentName::parse(segment) {
            Ok(name) => AgentRef::Name(name),
            Err(_) => AgentRef::Unknown,
        }
    }

    /// Whether this reference names `agent` (by id or by name).
    pub fn names(&self, agent_id: &str, agent_name: &str) -> bool {
        match self {
            AgentRef::Id(id) => id.to_string() == agent_id,
            AgentRef::Name(name) => name.as_str() == agent_name,
            AgentRef::Unknown => false,
        }
    }
}

/// Lifecycle of an agent. Only an `active` agent can be called; `retired` is final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentStatus {
    Active,
    Paused,
    Retired,
}

impl AgentStatus {
    pub fn parse(text: &str) -> Result<AgentStatus, Invalid> {
        match text {
            "active" => Ok(AgentStatus::Active),
            "paused" => Ok(AgentStatus::Paused),
            "retired" => Ok(AgentStatus::Retired),
            _ => Err(Invalid::new("status must be active, paused or retired")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AgentStatus::Active => "active",
            AgentStatus::Paused => "paused",
            AgentStatus::Retired => "retired",
        }
    }

    /// Whether an agent may move from `self` to `next`: anything but leaving `retired`.
    pub fn may_become(self, next: AgentStatus) -> bool {
        self != AgentStatus::Retired || next == AgentStatus::Retired
    }
}

/// An agent as stored and as every agent route returns it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Agent {
    pub id: AgentId,
    #[serde(skip)]
    pub tenant_id: TenantId,
    pub name: String,
    pub description: Option<String>,
    pub owner_member_id: Option<MemberId>,
    pub status: AgentStatus,
    /// Push delivery settings as the API shows them (never the secret); `null` while the agent
    /// is pull-only.
    pub endpoint: Option<serde_json::Value>,
    /// The endpoint credential, sealed by KMS for this tenant and agent; never serialized.
    #[serde(skip)]
    pub sealed_secret: Option<String>,
    pub claim_timeout_seconds: u64,
    /// The media ranges of the parts it accepts (its card's `defaultInputModes`):
    /// [`media::DEFAULT_INPUT_MODES`](super::media::DEFAULT_INPUT_MODES) unless it declared its
    /// own.
    pub input_modes: Vec<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Optimistic-concurrency counter for management writes; not part of the API.
    #[serde(skip)]
    pub version: u64,
    /// Until when (seconds since the Unix epoch) a new push task's delivery waits on the outbox
    /// from its open, not on the queue: a push worker found this agent's receiver held back by
    /// its tenant's breaker (`push/parking.rs`). Any write of the agent clears it.
    #[serde(skip)]
    pub push_held_until: Option<u64>,
}

impl Agent {
    /// Until when a new push task of this agent waits on the outbox from its open, when a hold
    /// marked by a push worker still stands at `now` (seconds since the Unix epoch): the hold's
    /// end, spread by up to half the wait left (`spread` from 0 to 1), so that the tasks one hold
    /// parked do not all fall due at the same moment.
    pub fn push_hold_at(&self, now: u64, spread: f64) -> Option<u64> {
        let until = self.push_held_until.filter(|until| *until > now)?;
        let spread = (until - now) as f64 * spread.clamp(0.0, 1.0) / 2.0;
        Some(until + spread as u64)
    }
}

/// Validates a claim deadline given in seconds.
pub fn parse_claim_timeout(value: &serde_json::Value) -> Result<u64, Invalid> {
    value
        .as_u64()
        .filter(|seconds| CLAIM_TIMEOUT_RANGE.contains(seconds))
        .ok_or_else(|| {
            Invalid(format!(
                "claim_timeout_seconds must be an integer from {} to {}",
                CLAIM_TIMEOUT_RANGE.start(),
                CLAIM_TIMEOUT_RANGE.end()
            ))
        })
}

/// Validates an optional description.
pub fn parse_description(value: Option<&serde_json::Value>) -> Result<Option<String>, Invalid> {
    match value {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(text)) if text.chars().count() <= 2000 => {
            Ok(Some(text.clone()))
        }
        Some(_) => Err(Invalid::new(
            "description must be a string of at most 2000 characters",
        )),
    }
}

#[cfg(test)]
impl Agent {
    /// An active pull agent of `tenant_id` as a new one is made, for unit tests.
    pub(crate) fn sample(id: &str, tenant_id: &str, name: &str) -> Agent {
        Agent {
            id: id.into(),
            tenant_id: tenant_id.into(),
            name: name.into(),
            description: None,
            owner_member_id: None,
            status: AgentStatus::Active,
            endpoint: None,
            sealed_secret: None,
            claim_timeout_seconds: 900,
            input_modes: super::media::default_input_modes(),
            created_at: crate::domain::clock::Timestamp::default(),
            updated_at: crate::domain::clock::Timestamp::default(),
            version: 1,
            push_held_until: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_push_hold_parks_new_tasks_until_its_end_spread_by_half_the_wait_left() {
        let mut agent = Agent::sample("a", "t", "callee");
        assert_eq!(agent.push_hold_at(1_000, 0.5), None);
        agent.push_held_until = Some(1_100);
        assert_eq!(agent.push_hold_at(1_000, 0.0), Some(1_100));
        assert_eq!(agent.push_hold_at(1_000, 1.0), Some(1_150));
        assert_eq!(agent.push_hold_at(1_000, 7.0), Some(1_150));
        assert_eq!(agent.push_hold_at(1_090, 1.0), Some(1_105));
        assert_eq!(
            agent.push_hold_at(1_100, 0.0),
            None,
            "a hold that ended parks nothing"
        );
    }

    #[test]
    fn names_follow_the_documented_pattern() {
        assert!(AgentName::parse("invoice-classifier").is_ok());
        assert!(AgentName::parse("a").is_ok());
        assert!(AgentName::parse(&"a".repeat(63)).is_ok());
        for bad in [
            "",
            "-lead",
            "Upper",
            "has space",
            "me",
            "cards",
            &"a".repeat(64),
        ] {
            assert!(AgentName::parse(bad).is_err(), "{bad:?} should be refused");
        }
        assert!(AgentName::parse("706608c0-4160-452a-86ac-ded1186326ac").is_err());
    }

    #[test]
    fn a_route_segment_is_an_id_a_name_or_nothing() {
        let id = "706608c0-4160-452a-86ac-ded1186326ac";
        assert!(matches!(AgentRef::parse(id), AgentRef::Id(_)));
        assert!(matches!(AgentRef::parse("billing"), AgentRef::Name(_)));
        assert_eq!(AgentRef::parse("Not/A Name"), AgentRef::Unknown);
        assert!(AgentRef::parse(id).names(id, "x"));
        assert!(AgentRef::parse("x").names(id, "x"));
        assert!(!AgentRef::parse("y").names(id, "x"));
    }

    #[test]
    fn a_retired_agent_stays_retired() {
        assert!(AgentStatus::Active.may_become(AgentStatus::Paused));
        assert!(AgentStatus::Paused.may_become(AgentStatus::Active));
        assert!(!AgentStatus::Retired.may_become(AgentStatus::Active));
        assert!(AgentStatus::Retired.may_become(AgentStatus::Retired));
    }
}
