//! RFC 8785 JSON Canonicalization (JCS) for the documents this gateway signs, by the
//! `serde_json_canonicalizer` crate: object members sorted by their UTF-16 code units, no
//! insignificant white space, strings escaped minimally, and numbers written as ECMAScript
//! writes an IEEE 754 double (`1.0` as `1`, `1e21` as `1e+21`).

use serde_json::Value;

/// The canonical text of `value`.
#[allow(
    clippy::expect_used,
    reason = "canonicalization fails only on a non-finite number or a map key that is not a \
              string, and a serde_json Value holds neither"
)]
pub fn canonicalize(value: &Value) -> String {
    serde_json_canonicalizer::to_string(value).expect("a JSON value always canonicalizes")
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

    #[test]
    fn numbers_are_written_as_ecmascript_writes_doubles() {
        // The number samples of RFC 8785 section 3.2.2.3 and appendix B.
        let value: Value = serde_json::from_str(
            r#"{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001,
                1.0, -0.0, 1e21, 1e20, 1e-7, 0.000001, 9007199254740991]}"#,
        )
        .unwrap();
        assert_eq!(
            canonicalize(&value),
            r#"{"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27,1,0,1e+21,100000000000000000000,1e-7,0.000001,9007199254740991]}"#
        );
    }
}
