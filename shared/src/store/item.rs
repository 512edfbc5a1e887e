//! Small helpers to build DynamoDB items and read them back with clear errors.

use crate::domain::clock::Timestamp;
use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, ConsumedCapacity, PutRequest, WriteRequest};

use super::StoreError;

pub type Item = HashMap<String, AttributeValue>;

pub fn s(value: impl AsRef<str>) -> AttributeValue {
    AttributeValue::S(value.as_ref().to_owned())
}

pub fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

pub fn b(value: bool) -> AttributeValue {
    AttributeValue::Bool(value)
}

/// The W3C trace context of a task or call, as stored: its ids and flags as one binary value
/// (`trace`), and its `tracestate` when it has one.
pub fn insert_trace(item: &mut Item, trace: Option<&crate::domain::trace::TraceContext>) {
    let Some(trace) = trace else {
        return;
    };
    item.insert(
        "trace".into(),
        AttributeValue::B(aws_sdk_dynamodb::primitives::Blob::new(trace.to_stored())),
    );
    if let Some(state) = &trace.state {
        item.insert("tracestate".into(), s(state));
    }
}

/// A string, or NULL when absent.
pub fn opt_s(value: Option<&str>) -> AttributeValue {
    match value {
        Some(text) => AttributeValue::S(text.to_owned()),
        None => AttributeValue::Null(true),
    }
}

/// A JSON value stored as its text.
pub fn json(value: &serde_json::Value) -> AttributeValue {
    AttributeValue::S(value.to_string())
}

/// An item's size as DynamoDB counts it: attribute names plus values, with the overhead of
/// lists and maps (one byte per element, three per container) and numbers at about a byte per
/// two digits, binary values at their length. Set values other than strings are never written
/// by this store and count as too large.
pub fn item_size(item: &Item) -> usize {
    item.iter()
        .map(|(name, value)| name.len().saturating_add(value_size(value)))
        .fold(0, usize::saturating_add)
}

fn value_size(value: &AttributeValue) -> usize {
    match value {
        AttributeValue::S(text) => text.len(),
        AttributeValue::N(number) => number.len().div_ceil(2) + 1,
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::L(items) => items
            .iter()
            .map(|item| 1 + value_size(item))
            .fold(3, usize::saturating_add),
        AttributeValue::Ss(items) => items.iter().map(String::len).sum(),
        AttributeValue::B(blob) => blob.as_ref().len(),
        AttributeValue::M(map) => map
            .iter()
            .map(|(name, item)| (1 + name.len()).saturating_add(value_size(item)))
            .fold(3, usize::saturating_add),
        _ => usize::MAX / 2,
    }
}

/// The write units a put of `item` costs: one per started kilobyte of its size.
pub fn write_units(item: &Item) -> u64 {
    item_size(item).div_ceil(1024).max(1) as u64
}

/// The primary key of an item.
pub fn key(pk: impl AsRef<str>, sk: impl AsRef<str>) -> Item {
    HashMap::from([("pk".to_owned(), s(pk)), ("sk".to_owned(), s(sk))])
}

/// Reads typed attributes out of an item, naming the attribute in every error.
pub struct Reader<'a>(pub &'a Item);

impl<'a> Reader<'a> {
    pub fn s(&self, name: &str) -> Result<String, StoreError> {
        match self.0.get(name) {
            Some(AttributeValue::S(text)) => Ok(text.clone()),
            other => Err(StoreError::Corrupt(format!(
                "attribute {name}: expected a string, found {other:?}"
            ))),
        }
    }

    /// A string attribute holding a typed id.
    pub fn id<T: From<String>>(&self, name: &str) -> Result<T, StoreError> {
        self.s(name).map(T::from)
    }

    /// A string-or-null attribute holding a typed id.
    pub fn opt_id<T: From<String>>(&self, name: &str) -> Result<Option<T>, StoreError> {
        Ok(self.opt_s(name)?.map(T::from))
    }

    /// A string attribute holding a moment the store wrote.
    pub fn at(&self, name: &str) -> Result<Timestamp, StoreError> {
        self.s(name).map(Timestamp::from)
    }

    /// A string-or-null attribute holding a moment the store wrote.
    pub fn opt_at(&self, name: &str) -> Result<Option<Timestamp>, StoreError> {
        Ok(self.opt_s(name)?.map(Timestamp::from))
    }

    pub fn opt_s(&self, name: &str) -> Result<Option<String>, StoreError> {
        match self.0.get(name) {
            None | Some(AttributeValue::Null(_)) => Ok(None),
            Some(AttributeValue::S(text)) => Ok(Some(text.clone())),
            other => Err(StoreError::Corrupt(format!(
                "attribute {name}: expected a string or null, found {other:?}"
            ))),
        }
    }

