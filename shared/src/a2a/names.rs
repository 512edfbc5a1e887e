//! Field names as ProtoJSON reads them: a parser accepts a field under its JSON name
//! (`taskId`) and under its proto field name (`task_id`) alike. Every A2A request is brought to
//! the JSON names once, where it enters (both bindings), so the rest of the gate reads one
//! spelling; answers always use the JSON names.
//!
//! Only the protocol's own fields are renamed: the values of `data` (a data part's free JSON)
//! and `metadata` (a free `Struct`) are the client's and stay as sent.

use serde_json::{Map, Value};

use super::A2aError;

/// Fields whose value is the client's own JSON, never renamed inside.
const FREE_VALUES: [&str; 2] = ["data", "metadata"];

/// The JSON name of a proto field name (`history_length` → `historyLength`), as protoc
/// derives it: each underscore dropped and the letter after it upper-cased. A name without an
/// underscore is returned as it is.
pub fn json_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `value` with every protocol field under its JSON name, at every depth. A field sent under
/// both names is `InvalidParams`, naming the field.
pub fn with_json_names(value: Value) -> Result<Value, A2aError> {
    match value {
        Value::Object(fields) => {
            let mut renamed = Map::with_capacity(fields.len());
            for (name, value) in fields {
                let json = json_name(&name);
                let value = if FREE_VALUES.contains(&json.as_str()) {
                    value
                } else {
                    with_json_names(value)?
                };
                if renamed.insert(json.clone(), value).is_some() {
                    return Err(A2aError::invalid_params(format!(
                        "{json} is given twice (once as {name})"
                    )));
                }
            }
            Ok(Value::Object(renamed))
        }
        Value::Array(items) => items
            .into_iter()
            .map(with_json_names)
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn proto_field_names_become_json_names() {
        for (proto, json) in [
            ("task_id", "taskId"),
            ("history_length", "historyLength"),
            ("push_notification_config", "pushNotificationConfig"),
            ("taskId", "taskId"),
            ("id", "id"),
        ] {
            assert_eq!(json_name(proto), json);
        }
    }

    #[test]
    fn a_request_is_renamed_at_every_depth_but_inside_the_clients_own_json() {
        let sent = json!({
            "message": {"message_id": "m-1", "context_id": "c", "role": "ROLE_USER",
                        "parts": [{"text": "x", "media_type": "text/plain"},
                                  {"data": {"invoice_id": "INV-1", "line_items": [{"unit_price": 3}]}}],
                        "metadata": {"trace_id": "t"}},
            "configuration": {"history_length": 1, "return_immediately": true},
        });
        let renamed = with_json_names(sent).unwrap();
        assert_eq!(
            renamed,
            json!({
                "message": {"messageId": "m-1", "contextId": "c", "role": "ROLE_USER",
                            "parts": [{"text": "x", "mediaType": "text/plain"},
                                      {"data": {"invoice_id": "INV-1", "line_items": [{"unit_price": 3}]}}],
                            "metadata": {"trace_id": "t"}},
                "configuration": {"historyLength": 1, "returnImmediately": true},
            })
        );
    }

    #[test]
    fn a_field_under_both_names_is_refused() {
        let error = with_json_names(json!({"taskId": "a", "task_id": "b"})).unwrap_err();
        assert!(error.message.contains("taskId is given twice"), "{error:?}");
    }
}
