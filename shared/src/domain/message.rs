//! A2A messages and parts, parsed from untrusted JSON into validated values.
//!
//! A part is exactly one of `text`, `data` or `file`; a message has 1 to 64 of them. The size
//! limits are the ones the API documents, so one agent cannot flood another.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Invalid;

/// Most parts a message may carry.
pub const MAX_PARTS: usize = 64;
/// Most characters in one text part.
pub const MAX_TEXT_CHARS: usize = 262_144;
/// Most bytes of one part, serialized.
pub const MAX_PART_BYTES: usize = 256 * 1024;
/// Most bytes of one message, serialized.
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024;
/// Deepest nesting of arrays and objects inside a `data` part.
pub const MAX_DATA_DEPTH: usize = 32;

/// Who wrote a message: the caller (`user`) or the callee (`agent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Agent,
}

/// A file reference; the gateway never fetches it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileRef {
    pub uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
}

/// One part of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Part {
    Text(String),
    Data(Value),
    File(FileRef),
}

/// A validated message. Client input is read with [`Message::parse`], whose errors name the
/// offending field by its path (`message.parts[2].text`); `Deserialize` reads back what the
/// gateway itself stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Message {
    pub role: Role,
    pub parts: Vec<Part>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
}

impl Message {
    /// Parses and validates `value` as a message; `at` names it in error texts.
    pub fn parse(value: &Value, at: &str) -> Result<Message, Invalid> {
        let object = value
            .as_object()
            .ok_or_else(|| Invalid(format!("{at} must be an object")))?;
        for key in object.keys() {
            if !matches!(key.as_str(), "role" | "parts" | "message_id") {
                return Err(Invalid(format!("{at}.{key} is not a message field")));
            }
        }
        let role = match object.get("role") {
            None => Role::User,
            Some(Value::String(role)) if role == "user" => Role::User,
            Some(Value::String(role)) if role == "agent" => Role::Agent,
            Some(_) => return Err(Invalid(format!("{at}.role must be \"user\" or \"agent\""))),
        };
        let message_id = match object.get("message_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) if !id.is_empty() && id.chars().count() <= 128 => {
                Some(id.clone())
            }
            Some(_) => {
                return Err(Invalid(format!(
                    "{at}.message_id must be a string of 1 to 128 characters"
                )))
            }
        };
        let parts = parse_parts(object.get("parts"), &format!("{at}.parts"))?;
        let message = Message {
            role,
            parts,
            message_id,
        };
        if serialized_len(&message) > MAX_MESSAGE_BYTES {
            return Err(Invalid(format!(
                "{at} is larger than {MAX_MESSAGE_BYTES} bytes serialized"
            )));
        }
        Ok(message)
    }

    /// A message written by the gateway or the callee from already-validated parts.
    pub fn agent(parts: Vec<Part>) -> Message {
        Message {
            role: Role::Agent,
            parts,
            message_id: None,
        }
    }

    /// The key under which a task remembers this message's `message_id` (with its role, so a
    /// caller's and a callee's ids never meet), for writes repeated with the same id: 24 hex
    /// digits of a SHA-256, short enough that a task's 500 keys stay small in its item.
    pub fn idempotency_key(&self) -> Option<String> {
        use sha2::{Digest, Sha256};
        let id = self.message_id.as_deref()?;
        let role = match self.role {
            Role::User => "user",
            Role::Agent => "agent",
        };
        let digest = Sha256::digest(format!("{role}:{id}").as_bytes());
        Some(hex::encode(&digest[..12]))
    }

    /// Every text part, joined with newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|part| match part {
                Part::Text(text) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }
}

/// Parses a non-empty list of parts (`at` names the list in error texts).
pub fn parse_parts(value: Option<&Value>, at: &str) -> Result<Vec<Part>, Invalid> {
    let items = match value {
        Some(Value::Array(items)) => items,
        None | Some(Value::Null) => return Err(Invalid(format!("{at} is required"))),
        Some(_) => return Err(Invalid(format!("{at} must be a list of parts"))),
    };
    if items.is_empty() {
        return Err(Invalid(format!("{at} must hold at least one part")));
    }
    if items.len() > MAX_PARTS {
        return Err(Invalid(format!("{at} holds more than {MAX_PARTS} parts")));
    }
    items
        .iter()
        .enumerate()
        .map(|(index, item)| Part::parse(item, &format!("{at}[{index}]")))
        .collect()
}

impl Part {
    /// Parses one part: an object with exactly one of `text`, `data`, `file`.
    pub fn parse(value: &Value, at: &str) -> Result<Part, Invalid> {
        let object = value
            .as_object()
            .ok_or_else(|| Invalid(format!("{at} must be an object")))?;
        let kinds: Vec<&str> = ["text", "data", "file"]
            .into_iter()
            .filter(|kind| object.contains_key(*kind))
            .collect();
        if kinds.len() != 1 || object.len() != 1 {
            return Err(Invalid(format!(
                "{at} must have exactly one of text, data or file, and nothing else"
            )));
        }
        let part = match kinds[0] {
            "text" => match &object["text"] {
                Value::String(text) if text.chars().count() <= MAX_TEXT_CHARS => {
                    Part::Text(text.clone())
                }
                Value::String(_) => {
                    return Err(Invalid(format!(
                        "{at}.text is longer than {MAX_TEXT_CHARS} characters"
                    )))
                }
                _ => return Err(Invalid(format!("{at}.text must be a string"))),
            },
            "data" => {
                let data = &object["data"];
                if depth(data) > MAX_DATA_DEPTH {
                    return Err(Invalid(format!(
                        "{at}.data is nested deeper than {MAX_DATA_DEPTH} levels"
                    )));
                }
                Part::Data(data.clone())
            }
            _ => Part::File(parse_file(&object["file"], &format!("{at}.file"))?),
        };
        if serialized_len(&part) > MAX_PART_BYTES {
            return Err(Invalid(format!(
                "{at} is larger than {MAX_PART_BYTES} bytes serialized"
            )));
        }
        Ok(part)
    }
}

