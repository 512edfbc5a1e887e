//! The words a task search matches (`GET /v1/tasks?q=`): how message text and structured data
//! become words, and how a query's `q` does.
//!
//! A word is a Unicode word (UAX #29 word boundaries, keeping only segments with a letter or a
//! digit), lower-cased with Unicode's default case mapping, and cut to [`MAX_WORD_CHARS`]
//! characters. A text part contributes its text; a data part its JSON text (so `4182` finds
//! `{"orderId": 4182}`, and keys are words too); a file part its name, media type and URI. The
//! same rules read `q`, so quotes and other punctuation in a query only separate words.

use std::collections::BTreeSet;

use serde_json::Value;
use unicode_segmentation::UnicodeSegmentation;

/// The longest word kept, in characters; a longer one is kept as its first this many.
pub const MAX_WORD_CHARS: usize = 64;
/// The most distinct words one task is found by: its messages' words in the order they were
/// written, the first this many.
pub const MAX_TASK_WORDS: usize = 1_000;
/// The most distinct words one query may name.
pub const MAX_QUERY_WORDS: usize = 8;

/// The words of `text`, in order, repeats included.
pub fn words_of_text(text: &str) -> impl Iterator<Item = String> + '_ {
    text.unicode_words()
        .filter(|word| word.chars().any(char::is_alphanumeric))
        .map(|word| word.to_lowercase().chars().take(MAX_WORD_CHARS).collect())
}

/// The words of a message or artifact list as a task stores it (its JSON value): every string
/// under a `text` key, the JSON text under a `data` key, and a file's strings.
pub fn words_of_stored(value: &Value) -> Vec<String> {
    let mut words = Vec::new();
    collect_part_words(value, &mut words);
    words
}

