//! Creates the state table from the SAM template's own `Table` resource, so the local stack and
//! a deployed stack have the same keys and indexes by construction.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType,
};
use serde_norway::Value;

use super::{classify, Store, StoreError};

/// The deployment template, compiled in.
pub const TEMPLATE: &str = include_str!("../../../infra/template.yaml");

/// The table definition read from the template.
#[derive(Debug, Clone, PartialEq)]
pub struct TableSchema {
    pub attributes: Vec<(String, String)>,
    pub key: Vec<(String, String)>,
    pub indexes: Vec<IndexSchema>,
}

/// One global secondary index of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexSchema {
    pub name: String,
    pub key: Vec<(String, String)>,
    pub projection: String,
    /// The attributes an `INCLUDE` projection adds to the keys.
    pub non_key: Vec<String>,
}

fn text(value: &Value, field: &str) -> Result<String, String> {
    value
        .get(field)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("template: {field} missing"))
}

fn pairs(
    value: Option<&Value>,
    first: &str,
    second: &str,
) -> Result<Vec<(String, String)>, String> {
    value
        .and_then(Value::as_sequence)
        .ok_or_else(|| format!("template: list of {first}/{second} missing"))?
        .iter()
        .map(|entry| Ok((text(entry, first)?, text(entry, second)?)))
        .collect()
}

impl TableSchema {
    /// Reads the `Table` resource of a SAM/CloudFormation template.
    pub fn from_template(template: &str) -> Result<TableSchema, String> {
        let document: Value =
            serde_norway::from_str(template).map_err(|error| format!("template: {error}"))?;
        let properties = document
            .get("Resources")
            .and_then(|resources| resources.get("Table"))
            .and_then(|table| table.get("Properties"))
            .ok_or("template: Resources.Table.Properties missing")?;
        let indexes = properties
            .get("GlobalSecondaryIndexes")
            .and_then(Value::as_sequence)
            .map(|indexes| {
                indexes
                    .iter()
                    .map(|index| {
                        let projection = index
                            .get("Projection")
                            .map(|projection| text(projection, "ProjectionType"))
                            .transpose()?
                            .unwrap_or_else(|| "ALL".to_owned());
                        let non_key = index
                            .get("Projection")
                            .and_then(|projection| projection.get("NonKeyAttributes"))
                            .and_then(Value::as_sequence)
                            .map(|names| {
                                names
                                    .iter()
                                    .filter_map(Value::as_str)
                                    .map(str::to_owned)
                                    .collect()
                            })
                            .unwrap_or_default();
                        Ok(IndexSchema {
                            name: text(index, "IndexName")?,
                            key: pairs(index.get("KeySchema"), "AttributeName", "KeyType")?,
                            projection,
                            non_key,
                        })
                    })
                    .collect::<Result<Vec<_>, String>>()
            })
            .transpose()?
            .unwrap_or_default();
        Ok(TableSchema {
            attributes: pairs(
                properties.get("AttributeDefinitions"),
                "AttributeName",
                "AttributeType",
            )?,
            key: pairs(properties.get("KeySchema"), "AttributeName", "KeyType")?,
            indexes,
        })
    }

    /// The schema of the template compiled into this build.
    pub fn deployed() -> Result<TableSchema, String> {
        TableSchema::from_template(TEMPLATE)
    }
}

fn key_schema(pairs: &[(String, String)]) -> Result<Vec<KeySchemaElement>, StoreError> {
    pairs
        .iter()
        .map(|(name, kind)| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(KeyType::from(kind.as_str()))
                .build()
                .map_err(|error| StoreError::Rejected(error.to_string()))
        })
        .collect()
}

