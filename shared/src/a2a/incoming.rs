//! What an A2A client sends, read into the gateway's terms: an incoming message, its parts in
//! the REST shape and the skill its metadata names, each refused by its path when the gateway
//! cannot carry it.

use base64::Engine;
use serde_json::{json, Map, Value};

use super::error::A2aError;
use crate::domain::contract::{self, MAX_SKILL_CHARS};
use crate::domain::media;
use crate::domain::ContextId;
use crate::domain::Message;

/// The parts of an A2A message rewritten into the REST shape, each refused by its path when the
/// gateway cannot carry it.
fn rest_parts(parts: &Value, at: &str) -> Result<Value, A2aError> {
    let Value::Array(parts) = parts else {
        return Err(A2aError::invalid_params(format!(
            "{at} must be a list of parts"
        )));
    };
    parts
        .iter()
        .enumerate()
        .map(|(index, part)| rest_part(part, &format!("{at}[{index}]")))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

fn rest_part(part: &Value, at: &str) -> Result<Value, A2aError> {
    let Value::Object(fields) = part else {
        return Err(A2aError::invalid_params(format!("{at} must be an object")));
    };
    let given = |name: &str| fields.get(name).filter(|value| !is_empty(value));
    if given("metadata").is_some() {
        return Err(A2aError::invalid_params(format!(
            "{at}.metadata: part metadata is not carried by this gateway"
        )));
    }
    if let Some(unknown) = fields.keys().find(|name| {
        !matches!(
            name.as_str(),
            "text" | "url" | "data" | "filename" | "mediaType" | "metadata" | "raw"
        )
    }) {
        return Err(A2aError::invalid_params(format!(
            "{at}.{unknown} is not a field of a part"
        )));
    }
    // Empty means unset (proto JSON), but a field that is set is a string.
    for name in ["text", "url", "filename", "mediaType"] {
        if !matches!(
            fields.get(name),
            None | Some(Value::Null | Value::String(_))
        ) {
            return Err(A2aError::invalid_params(format!(
                "{at}.{name} must be a string"
            )));
        }
    }
    let media_type = given("mediaType").and_then(Value::as_str);
    if let Some(raw) = given("raw") {
        return raw_file_part(raw, media_type, given("filename"), at);
    }
    if let Some(text) = given("text") {
        if media_type.is_some_and(|media| media != "text/plain") {
            return Err(A2aError::new(
                super::error::A2aErrorKind::ContentTypeNotSupported,
                format!("{at}.mediaType: a text part is text/plain"),
            ));
        }
        return Ok(json!({"text": text}));
    }
    if let Some(data) = fields.get("data") {
        return Ok(json!({"data": data}));
    }
    if let Some(url) = given("url") {
        let mut file = Map::new();
        file.insert("uri".into(), url.clone());
        if let Some(name) = given("filename") {
            file.insert("name".into(), name.clone());
        }
        if let Some(media) = given("mediaType") {
            file.insert("mime".into(), media.clone());
        }
        return Ok(json!({"file": file}));
    }
    Err(A2aError::invalid_params(format!(
        "{at} must have one of text, url or data"
    )))
}

/// A `raw` part in the REST shape: a file part whose `uri` is a `data:` URI (RFC 2397) holding
/// the bytes in base64, so a REST callee reads them with any URI library and the A2A edge shows
/// them as `raw` again ([`raw_bytes`]).
fn raw_file_part(
    raw: &Value,
    media_type: Option<&str>,
    filename: Option<&Value>,
    at: &str,
) -> Result<Value, A2aError> {
    let bytes = raw
        .as_str()
        .and_then(decode_proto_bytes)
        .ok_or_else(|| A2aError::invalid_params(format!("{at}.raw must be base64 text")))?;
    let mut file = Map::new();
    // The media type as given is the file's `mime`; the URI names it only when it is one.
    let essence = media_type
        .and_then(media::media_type_essence)
        .unwrap_or_else(|| media::UNNAMED_FILE_TYPE.to_owned());
    if let Some(named) = media_type {
        file.insert("mime".into(), json!(named));
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    file.insert(
        "uri".into(),
        json!(format!("data:{essence};base64,{encoded}")),
    );
    if let Some(name) = filename {
        file.insert("name".into(), name.clone());
    }
    Ok(json!({ "file": file }))
}

/// The shape of a `raw` part's bytes, as the API document states it: [`decode_proto_bytes`]
/// reads exactly these.
pub const RAW_PATTERN: &str = concat!(
    r"^(([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}={0,2}|[A-Za-z0-9+/]{3}=?)?",
    r"|([A-Za-z0-9_-]{4})*([A-Za-z0-9_-]{2}={0,2}|[A-Za-z0-9_-]{3}=?)?)$"
);

/// Bytes as proto JSON writes them: base64 with the standard or the URL-safe alphabet, padded
/// or not (the pattern the API document states for `raw`).
pub fn decode_proto_bytes(text: &str) -> Option<Vec<u8>> {
    use base64::engine::{general_purpose, DecodePaddingMode, GeneralPurposeConfig};
    let lenient = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    let alphabet = if text.contains(['-', '_']) {
        &base64::alphabet::URL_SAFE
    } else {
        &base64::alphabet::STANDARD
    };
    general_purpose::GeneralPurpose::new(alphabet, lenient)
        .decode(text)
        .ok()
}

/// The base64 bytes of a file part whose `uri` is a base64 `data:` URI, which the A2A edge
/// shows as a `raw` part.
pub(crate) fn raw_bytes(uri: &str) -> Option<&str> {
    let (header, payload) = uri.strip_prefix("data:")?.split_once(',')?;
    let is_base64 = header.rsplit(';').next() == Some("base64");
    let decodes = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .is_ok();
    (is_base64 && decodes).then_some(payload)
}

/// Whether a value is absent in proto JSON terms (an empty string, list or object, or null).
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(text) => text.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
        _ => false,
    }
}

