//! The [`TestApp`] helpers that reach the test's table directly, past the API: reading what was
//! written, and writing what only an older version or a fault could have left.

use crate::{dynamodb_client, dynamodb_endpoint, Pair, TestApp};

impl TestApp {
    /// The pair's caller and callee as the store holds them.
    pub async fn agents_of(
        &self,
        pair: &Pair,
    ) -> (forgebench::domain::Agent, forgebench::domain::Agent) {
        let store = &self.app.store;
        let tenant = pair.tenant.id.clone().into();
        let read = |id: &str| {
            let (store, tenant, agent) = (store, &tenant, forgebench::domain::AgentRef::parse(id));
            async move {
                store
                    .find_agent(tenant, &agent)
                    .await
                    .expect("the agent read")
                    .expect("the agent exists")
            }
        };
        (read(&pair.caller.id).await, read(&pair.callee.id).await)
    }

    /// Every item of the test's table, for asserting what was (not) written.
    pub async fn scan_all(
        &self,
    ) -> Vec<std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>> {
        let client = dynamodb_client(&dynamodb_endpoint()).await;
        client
            .scan()
            .table_name(&self.table)
            .into_paginator()
            .items()
            .send()
            .collect::<Result<Vec<_>, _>>()
            .await
            .expect("scan")
    }

    /// A raw update of a stored task item, for a test that needs one as an older version or a
    /// fault could have left it (nothing the API itself would write).
    pub fn update_task_item(
        &self,
        task_id: &str,
    ) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
        use aws_sdk_dynamodb::types::AttributeValue;
        self.app
            .store
            .client()
            .update_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(format!("TASK#{task_id}")))
            .key("sk", AttributeValue::S("TASK".into()))
    }

    /// Flags the task's word index due, as a write whose indexing failed leaves it.
    pub async fn flag_words_due(&self, task_id: &str) {
        let shard = task_id.chars().next().unwrap_or('0').to_string();
        self.update_task_item(task_id)
            .update_expression("SET words_due = :due, #shard = :shard")
            .expression_attribute_names("#shard", "shard")
            .expression_attribute_values(
                ":due",
                aws_sdk_dynamodb::types::AttributeValue::S("due".into()),
            )
            .expression_attribute_values(
                ":shard",
                aws_sdk_dynamodb::types::AttributeValue::S(shard),
            )
            .send()
            .await
            .expect("the due flag set");
    }
}
