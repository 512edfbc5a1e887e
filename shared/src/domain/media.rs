//! Media types: what each part of a message is, and the media ranges an agent accepts (its
//! `input_modes`, shown on its card as `defaultInputModes`).
//!
//! A text part is `text/plain`, a data part `application/json`, a file part what its `mime`
//! says (`application/octet-stream` when it says nothing). An agent that declares no modes
//! accepts every part the gateway carries, and its card says so with `*/*`.

use serde_json::Value;

use super::message::{Message, Part};
use super::Invalid;

/// What an agent that declared nothing accepts: everything the gateway carries.
pub const DEFAULT_INPUT_MODES: [&str; 3] = ["text/plain", "application/json", "*/*"];

/// Most media ranges one agent may declare.
pub const MAX_INPUT_MODES: usize = 16;

/// The media type a file part is taken to have when it names none.
pub const UNNAMED_FILE_TYPE: &str = "application/octet-stream";

/// [`DEFAULT_INPUT_MODES`] as an agent holds them.
pub fn default_input_modes() -> Vec<String> {
    DEFAULT_INPUT_MODES.map(str::to_owned).to_vec()
}

/// The shape of one declared media range, as the API document states it.
pub const INPUT_MODE_PATTERN: &str = concat!(
    r"^(\*/\*|[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/",
    r"(\*|[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}))$"
);

/// Reads a list of media ranges (`type/subtype`, `type/*` or `*/*`, without parameters) an agent
/// accepts, lower-cased and without repeats; `at` names the list in error texts.
pub fn parse_input_modes(value: &Value, at: &str) -> Result<Vec<String>, Invalid> {
    let Value::Array(items) = value else {
        return Err(Invalid(format!("{at} must be a list of media ranges")));
    };
    if items.is_empty() || items.len() > MAX_INPUT_MODES {
        return Err(Invalid(format!(
            "{at} must hold 1 to {MAX_INPUT_MODES} media ranges"
        )));
    }
    let mut modes: Vec<String> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let range = item.as_str().and_then(media_range).ok_or_else(|| {
            Invalid(format!(
                "{at}[{index}] must be a media range such as text/plain, image/* or */*"
            ))
        })?;
        if !modes.contains(&range) {
            modes.push(range);
        }
    }
    Ok(modes)
}

/// `text` as a media range in its lower-case form, if it is one: `*/*`, or a type and a subtype
/// (or `*`), each an RFC 6838 restricted name (the pattern the API document states).
fn media_range(text: &str) -> Option<String> {
    if text == "*/*" {
        return Some(text.to_owned());
    }
    let (kind, subtype) = text.split_once('/')?;
    (is_restricted_name(kind) && (subtype == "*" || is_restricted_name(subtype)))
        .then(|| text.to_ascii_lowercase())
}

/// RFC 6838's `restricted-name`: a letter or digit, then up to 126 of letters, digits and
/// `!#$&-^_.+`.
fn is_restricted_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 127
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|byte| byte.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(byte))
}

/// The `type/subtype` of a media type (lower-cased, without parameters), if `text` is one
/// (no wildcard).
pub fn media_type_essence(text: &str) -> Option<String> {
    if text.chars().count() > 255 {
        return None;
    }
    let parsed: mime::Mime = text.parse().ok()?;
    (parsed.type_() != mime::STAR && parsed.subtype() != mime::STAR)
        .then(|| parsed.essence_str().to_ascii_lowercase())
}

/// The media type of `part`, as an agent's modes judge it.
pub fn part_media_type(part: &Part) -> &str {
    match part {
        Part::Text(_) => "text/plain",
        Part::Data(_) => "application/json",
        Part::File(file) => file.mime.as_deref().unwrap_or(UNNAMED_FILE_TYPE),
    }
}

