//! Typed ids: a tenant id cannot be passed where a task id is expected.
//!
//! Each id is the text the API shows (a UUID for the ids the gateway makes); the types say which
//! kind of thing an id names, not that the text is well formed: an id read from a path that names
//! nothing is simply not found. An id reads as `&str` (through `Deref`) wherever text is wanted.

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// A new random (v4 UUID) id.
            pub fn generate() -> $name {
                $name(uuid::Uuid::new_v4().to_string())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl From<String> for $name {
            fn from(text: String) -> $name {
                $name(text)
            }
        }

        impl From<&str> for $name {
            fn from(text: &str) -> $name {
                $name(text.to_owned())
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&$name> for $name {
            fn eq(&self, other: &&$name) -> bool {
                self == *other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

id_type!(
    /// A tenant: the boundary no principal crosses.
    TenantId
);
id_type!(
    /// An agent, caller or callee.
    AgentId
);
id_type!(
    /// A task.
    TaskId
);
id_type!(
    /// A call: one task's place in a call tree (its parent's and root's are call ids too).
    CallId
);
id_type!(
    /// A conversation between one caller and one callee (A2A's `contextId`).
    ContextId
);
id_type!(
    /// A member (a person) of a tenant.
    MemberId
);
id_type!(
    /// An issued API key, as its owner lists and revokes it (never the key or its hash).
    KeyId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_serializes_as_its_text_and_reads_as_str() {
        let id = TaskId::from("t-1");
        assert_eq!(serde_json::to_value(&id).unwrap(), serde_json::json!("t-1"));
        assert_eq!(
            serde_json::from_value::<TaskId>(serde_json::json!("t-1")).unwrap(),
            id
        );
        assert_eq!(&*id, "t-1");
        assert_eq!(id.to_string(), "t-1");
    }

    #[test]
    fn generated_ids_are_distinct_uuids() {
        let (first, second) = (AgentId::generate(), AgentId::generate());
        assert_ne!(first, second);
        assert!(uuid::Uuid::parse_str(&first).is_ok());
    }
}