/// An A2A message as the caller sends it, read into the gateway's message (`role` must be the
/// user's) and the ids it names.
#[derive(Debug, Clone, PartialEq)]
pub struct IncomingMessage {
    pub message: Message,
    /// The task it answers in place, if any.
    pub task_id: Option<String>,
    /// The conversation it continues, if any.
    pub context_id: Option<ContextId>,
    /// The callee's skill it names (`metadata.skill`), which a binding's contract may bound.
    pub skill: Option<String>,
}

/// Reads `value` (the request's `message`) as an incoming A2A message.
pub fn incoming_message(value: &Value) -> Result<IncomingMessage, A2aError> {
    let Value::Object(fields) = value else {
        return Err(A2aError::invalid_params("message must be an object"));
    };
    let given = |name: &str| fields.get(name).filter(|value| !is_empty(value));
    for carried_not in ["extensions", "referenceTaskIds"] {
        if given(carried_not).is_some() {
            return Err(A2aError::invalid_params(format!(
                "message.{carried_not} is not carried by this gateway"
            )));
        }
    }
    match given("role").and_then(Value::as_str) {
        Some("ROLE_USER") => {}
        Some(_) | None => {
            return Err(A2aError::invalid_params(
                "message.role must be ROLE_USER: the caller's message",
            ))
        }
    }
    // An empty string is an unset id in proto JSON; a list or an object is never an id.
    let text_id = |name: &str| -> Result<Option<String>, A2aError> {
        match fields.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(id)) if id.is_empty() => Ok(None),
            Some(Value::String(id)) => Ok(Some(id.clone())),
            Some(_) => Err(A2aError::invalid_params(format!(
                "message.{name} must be a string"
            ))),
        }
    };
    let message_id = text_id("messageId")?
        .ok_or_else(|| A2aError::invalid_params("message.messageId is required"))?;
    let parts = rest_parts(fields.get("parts").unwrap_or(&Value::Null), "message.parts")?;
    let rest = json!({"role": "user", "parts": parts, "message_id": message_id});
    let message =
        Message::parse(&rest, "message").map_err(|invalid| A2aError::invalid_params(invalid.0))?;
    let context_id = text_id("contextId")?;
    if context_id
        .as_ref()
        .is_some_and(|id| id.chars().count() > MAX_CONTEXT_NAME_CHARS)
    {
        return Err(A2aError::invalid_params(format!(
            "message.contextId is longer than {MAX_CONTEXT_NAME_CHARS} characters"
        )));
    }
    Ok(IncomingMessage {
        message,
        task_id: text_id("taskId")?,
        context_id: context_id.map(ContextId::from),
        skill: named_skill(given("metadata"))?,
    })
}

/// The skill a message's `metadata` names: the one key this gateway carries there.
fn named_skill(metadata: Option<&Value>) -> Result<Option<String>, A2aError> {
    let Some(metadata) = metadata else {
        return Ok(None);
    };
    let Value::Object(fields) = metadata else {
        return Err(A2aError::invalid_params(
            "message.metadata must be an object",
        ));
    };
    if let Some(other) = fields.keys().find(|key| *key != "skill") {
        return Err(A2aError::invalid_params(format!(
            "message.metadata.{other} is not carried by this gateway (only skill is)"
        )));
    }
    contract::named_skill(fields.get("skill")).map_err(|contract::NotASkillId| {
        A2aError::invalid_params(format!(
            "message.metadata.skill must be a skill id of 1 to {MAX_SKILL_CHARS} characters"
        ))
    })
}

/// Longest conversation name a client may give.
pub const MAX_CONTEXT_NAME_CHARS: usize = 128;
