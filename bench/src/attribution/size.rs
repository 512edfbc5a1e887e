//! The size of an item in DynamoDB's JSON wire form, by the store's own rule
//! (`forgebench::store::item::item_size`), and the units a read or a write of that size costs.

use std::collections::HashMap;

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use base64::Engine;
use serde_json::Value;

/// The size DynamoDB counts for `item` (a JSON item as the wire carries it; `Null` is no item,
/// size 0).
pub fn item_size(item: &Value) -> usize {
    let Some(attributes) = item.as_object() else {
        return 0;
    };
    let item: HashMap<String, AttributeValue> = attributes
        .iter()
        .map(|(name, value)| (name.clone(), attribute(value)))
        .collect();
    forgebench::store::item::item_size(&item)
}

/// One attribute value of the wire form as the SDK holds it.
fn attribute(value: &Value) -> AttributeValue {
    let strings = |list: &Value| -> Vec<String> {
        list.as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| item.as_str().map(str::to_owned))
            .collect()
    };
    let Some((kind, inner)) = value.as_object().and_then(|value| value.iter().next()) else {
        return AttributeValue::Null(true);
    };
    match kind.as_str() {
        "S" => AttributeValue::S(inner.as_str().unwrap_or_default().to_owned()),
        "N" => AttributeValue::N(inner.as_str().unwrap_or_default().to_owned()),
        "BOOL" => AttributeValue::Bool(inner.as_bool().unwrap_or_default()),
        "B" => AttributeValue::B(Blob::new(
            base64::engine::general_purpose::STANDARD
                .decode(inner.as_str().unwrap_or_default())
                .unwrap_or_default(),
        )),
        "SS" => AttributeValue::Ss(strings(inner)),
        "NS" => AttributeValue::Ns(strings(inner)),
        "L" => AttributeValue::L(
            inner
                .as_array()
                .into_iter()
                .flatten()
                .map(attribute)
                .collect(),
        ),
        "M" => AttributeValue::M(
            inner
                .as_object()
                .into_iter()
                .flatten()
                .map(|(name, value)| (name.clone(), attribute(value)))
                .collect(),
        ),
        _ => AttributeValue::Null(true),
    }
}

/// The write units a write of an item of `size` bytes costs: one per started KB, at least one.
pub fn write_units(size: usize) -> f64 {
    size.div_ceil(1024).max(1) as f64
}

/// The read units a read of an item of `size` bytes costs: one per started 4 KB strongly
/// consistent, half that eventually consistent; a read that finds nothing costs 0 here (the
/// request's minimum is the request's, not an item's).
pub fn read_units(size: usize, consistent: bool) -> f64 {
    let units = size.div_ceil(4096) as f64;
    if consistent {
        units
    } else {
        units / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_item_counts_its_names_and_values_as_the_store_does() {
        // "pk" (2) + "TASK#1" (6) + "n" (1) + 3 digits (2 + 1) + "ok" (2) + a bool (1).
        let item = json!({"pk": {"S": "TASK#1"}, "n": {"N": "123"}, "ok": {"BOOL": true}});
        assert_eq!(item_size(&item), 2 + 6 + 1 + 3 + 2 + 1);
        // A map: 3, and per entry one byte and its name and value.
        let nested = json!({"m": {"M": {"a": {"S": "xy"}}}});
        assert_eq!(item_size(&nested), 1 + 3 + 1 + 1 + 2);
        assert_eq!(item_size(&Value::Null), 0);
    }

    #[test]
    fn units_start_again_at_each_kilobyte_for_writes_and_four_for_reads() {
        assert_eq!(write_units(0), 1.0);
        assert_eq!(write_units(1024), 1.0);
        assert_eq!(write_units(1025), 2.0);
        assert_eq!(read_units(4097, true), 2.0);
        assert_eq!(read_units(4097, false), 1.0);
        assert_eq!(read_units(0, true), 0.0);
    }
}