/// Whether one of `modes` covers `media_type`. `*/*` covers anything, even a `mime` that is not
/// a well-formed media type (a file part's `mime` is free text on the REST edge).
pub fn accepts<S: AsRef<str>>(modes: &[S], media_type: &str) -> bool {
    let essence = media_type
        .parse::<mime::Mime>()
        .ok()
        .map(|parsed| parsed.essence_str().to_ascii_lowercase());
    modes.iter().any(|mode| {
        let mode = mode.as_ref();
        if mode == "*/*" {
            return true;
        }
        let Some(essence) = &essence else {
            return false;
        };
        match mode.strip_suffix("/*") {
            Some(kind) => essence.split('/').next() == Some(kind),
            None => essence == mode,
        }
    })
}

/// The first part of `message` that `modes` do not cover, as its path under `at` and its media
/// type.
pub fn refused_part<S: AsRef<str>>(
    modes: &[S],
    message: &Message,
    at: &str,
) -> Option<(String, String)> {
    message
        .parts
        .iter()
        .enumerate()
        .find(|(_, part)| !accepts(modes, part_media_type(part)))
        .map(|(index, part)| (format!("{at}[{index}]"), part_media_type(part).to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::message::FileRef;
    use serde_json::json;

    fn file(mime: Option<&str>) -> Part {
        Part::File(FileRef {
            uri: "https://files.example.com/a".into(),
            name: None,
            mime: mime.map(str::to_owned),
        })
    }

    #[test]
    fn each_kind_of_part_has_its_media_type() {
        assert_eq!(part_media_type(&Part::Text("a".into())), "text/plain");
        assert_eq!(part_media_type(&Part::Data(json!(1))), "application/json");
        assert_eq!(part_media_type(&file(Some("image/png"))), "image/png");
        assert_eq!(part_media_type(&file(None)), UNNAMED_FILE_TYPE);
    }

    #[test]
    fn ranges_cover_their_types_and_no_others() {
        let modes = ["text/plain", "image/*"];
        assert!(accepts(&modes, "text/plain"));
        assert!(accepts(&modes, "Text/Plain; charset=utf-8"));
        assert!(accepts(&modes, "image/png"));
        assert!(!accepts(&modes, "text/html"));
        assert!(!accepts(&modes, "application/x-unsupported-tck-type"));
        assert!(!accepts(&modes, "imagery/png"));
        assert!(!accepts(&modes, "not a type"));
        assert!(accepts(&DEFAULT_INPUT_MODES, "not a type"));
        assert!(accepts(&DEFAULT_INPUT_MODES, "application/x-anything"));
    }

    #[test]
    fn declared_modes_are_ranges_lower_cased_once_each() {
        let parsed =
            parse_input_modes(&json!(["Text/Plain", "image/*", "*/*", "text/plain"]), "m").unwrap();
        assert_eq!(parsed, ["text/plain", "image/*", "*/*"]);
        let longest = format!("{}/{}", "a".repeat(127), "b".repeat(127));
        assert!(parse_input_modes(&json!([longest]), "m").is_ok());
        for bad in [
            json!([]),
            json!("text/plain"),
            json!(["text"]),
            json!(["*/plain"]),
            json!(["text/plain; charset=utf-8"]),
            json!(["text/*plain"]),
            json!(["-text/plain"]),
            json!([1]),
            json!([format!("text/{}", "a".repeat(128))]),
        ] {
            assert!(parse_input_modes(&bad, "m").is_err(), "{bad}");
        }
        let seventeen: Vec<String> = (0..=MAX_INPUT_MODES).map(|n| format!("a/b{n}")).collect();
        assert!(parse_input_modes(&json!(seventeen), "m").is_err());
    }

    #[test]
    fn the_first_part_no_mode_covers_is_named() {
        let message = Message::agent(vec![
            Part::Text("a".into()),
            file(Some("image/png")),
            file(Some("application/pdf")),
        ]);
        assert_eq!(
            refused_part(&["text/*", "image/png"], &message, "m.parts"),
            Some(("m.parts[2]".to_owned(), "application/pdf".to_owned()))
        );
        assert_eq!(
            refused_part(&DEFAULT_INPUT_MODES, &message, "m.parts"),
            None
        );
    }
}