fn parse_file(value: &Value, at: &str) -> Result<FileRef, Invalid> {
    let object: &Map<String, Value> = value
        .as_object()
        .ok_or_else(|| Invalid(format!("{at} must be an object with uri, name?, mime?")))?;
    let text = |key: &str, required: bool| -> Result<Option<String>, Invalid> {
        match object.get(key) {
            Some(Value::String(text)) if !text.is_empty() => Ok(Some(text.clone())),
            None | Some(Value::Null) if !required => Ok(None),
            _ => Err(Invalid(format!("{at}.{key} must be a non-empty string"))),
        }
    };
    for key in object.keys() {
        if !matches!(key.as_str(), "uri" | "name" | "mime") {
            return Err(Invalid(format!("{at}.{key} is not a file field")));
        }
    }
    Ok(FileRef {
        uri: text("uri", true)?.unwrap_or_default(),
        name: text("name", false)?,
        mime: text("mime", false)?,
    })
}

/// Nesting depth of a JSON value: a scalar is 0, `[1]` is 1, `{"a": [1]}` is 2.
fn depth(value: &Value) -> usize {
    // Iterative, so a hostile document cannot overflow the stack here.
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((value, level)) = stack.pop() {
        deepest = deepest.max(level);
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|item| (item, level + 1))),
            Value::Object(map) => stack.extend(map.values().map(|item| (item, level + 1))),
            _ => {}
        }
    }
    deepest
}

fn serialized_len<T: Serialize>(value: &T) -> usize {
    serde_json::to_vec(value)
        .map(|bytes| bytes.len())
        .unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Result<Message, Invalid> {
        Message::parse(&value, "message")
    }

    #[test]
    fn a_message_with_each_kind_of_part_round_trips() {
        let input = json!({"role": "user", "parts": [
            {"text": "Classify this invoice"},
            {"data": {"invoice_id": "INV-2026-0912"}},
            {"file": {"uri": "s3://b/k.pdf", "name": "k.pdf", "mime": "application/pdf"}}
        ]});
        let message = parse(input.clone()).unwrap();
        assert_eq!(serde_json::to_value(&message).unwrap(), input);
    }

    #[test]
    fn message_id_is_one_to_128_characters_not_bytes() {
        let with_id = |id: String| parse(json!({"parts": [{"text": "a"}], "message_id": id}));
        let longest = "é".repeat(128);
        assert_eq!(with_id(longest.clone()).unwrap().message_id, Some(longest));
        assert!(with_id("é".repeat(129)).is_err());
        assert!(with_id(String::new()).is_err());
    }

    #[test]
    fn a_part_with_two_kinds_or_none_is_refused() {
        let two = parse(json!({"parts": [{"text": "a", "data": 1}]})).unwrap_err();
        assert!(two.0.contains("message.parts[0]"), "{two}");
        assert!(parse(json!({"parts": [{}]})).is_err());
        assert!(parse(json!({"parts": [{"text": "a", "extra": 1}]})).is_err());
    }

    #[test]
    fn empty_or_missing_parts_are_refused() {
        assert!(parse(json!({"parts": []}))
            .unwrap_err()
            .0
            .contains("at least one"));
        assert!(parse(json!({"role": "user"}))
            .unwrap_err()
            .0
            .contains("required"));
        assert!(parse(json!({"parts": "text"})).is_err());
    }

    #[test]
    fn wrong_types_are_refused() {
        assert!(parse(json!({"parts": [{"text": 5}]})).is_err());
        assert!(parse(json!({"role": "boss", "parts": [{"text": "a"}]})).is_err());
        assert!(parse(json!({"parts": [{"file": {"name": "x"}}]})).is_err());
        assert!(parse(json!(["not", "an", "object"])).is_err());
    }

    #[test]
    fn size_and_nesting_limits_hold_at_the_edge() {
        // A text part at the character limit is also just over the serialized-part limit, so
        // the largest ASCII text part that passes both is the part limit less its envelope.
        let envelope = r#"{"text":""}"#.len();
        let largest = "a".repeat(MAX_PART_BYTES - envelope);
        assert!(parse(json!({"parts": [{"text": largest}]})).is_ok());
        let one_more = "a".repeat(MAX_PART_BYTES - envelope + 1);
        assert!(parse(json!({"parts": [{"text": one_more}]}))
            .unwrap_err()
            .0
            .contains("bytes"));
        let over = "a".repeat(MAX_TEXT_CHARS + 1);
        assert!(parse(json!({"parts": [{"text": over}]}))
            .unwrap_err()
            .0
            .contains("characters"));

        let mut nested = json!(1);
        for _ in 0..MAX_DATA_DEPTH {
            nested = json!([nested]);
        }
        assert!(parse(json!({"parts": [{"data": nested.clone()}]})).is_ok());
        assert!(parse(json!({"parts": [{"data": [nested]}]})).is_err());

        let parts: Vec<Value> = (0..=MAX_PARTS).map(|_| json!({"text": "x"})).collect();
        assert!(parse(json!({ "parts": parts })).is_err());
    }

    #[test]
    fn a_message_over_one_mebibyte_is_refused() {
        let big = "a".repeat(200_000);
        let parts: Vec<Value> = (0..6).map(|_| json!({ "text": big })).collect();
        assert!(parse(json!({ "parts": parts }))
            .unwrap_err()
            .0
            .contains("larger"));
    }
}
