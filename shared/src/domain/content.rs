//! Where a task's message and artifact bodies live, and the bounds that keep a task storable.
//!
//! A task item holds each body inline while it is small ([`INLINE_BODY_BYTES`]); a larger body is
//! written to the body store first and the item keeps a [`BodyRef`] of bounded size in its place.
//! With at most [`super::task::MAX_TASK_MESSAGES`] messages of at most `INLINE_BODY_BYTES` each,
//! plus one final answer and one error of bounded size, no write can grow a task item past the
//! store's item limit (see `store::tasks` for the measured bound). Independently, every task
//! carries at most [`MAX_TASK_CONTENT_BYTES`] of bodies in all, so that a task read in full always
//! fits one response.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::message::Role;
use sha2::{Digest, Sha256};

/// Largest body kept inside the task item; anything larger goes to the body store.
pub const INLINE_BODY_BYTES: usize = 512;

/// Most bytes of message and artifact bodies one task may accumulate (the opening message,
/// progress, questions, answers, artifacts). A task's full view is at most this plus its opening
/// message again (`input`), which stays under the 6 MB a Lambda response may carry.
pub const MAX_TASK_CONTENT_BYTES: u64 = 4 * 1024 * 1024;

/// The field that marks a stored value as a reference to a body kept outside the item. A
/// validated message or artifact list can never have it (messages admit only `role`, `parts`
/// and `message_id`; artifact lists are arrays).
const REF_FIELD: &str = "$stored";

/// A reference to a body kept in the body store, under a key derived from the task and the
/// body's SHA-256 (so writing the same body twice, as a retry does, writes the same object).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyRef {
    pub key: String,
    pub bytes: u64,
    pub sha256: String,
}

impl BodyRef {
    /// The reference for `body` (its JSON text) of task `task_id` in `tenant_id`.
    pub fn for_body(tenant_id: &str, task_id: &str, body: &[u8]) -> BodyRef {
        let sha256 = hex::encode(Sha256::digest(body));
        BodyRef {
            key: format!("tasks/{tenant_id}/{task_id}/{sha256}.json"),
            bytes: body.len() as u64,
            sha256,
        }
    }

    /// The reference as the item stores it in place of `body`. A message's `role` stays beside
    /// the reference, so whose message it is can be known without reading the body.
    pub fn to_value(&self, body: &Value) -> Value {
        let mut stored =
            json!({ REF_FIELD: { "key": self.key, "bytes": self.bytes, "sha256": self.sha256 } });
        if let Some(role) = body.get("role") {
            stored["role"] = role.clone();
        }
        stored
    }

    /// The reference a stored value holds, if it is one.
    pub fn from_value(value: &Value) -> Option<BodyRef> {
        let object = value.as_object()?;
        if object.keys().any(|key| key != REF_FIELD && key != "role") {
            return None;
        }
        let inner = object.get(REF_FIELD)?;
        Some(BodyRef {
            key: inner.get("key")?.as_str()?.to_owned(),
            bytes: inner.get("bytes")?.as_u64()?,
            sha256: inner.get("sha256")?.as_str()?.to_owned(),
        })
    }

    /// Whether `body` is the body this reference names.
    pub fn matches(&self, body: &[u8]) -> bool {
        body.len() as u64 == self.bytes && hex::encode(Sha256::digest(body)) == self.sha256
    }
}

/// A body ready to be written into a task item: its JSON text inline, or a reference to where
/// it was stored. `bytes` is the size of the body itself either way (what the content cap counts).
#[derive(Debug, Clone, PartialEq)]
pub struct PackedBody {
    pub stored: Value,
    pub bytes: u64,
    /// The body to write to the body store before the item, when it does not stay inline.
    pub offload: Option<(BodyRef, Vec<u8>)>,
}

impl PackedBody {
    /// Packs `body`: inline when its JSON text is at most `inline_limit` bytes, otherwise a
    /// reference, with the bytes to store under it.
    pub fn pack(tenant_id: &str, task_id: &str, body: &Value, inline_limit: usize) -> PackedBody {
        let text = body.to_string().into_bytes();
        let bytes = text.len() as u64;
        if text.len() <= inline_limit {
            return PackedBody {
                stored: body.clone(),
                bytes,
                offload: None,
            };
        }
        let reference = BodyRef::for_body(tenant_id, task_id, &text);
        PackedBody {
            stored: reference.to_value(body),
            bytes,
            offload: Some((reference, text)),
        }
    }

    /// A body the gateway writes itself and keeps inline whatever its size (a failure the gateway
    /// records, bounded by the error limit).
    pub fn inline(body: &Value) -> PackedBody {
        PackedBody {
            stored: body.clone(),
            bytes: body.to_string().len() as u64,
            offload: None,
        }
    }

    /// The stored form as the item's text.
    pub fn text(&self) -> String {
        self.stored.to_string()
    }
}