impl Store {
    /// Creates the table if it does not exist yet. Returns whether it was created.
    pub async fn create_table(&self, schema: &TableSchema) -> Result<bool, StoreError> {
        let existing = self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await;
        match existing {
            Ok(_) => return Ok(false),
            Err(error) => {
                let missing = error
                    .as_service_error()
                    .is_some_and(|service| service.is_resource_not_found_exception());
                if !missing {
                    return Err(classify(error));
                }
            }
        }
        let mut request = self
            .client
            .create_table()
            .table_name(&self.table)
            .billing_mode(BillingMode::PayPerRequest)
            .set_key_schema(Some(key_schema(&schema.key)?));
        for (name, kind) in &schema.attributes {
            request = request.attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name(name)
                    .attribute_type(ScalarAttributeType::from(kind.as_str()))
                    .build()
                    .map_err(|error| StoreError::Rejected(error.to_string()))?,
            );
        }
        for index in &schema.indexes {
            request = request.global_secondary_indexes(
                GlobalSecondaryIndex::builder()
                    .index_name(&index.name)
                    .set_key_schema(Some(key_schema(&index.key)?))
                    .projection(
                        Projection::builder()
                            .projection_type(ProjectionType::from(index.projection.as_str()))
                            .set_non_key_attributes(
                                (!index.non_key.is_empty()).then(|| index.non_key.clone()),
                            )
                            .build(),
                    )
                    .build()
                    .map_err(|error| StoreError::Rejected(error.to_string()))?,
            );
        }
        match request.send().await {
            Ok(_) => Ok(true),
            Err(error)
                if error
                    .as_service_error()
                    .is_some_and(|service| service.is_resource_in_use_exception()) =>
            {
                Ok(false)
            }
            Err(error) => Err(classify(error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_defines_the_keys_and_indexes_the_code_uses() {
        let schema = TableSchema::deployed().unwrap();
        assert_eq!(
            schema.key,
            vec![("pk".into(), "HASH".into()), ("sk".into(), "RANGE".into())]
        );
        let names: Vec<&str> = schema
            .indexes
            .iter()
            .map(|index| index.name.as_str())
            .collect();
        assert_eq!(names[..2], ["gsi1", "gsi2"]);
        for index in &schema.indexes[..2] {
            assert_eq!(index.key[0].0, format!("{}pk", index.name));
            assert_eq!(index.key[1].0, format!("{}sk", index.name));
            assert_eq!(index.projection, "ALL");
        }
        // The search indexes: the partitions the code queries, their order, and what they hold.
        let strings = |names: &[&str]| names.iter().map(|name| name.to_string()).collect();
        // (name, partition, sort, projection, projected attributes)
        type Shape = (String, Vec<String>, String, String, Vec<String>);
        let expected: Vec<Shape> = vec![
            (
                "inbound_tasks".into(),
                strings(&["callee_agent_id"]),
                "created_at".into(),
                "INCLUDE".into(),
                strings(&["state", "changed_at"]),
            ),
            (
                "outbound_tasks".into(),
                strings(&["caller_agent_id"]),
                "created_at".into(),
                "INCLUDE".into(),
                strings(&["state", "changed_at", "callee_agent_id"]),
            ),
            (
                "conversation".into(),
                strings(&["context_id"]),
                "created_at".into(),
                "KEYS_ONLY".into(),
                Vec::new(),
            ),
            (
                "words_due".into(),
                strings(&["words_due", "shard"]),
                "changed_at".into(),
                "KEYS_ONLY".into(),
                Vec::new(),
            ),
        ];
        let found: Vec<Shape> = schema.indexes[2..]
            .iter()
            .map(|index| {
                let (sort, partition) = index.key.split_last().unwrap();
                assert_eq!(sort.1, "RANGE", "{}", index.name);
                assert!(
                    partition.iter().all(|(_, kind)| kind == "HASH"),
                    "{}",
                    index.name
                );
                (
                    index.name.clone(),
                    partition.iter().map(|(name, _)| name.clone()).collect(),
                    sort.0.clone(),
                    index.projection.clone(),
                    index.non_key.clone(),
                )
            })
            .collect();
        assert_eq!(found, expected);
        // The code reads them by those names and partitions.
        for index in crate::store::search::SearchIndex::examples() {
            let name = index.name().expect("an index of the table");
            let partition: Vec<String> = index
                .partition()
                .into_iter()
                .map(|(attribute, _)| attribute.to_owned())
                .collect();
            assert!(
                expected
                    .iter()
                    .any(|(known, keys, ..)| known == name && *keys == partition),
                "{name}"
            );
        }
        assert!(schema.attributes.iter().all(|(_, kind)| kind == "S"));
    }
}
