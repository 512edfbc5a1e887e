//! The table's keys and indexes as attribution needs them, read from the deployment
//! template's table definition (`forgebench::store::schema::TableSchema`).

use forgebench::store::schema::TableSchema;
use serde_json::{Map, Value};

/// The place name of the table itself (an index's place is its name).
pub const TABLE: &str = "table";

/// What an index entry holds besides its keys.
#[derive(Debug, Clone, PartialEq)]
pub enum Projection {
    All,
    KeysOnly,
    Include(Vec<String>),
}

/// One index: its name, its hash attributes (the partition; an index may have several), all
/// its key attributes (an item without one of them has no entry) and its projection.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexLayout {
    pub name: String,
    pub hash: Vec<String>,
    pub key: Vec<String>,
    pub projection: Projection,
}

/// The table's key attributes and its indexes.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub hash: Vec<String>,
    pub key: Vec<String>,
    pub indexes: Vec<IndexLayout>,
}

fn names(pairs: &[(String, String)], kind: Option<&str>) -> Vec<String> {
    pairs
        .iter()
        .filter(|(_, key_type)| kind.is_none_or(|kind| key_type == kind))
        .map(|(name, _)| name.clone())
        .collect()
}

impl From<&TableSchema> for Layout {
    fn from(schema: &TableSchema) -> Layout {
        Layout {
            hash: names(&schema.key, Some("HASH")),
            key: names(&schema.key, None),
            indexes: schema
                .indexes
                .iter()
                .map(|index| IndexLayout {
                    name: index.name.clone(),
                    hash: names(&index.key, Some("HASH")),
                    key: names(&index.key, None),
                    projection: match index.projection.as_str() {
                        "KEYS_ONLY" => Projection::KeysOnly,
                        "INCLUDE" => Projection::Include(index.non_key.clone()),
                        _ => Projection::All,
                    },
                })
                .collect(),
        }
    }
}

impl Layout {
    /// The deployed table's layout (`infra/template.yaml`).
    pub fn deployed() -> Layout {
        Layout::from(&TableSchema::deployed().expect("the template's table"))
    }

    /// The index named `name`.
    pub fn index(&self, name: &str) -> Option<&IndexLayout> {
        self.indexes.iter().find(|index| index.name == name)
    }

    /// The hash attributes of `place` (the table or an index).
    pub fn hash_of(&self, place: &str) -> Option<&[String]> {
        match place {
            TABLE => Some(&self.hash),
            name => self.index(name).map(|index| index.hash.as_slice()),
        }
    }

    /// What `index`'s entry of `item` holds: the attributes it projects.
    pub fn projected(&self, index: &IndexLayout, item: &Value) -> Value {
        let kept = |name: &String| match &index.projection {
            Projection::All => true,
            Projection::KeysOnly => self.key.contains(name) || index.key.contains(name),
            Projection::Include(more) => {
                self.key.contains(name) || index.key.contains(name) || more.contains(name)
            }
        };
        item.as_object()
            .into_iter()
            .flatten()
            .filter(|(name, _)| kept(name))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect::<Map<String, Value>>()
            .into()
    }
}