/// A body as a task holds it: in hand, or a reference to the body store (with the role of the
/// message it stands for, so whose message it is is known without reading it).
#[derive(Debug, Clone, PartialEq)]
pub enum Stored<T> {
    Inline(T),
    Ref {
        reference: BodyRef,
        role: Option<Role>,
    },
}

impl<T: Serialize + DeserializeOwned> Stored<T> {
    /// `body` as `packed` holds it: inline, or the reference it was packed to.
    pub fn packed(packed: &PackedBody, body: T) -> Stored<T> {
        match &packed.offload {
            None => Stored::Inline(body),
            Some((reference, _)) => Stored::Ref {
                reference: reference.clone(),
                role: role_of(&packed.stored),
            },
        }
    }

    /// Reads the stored form back (the JSON a task item holds).
    pub fn from_value(value: &Value) -> Result<Stored<T>, serde_json::Error> {
        match BodyRef::from_value(value) {
            Some(reference) => Ok(Stored::Ref {
                reference,
                role: role_of(value),
            }),
            None => Ok(Stored::Inline(T::deserialize(value)?)),
        }
    }

    /// The stored form: the body's JSON, or the reference's.
    pub fn to_value(&self) -> Value {
        match self {
            Stored::Inline(body) => serde_json::to_value(body).unwrap_or(Value::Null),
            Stored::Ref { reference, role } => match role {
                Some(role) => reference.to_value(&json!({ "role": role })),
                None => reference.to_value(&json!({})),
            },
        }
    }

    /// The body, when it is in hand.
    pub fn inline(&self) -> Option<&T> {
        match self {
            Stored::Inline(body) => Some(body),
            Stored::Ref { .. } => None,
        }
    }

    /// The reference, when the body is elsewhere.
    pub fn reference(&self) -> Option<&BodyRef> {
        match self {
            Stored::Inline(_) => None,
            Stored::Ref { reference, .. } => Some(reference),
        }
    }

    /// Puts `body` in place of the reference, if `body` is what it names.
    pub fn fill(&mut self, found: &BodyRef, body: &Value) -> Result<(), serde_json::Error> {
        if self.reference() == Some(found) {
            *self = Stored::Inline(T::deserialize(body)?);
        }
        Ok(())
    }
}

impl Stored<super::Message> {
    /// Whose message this is.
    pub fn role(&self) -> Option<Role> {
        match self {
            Stored::Inline(message) => Some(message.role),
            Stored::Ref { role, .. } => *role,
        }
    }
}

fn role_of(value: &Value) -> Option<Role> {
    value
        .get("role")
        .and_then(|role| Role::deserialize(role).ok())
}

/// Every body reference inside a stored value (a message, an artifact list, or a whole task's
/// parts), for reading them back.
pub fn references(values: &[&Value]) -> Vec<BodyRef> {
    let mut found: Vec<BodyRef> = Vec::new();
    for value in values {
        if let Some(reference) = BodyRef::from_value(value) {
            if !found.contains(&reference) {
                found.push(reference);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_body_stays_inline_and_a_large_one_becomes_a_bounded_reference() {
        let small = json!({"role": "user", "parts": [{"text": "hi"}]});
        let packed = PackedBody::pack("t", "k", &small, INLINE_BODY_BYTES);
        assert_eq!(packed.stored, small);
        assert!(packed.offload.is_none());

        let large = json!({"role": "user", "parts": [{"text": "x".repeat(1024 * 1024)}]});
        let packed = PackedBody::pack(
            "9f0c7a9e-0000-4000-8000-000000000001",
            "9f0c7a9e-0000-4000-8000-000000000002",
            &large,
            INLINE_BODY_BYTES,
        );
        let (reference, bytes) = packed.offload.clone().unwrap();
        assert_eq!(bytes, large.to_string().into_bytes());
        assert_eq!(packed.bytes, bytes.len() as u64);
        assert!(packed.text().len() < INLINE_BODY_BYTES, "{}", packed.text());
        assert_eq!(BodyRef::from_value(&packed.stored), Some(reference.clone()));
        assert_eq!(
            packed.stored["role"], "user",
            "whose message it is stays readable"
        );
        assert!(reference.matches(&bytes));
        assert!(!reference.matches(b"something else"));
    }

    #[test]
    fn the_same_body_gets_the_same_key_and_another_task_another_key() {
        let body = json!({"parts": [{"text": "y".repeat(4096)}]});
        let first = PackedBody::pack("t", "a", &body, 0).offload.unwrap().0;
        let again = PackedBody::pack("t", "a", &body, 0).offload.unwrap().0;
        let other = PackedBody::pack("t", "b", &body, 0).offload.unwrap().0;
        assert_eq!(first, again);
        assert_ne!(first.key, other.key);
        assert!(first.key.starts_with("tasks/t/a/"));
    }

    #[test]
    fn a_message_is_never_taken_for_a_reference() {
        let message = json!({"role": "user", "parts": [{"data": {"$stored": {"key": "x"}}}]});
        assert_eq!(BodyRef::from_value(&message), None);
        assert_eq!(references(&[&message]), Vec::new());
    }
}