    /// A binary attribute's bytes; `None` when absent.
    pub fn opt_bytes(&self, name: &str) -> Result<Option<&[u8]>, StoreError> {
        match self.0.get(name) {
            None | Some(AttributeValue::Null(_)) => Ok(None),
            Some(AttributeValue::B(blob)) => Ok(Some(blob.as_ref())),
            other => Err(StoreError::Corrupt(format!(
                "attribute {name}: expected binary, found {other:?}"
            ))),
        }
    }

    /// The trace context [`insert_trace`] stored; `None` when there is none, or none readable.
    pub fn trace(&self) -> Result<Option<crate::domain::trace::TraceContext>, StoreError> {
        let Some(bytes) = self.opt_bytes("trace")? else {
            return Ok(None);
        };
        let state = self.opt_s("tracestate")?;
        Ok(crate::domain::trace::TraceContext::from_stored(
            bytes, state,
        ))
    }

    pub fn n(&self, name: &str) -> Result<u64, StoreError> {
        match self.0.get(name) {
            Some(AttributeValue::N(number)) => number
                .parse()
                .map_err(|_| StoreError::Corrupt(format!("attribute {name}: bad number"))),
            other => Err(StoreError::Corrupt(format!(
                "attribute {name}: expected a number, found {other:?}"
            ))),
        }
    }

    /// A number attribute an item may lack: items written before it existed.
    pub fn opt_n(&self, name: &str) -> Result<Option<u64>, StoreError> {
        match self.0.get(name) {
            None => Ok(None),
            Some(_) => self.n(name).map(Some),
        }
    }

    /// A number attribute an item may lack, read as `default` when absent.
    pub fn n_or(&self, name: &str, default: u64) -> Result<u64, StoreError> {
        Ok(self.opt_n(name)?.unwrap_or(default))
    }

    /// A boolean attribute an item may lack, read as `default` when absent.
    pub fn bool_or(&self, name: &str, default: bool) -> Result<bool, StoreError> {
        match self.0.get(name) {
            None => Ok(default),
            Some(_) => self.bool(name),
        }
    }

    pub fn bool(&self, name: &str) -> Result<bool, StoreError> {
        match self.0.get(name) {
            Some(AttributeValue::Bool(value)) => Ok(*value),
            other => Err(StoreError::Corrupt(format!(
                "attribute {name}: expected a boolean, found {other:?}"
            ))),
        }
    }

    pub fn json(&self, name: &str) -> Result<serde_json::Value, StoreError> {
        let text = self.s(name)?;
        serde_json::from_str(&text)
            .map_err(|error| StoreError::Corrupt(format!("attribute {name}: bad JSON: {error}")))
    }

    pub fn opt_json(&self, name: &str) -> Result<Option<serde_json::Value>, StoreError> {
        match self.opt_s(name)? {
            None => Ok(None),
            Some(text) => serde_json::from_str(&text).map(Some).map_err(|error| {
                StoreError::Corrupt(format!("attribute {name}: bad JSON: {error}"))
            }),
        }
    }

    /// A list of JSON texts.
    pub fn json_list(&self, name: &str) -> Result<Vec<serde_json::Value>, StoreError> {
        match self.0.get(name) {
            None => Ok(Vec::new()),
            Some(AttributeValue::L(items)) => items
                .iter()
                .map(|item| match item {
                    AttributeValue::S(text) => serde_json::from_str(text).map_err(|error| {
                        StoreError::Corrupt(format!("attribute {name}: bad JSON: {error}"))
                    }),
                    other => Err(StoreError::Corrupt(format!(
                        "attribute {name}: expected JSON text, found {other:?}"
                    ))),
                })
                .collect(),
            other => Err(StoreError::Corrupt(format!(
                "attribute {name}: expected a list, found {other:?}"
            ))),
        }
    }
}

/// A builder's result, its error as the store's.
pub(crate) fn build<T, E: std::fmt::Display>(built: Result<T, E>) -> Result<T, StoreError> {
    built.map_err(|error| StoreError::Rejected(error.to_string()))
}

/// A batch write's request to put `item`.
pub(crate) fn put_request(item: Item) -> Result<WriteRequest, StoreError> {
    let put = build(PutRequest::builder().set_item(Some(item)).build())?;
    Ok(WriteRequest::builder().put_request(put).build())
}

/// Read capacity as the store reports it (none when it does not).
pub(crate) fn units(consumed: Option<&ConsumedCapacity>) -> f64 {
    consumed
        .and_then(ConsumedCapacity::capacity_units)
        .unwrap_or(0.0)
}
