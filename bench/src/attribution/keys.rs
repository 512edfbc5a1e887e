//! Partition keys out of items and requests: the partition an item's entry sits in, and the
//! partition a `Query`'s key condition names.

use serde_json::Value;

/// A key attribute's value as text (the table's keys are strings; numbers are kept as written).
fn scalar(value: &Value) -> Option<&str> {
    value
        .get("S")
        .or_else(|| value.get("N"))
        .and_then(Value::as_str)
}

/// The partition of `item` under the hash attributes `hash`: their values joined by `|` (an
/// index may have several); `None` when one is missing.
pub fn partition_of(item: &Value, hash: &[String]) -> Option<String> {
    let values: Option<Vec<&str>> = hash
        .iter()
        .map(|name| item.get(name).and_then(scalar))
        .collect();
    values.map(|values| values.join("|"))
}

/// Whether `item` has an entry under the key attributes `key` (a sparse index holds only the
/// items that have every one of them).
pub fn has_entry(item: &Value, key: &[String]) -> bool {
    !item.is_null()
        && key
            .iter()
            .all(|name| item.get(name).and_then(scalar).is_some())
}

/// The partition a `Query` request reads, under the hash attributes `hash` of the table or
/// index it names: the value its key condition sets each of them equal to, joined by `|`.
pub fn query_partition(request: &Value, hash: &[String]) -> Option<String> {
    let condition = request["KeyConditionExpression"].as_str()?;
    let spaced: String = condition
        .chars()
        .flat_map(|c| match c {
            '(' | ')' | ',' => vec![' '],
            '=' => vec![' ', '=', ' '],
            c => vec![c],
        })
        .collect();
    let tokens: Vec<&str> = spaced.split_whitespace().collect();
    let name = |token: &str| -> String {
        match token.strip_prefix('#') {
            Some(_) => request["ExpressionAttributeNames"][token]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            None => token.to_owned(),
        }
    };
    let value = |token: &str| scalar(&request["ExpressionAttributeValues"][token]);
    let equal_to = |attribute: &String| {
        tokens.windows(3).find_map(|window| match window {
            [left, "=", right] if name(left) == *attribute && right.starts_with(':') => {
                value(right)
            }
            [left, "=", right] if name(right) == *attribute && left.starts_with(':') => value(left),
            _ => None,
        })
    };
    let values: Option<Vec<&str>> = hash.iter().map(equal_to).collect();
    values.map(|values| values.join("|"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attributes(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn a_query_reads_the_partition_its_hash_attributes_equal() {
        let request = json!({
            "IndexName": "gsi1",
            "KeyConditionExpression": "gsi1pk = :queue AND gsi1sk <= :now",
            "ExpressionAttributeValues": {":queue": {"S": "QUEUE#a1"}, ":now": {"S": "2026"}},
        });
        assert_eq!(
            query_partition(&request, &attributes(&["gsi1pk"])).as_deref(),
            Some("QUEUE#a1")
        );
        // Not the range attribute, which is compared, not set equal.
        assert_eq!(query_partition(&request, &attributes(&["gsi1sk"])), None);
    }

    #[test]
    fn names_values_either_side_and_several_hash_attributes_are_read() {
        let request = json!({
            "KeyConditionExpression": "(#due=:due) AND :shard = #shard AND begins_with(sk, :p)",
            "ExpressionAttributeNames": {"#due": "words_due", "#shard": "shard"},
            "ExpressionAttributeValues": {
                ":due": {"S": "due"}, ":shard": {"S": "3"}, ":p": {"S": "x"}
            },
        });
        assert_eq!(
            query_partition(&request, &attributes(&["words_due", "shard"])).as_deref(),
            Some("due|3")
        );
    }

    #[test]
    fn an_item_has_an_entry_only_with_every_key_attribute() {
        let queued =
            json!({"pk": {"S": "TASK#1"}, "gsi1pk": {"S": "QUEUE#a"}, "gsi1sk": {"S": "1"}});
        let claimed = json!({"pk": {"S": "TASK#1"}});
        let gsi1 = attributes(&["gsi1pk", "gsi1sk"]);
        assert!(has_entry(&queued, &gsi1));
        assert!(!has_entry(&claimed, &gsi1));
        assert!(!has_entry(&Value::Null, &gsi1));
        assert_eq!(
            partition_of(&queued, &attributes(&["gsi1pk"])).as_deref(),
            Some("QUEUE#a")
        );
        assert_eq!(partition_of(&claimed, &attributes(&["gsi1pk"])), None);
    }
}
