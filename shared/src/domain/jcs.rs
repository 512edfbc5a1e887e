//! RFC 8785 JSON Canonicalization (JCS) for the documents this gateway signs: object members
//! sorted by their UTF-16 code units, no insignificant white space, strings escaped minimally.
//! Numbers are written as serde_json writes them, which is the JCS form for integers; the
//! signed documents carry no fractional numbers.

use serde_json::Value;

/// The canonical text of `value`.
pub fn canonicalize(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (index, (key, value)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        // serde_json escapes exactly `"`, `\` and control characters, with the short forms
        // for \b \f \n \r \t and lowercase \u00xx otherwise, which is what JCS asks.
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn members_are_sorted_and_white_space_dropped() {
        let value = json!({"b": [1, {"z": true, "a": null}], "a": "x\u{1}\n\"é"});
        assert_eq!(
            canonicalize(&value),
            r#"{"a":"x\u0001\n\"é","b":[1,{"a":null,"z":true}]}"#
        );
    }

    #[test]
    fn keys_sort_by_utf16_not_by_utf8() {
        // U+1F600 sorts after U+FB33 in UTF-8 but before it in UTF-16, where it is the
        // surrogate pair D83D DE00 and D83D < FB33.
        let value = json!({"\u{FB33}": 2, "\u{1F600}": 1});
        assert_eq!(canonicalize(&value), "{\"\u{1F600}\":1,\"\u{FB33}\":2}");
    }
}