fn collect_part_words(value: &Value, words: &mut Vec<String>) {
    match value {
        Value::Array(items) => items
            .iter()
            .for_each(|item| collect_part_words(item, words)),
        Value::Object(fields) => {
            for (name, field) in fields {
                match (name.as_str(), field) {
                    ("text", Value::String(text)) => words.extend(words_of_text(text)),
                    ("data", data) => collect_data_words(data, words),
                    // A `data:` URI holds the file's bytes, not words of the message.
                    ("file", Value::Object(file)) => file
                        .values()
                        .filter_map(Value::as_str)
                        .filter(|text| !text.starts_with("data:"))
                        .for_each(|text| words.extend(words_of_text(text))),
                    ("parts", parts) => collect_part_words(parts, words),
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// The words of a data part's value as its JSON text reads, without the JSON syntax: each key,
/// each string and each number, `true`, `false` and `null`, in document order. A string is read
/// as the text it holds, not as its escaped form, so `"Rotterdam\nNL"` gives `rotterdam` and
/// `nl`, never `nnl`.
fn collect_data_words(value: &Value, words: &mut Vec<String>) {
    match value {
        Value::Object(fields) => {
            for (name, field) in fields {
                words.extend(words_of_text(name));
                collect_data_words(field, words);
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| collect_data_words(item, words)),
        Value::String(text) => words.extend(words_of_text(text)),
        scalar => words.extend(words_of_text(&scalar.to_string())),
    }
}

/// A task's word set as it grows: distinct words in the order they were first written, at most
/// [`MAX_TASK_WORDS`], the earliest kept when there are more.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskWords {
    in_order: Vec<String>,
    seen: BTreeSet<String>,
}

impl TaskWords {
    pub fn from_known(words: impl IntoIterator<Item = String>) -> TaskWords {
        let mut set = TaskWords::default();
        set.add(words);
        set
    }

    /// Adds words in the order given while there is room.
    pub fn add(&mut self, words: impl IntoIterator<Item = String>) {
        for word in words {
            if self.in_order.len() >= MAX_TASK_WORDS {
                return;
            }
            if !self.seen.contains(&word) {
                self.seen.insert(word.clone());
                self.in_order.push(word);
            }
        }
    }

    pub fn contains(&self, word: &str) -> bool {
        self.seen.contains(word)
    }

    /// These words but those of `known`, in the same order.
    pub fn without(mut self, known: &TaskWords) -> TaskWords {
        self.in_order.retain(|word| !known.contains(word));
        self.seen.retain(|word| !known.contains(word));
        self
    }

    /// The words in the order they were first written.
    pub fn iter(&self) -> impl Iterator<Item = &String> {
        self.in_order.iter()
    }

    pub fn len(&self) -> usize {
        self.in_order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.in_order.is_empty()
    }
}

/// The words of a query's `q`: every one must be in the task (in any of its messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryWords(Vec<String>);

impl QueryWords {
    /// Reads `q`'s first [`MAX_QUERY_WORDS`] distinct words; it must hold at least one. The
    /// words after those are not read: a search checks each word on every task it meets, so
    /// reading at most that many bounds what one search costs, whatever `q` holds (no schema
    /// can count words as this reads them, so a longer `q` is served, not refused).
    pub fn parse(q: &str) -> Result<QueryWords, String> {
        let mut words: Vec<String> = Vec::new();
        for word in words_of_text(q) {
            if words.len() == MAX_QUERY_WORDS {
                break;
            }
            if !words.contains(&word) {
                words.push(word);
            }
        }
        if words.is_empty() {
            return Err("q must hold at least one word (letters or digits)".into());
        }
        Ok(QueryWords(words))
    }

    /// The word whose postings a search walks: the longest (a long word is rarely common),
    /// the first of equals.
    pub fn driver(&self) -> &str {
        self.0
            .iter()
            .fold(&self.0[0], |best, word| {
                if word.chars().count() > best.chars().count() {
                    word
                } else {
                    best
                }
            })
            .as_str()
    }

    /// The words other than the driver, each checked on every candidate.
    pub fn others(&self) -> impl Iterator<Item = &str> {
        let driver = self.driver();
        self.0
            .iter()
            .map(String::as_str)
            .filter(move |word| *word != driver)
    }

    pub fn all(&self) -> &[String] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn words(text: &str) -> Vec<String> {
        words_of_text(text).collect()
    }

    #[test]
    fn words_are_unicode_words_lower_cased_without_punctuation() {
        assert_eq!(
            words("Refunded $42.00 to card ending 4242, INV-2026-0912!"),
            ["refunded", "42.00", "to", "card", "ending", "4242", "inv", "2026", "0912"]
        );
        assert_eq!(words("Größe ÉCOLE naïve"), ["größe", "école", "naïve"]);
        assert_eq!(words("invoice_id can't"), ["invoice_id", "can't"]);
        assert_eq!(words("東京 in 2026"), ["東", "京", "in", "2026"]);
        assert!(words("--- ... !!!").is_empty());
    }

    #[test]
    fn a_word_is_whole_so_a_prefix_is_another_word() {
        let refunded = words("Refunded");
        assert!(!refunded.contains(&"refund".to_owned()));
        assert_eq!(refunded, ["refunded"]);
    }

    #[test]
    fn the_bytes_a_data_uri_holds_are_not_words() {
        let stored = json!({"parts": [
            {"file": {"uri": "data:text/plain;base64,aW52b2ljZSBtYXJjaA==", "name": "march.txt"}}
        ]});
        assert_eq!(words_of_stored(&stored), ["march.txt"]);
    }

    #[test]
    fn long_words_are_cut_to_the_limit() {
        let long = "x".repeat(MAX_WORD_CHARS + 10);
        assert_eq!(words(&long), ["x".repeat(MAX_WORD_CHARS)]);
    }

    #[test]
    fn structured_data_is_searched_as_its_json_text() {
        let stored = json!({"role": "user", "parts": [
            {"text": "Classify"},
            {"data": {"orderId": 4182, "lines": [{"sku": "AB-1"}]}},
            {"file": {"uri": "s3://bucket/invoice.pdf", "name": "March invoice"}}
        ]});
        let found = words_of_stored(&stored);
        for expected in [
            "classify",
            "orderid",
            "4182",
            "sku",
            "ab",
            "1",
            "invoice.pdf",
            "march",
        ] {
            assert!(
                found.contains(&expected.to_owned()),
                "{expected} in {found:?}"
            );
        }
        assert!(
            !found.contains(&"user".to_owned()),
            "the role is not a word"
        );
    }

    #[test]
    fn a_string_in_data_gives_the_words_it_holds_not_its_escaped_form() {
        let stored = json!({"parts": [
            {"data": {"note": "Rotterdam\nNL\t\"quoted\" \\path"}},
            {"data": {"flags": [true, null, 4.5]}}
        ]});
        assert_eq!(
            words_of_stored(&stored),
            [
                "note",
                "rotterdam",
                "nl",
                "quoted",
                "path",
                "flags",
                "true",
                "null",
                "4.5"
            ]
        );
    }

    #[test]
    fn stored_artifact_lists_give_their_parts_words() {
        let artifacts = json!([{"name": "response", "parts": [{"text": "Rotterdam port"}]}]);
        assert_eq!(words_of_stored(&artifacts), ["rotterdam", "port"]);
    }

    #[test]
    fn a_tasks_words_are_distinct_and_bounded() {
        let mut words = TaskWords::from_known(["b".to_owned(), "a".to_owned(), "b".to_owned()]);
        assert_eq!(words.len(), 2);
        words.add((0..2 * MAX_TASK_WORDS).map(|n| format!("w{n}")));
        assert_eq!(words.len(), MAX_TASK_WORDS);
        assert!(words.contains("w0") && !words.contains(&format!("w{MAX_TASK_WORDS}")));
    }

    #[test]
    fn a_tasks_words_keep_the_order_they_were_first_written_in() {
        let words = TaskWords::from_known(["zeta", "alpha", "zeta", "mu"].map(String::from));
        assert_eq!(words.iter().collect::<Vec<_>>(), ["zeta", "alpha", "mu"]);
        let known = TaskWords::from_known(["alpha".to_owned()]);
        let left = words.without(&known);
        assert_eq!(left.iter().collect::<Vec<_>>(), ["zeta", "mu"]);
        assert!(!left.contains("alpha") && left.contains("mu"));
    }

    #[test]
    fn a_query_needs_words_and_reads_its_first_eight_distinct_ones() {
        assert!(QueryWords::parse("  \"\" ").is_err());
        assert!(QueryWords::parse("-- ...").is_err());
        for (q, read) in [
            ("a b c d e f g h i j", "a b c d e f g h"),
            ("A a b B c d e f g h i", "a b c d e f g h"),
            ("i a b c d e f g h", "i a b c d e f g"),
            (
                "\"net 30\" -- ... net 30 a b c d e f g",
                "net 30 a b c d e f",
            ),
            ("🇳🇱 a b c d e f g h 🇧🇪 i", "a b c d e f g h"),
        ] {
            let words = QueryWords::parse(q).unwrap();
            assert_eq!(words.all().join(" "), read, "{q:?}");
        }
        let query = QueryWords::parse("\"Shipment\" to ROTTERDAM shipment").unwrap();
        assert_eq!(query.all(), ["shipment", "to", "rotterdam"]);
        assert_eq!(query.driver(), "rotterdam");
        assert_eq!(query.others().collect::<Vec<_>>(), ["shipment", "to"]);
    }
}
