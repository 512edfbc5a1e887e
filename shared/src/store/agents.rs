//! Agents, stored under their id and under their tenant and name with the same attributes.

use crate::domain::ids::{AgentId, TenantId};
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};

use super::item::{json, key, n, opt_s, s, Item, Reader};
use super::layout::{
    agent_name_of_sort_key, agent_name_sort_key, agent_partition, tenant_partition,
    AGENT_NAME_SORT_PREFIX, AGENT_SORT_KEY,
};
use super::tenancy::CountBound;
use super::{classify, committed, AuditEntry, Store, StoreError};
use crate::domain::{Agent, AgentRef, AgentStatus};

pub(super) fn id_key(agent_id: &AgentId) -> Item {
    key(agent_partition(agent_id), AGENT_SORT_KEY)
}

pub(super) fn name_key(tenant_id: &TenantId, name: &str) -> Item {
    key(tenant_partition(tenant_id), agent_name_sort_key(name))
}

fn attributes(agent: &Agent) -> Item {
    let mut item = Item::new();
    item.insert("kind".into(), s("agent"));
    item.insert("id".into(), s(&agent.id));
    item.insert("tenant_id".into(), s(&agent.tenant_id));
    item.insert("name".into(), s(&agent.name));
    item.insert("description".into(), opt_s(agent.description.as_deref()));
    item.insert(
        "owner_member_id".into(),
        opt_s(agent.owner_member_id.as_deref()),
    );
    item.insert("status".into(), s(agent.status.as_str()));
    item.insert(
        "endpoint".into(),
        match &agent.endpoint {
            Some(endpoint) => json(endpoint),
            None => AttributeValue::Null(true),
        },
    );
    item.insert(
        "endpoint_secret".into(),
        opt_s(agent.sealed_secret.as_deref()),
    );
    item.insert(
        "claim_timeout_seconds".into(),
        n(agent.claim_timeout_seconds),
    );
    // Only declared modes are stored: an agent without them follows the gateway's defaults.
    if agent.input_modes != crate::domain::media::default_input_modes() {
        item.insert(
            "input_modes".into(),
            AttributeValue::L(agent.input_modes.iter().map(s).collect()),
        );
    }
    item.insert("created_at".into(), s(&agent.created_at));
    item.insert("updated_at".into(), s(&agent.updated_at));
    item.insert("version".into(), n(agent.version));
    item
}

impl TryFrom<&Item> for Agent {
    type Error = StoreError;

    fn try_from(item: &Item) -> Result<Agent, StoreError> {
        let read = Reader(item);
        let status = read.s("status")?;
        Ok(Agent {
            id: read.id("id")?,
            tenant_id: read.id("tenant_id")?,
            name: read.s("name")?,
            description: read.opt_s("description")?,
            owner_member_id: read.opt_id("owner_member_id")?,
            status: AgentStatus::parse(&status)
                .map_err(|_| StoreError::Corrupt(format!("agent status {status:?}")))?,
            endpoint: read.opt_json("endpoint")?,
            sealed_secret: read.opt_s("endpoint_secret")?,
            claim_timeout_seconds: read.n("claim_timeout_seconds")?,
            input_modes: read_input_modes(&read)?,
            created_at: read.at("created_at")?,
            updated_at: read.at("updated_at")?,
            version: read.n("version")?,
            push_held_until: read.opt_n("push_held_until")?,
        })
    }
}

/// The media ranges an agent declared, or the defaults when it declared none.
fn read_input_modes(read: &Reader<'_>) -> Result<Vec<String>, StoreError> {
    match read.0.get("input_modes") {
        None => Ok(crate::domain::media::default_input_modes()),
        Some(AttributeValue::L(modes)) => modes
            .iter()
            .map(|mode| match mode {
                AttributeValue::S(mode) => Ok(mode.clone()),
                _ => Err(StoreError::Corrupt("agent input mode".into())),
            })
            .collect(),
        Some(_) => Err(StoreError::Corrupt("agent input_modes".into())),
    }
}

/// Both stored copies of `agent`, as one item each.
fn copies(agent: &Agent) -> [Item; 2] {
    let mut by_id = id_key(&agent.id);
    by_id.extend(attributes(agent));
    let mut by_name = name_key(&agent.tenant_id, &agent.name);
    by_name.extend(attributes(agent));
    [by_id, by_name]
}

/// Why a new agent was not created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentRefusal {
    /// The tenant has an agent of that name.
    NameTaken,
    /// The tenant holds its most agents that are not retired.
    TenantFull,
}

#[derive(Clone, Copy)]
enum Slot {
    Agent,
    Count,
}

impl Store {
    /// Creates an agent and counts it on its tenant (`live_agents`), only while the tenant
    /// holds fewer than `max_agents` that are not retired; nothing is written otherwise.
    pub async fn create_agent(
        &self,
        agent: &Agent,
        audit: &AuditEntry,
        max_agents: u64,
    ) -> Result<Result<(), AgentRefusal>, StoreError> {
        let [by_id, by_name] = copies(agent);
        let count = self.count_on_tenant(
            &agent.tenant_id,
            "live_agents",
            1,
            CountBound::Below(max_agents),
        )?;
        let items = vec![
            (Slot::Agent, self.put_new(by_id)?),
            (Slot::Agent, self.put_new(by_name)?),
            (Slot::Agent, self.put_new(audit.to_item())?),
            (Slot::Count, count),
        ];
        Ok(match self.transact_slots(items).await? {
            Ok(()) => Ok(()),
            Err(failed) => Err(match failed.slot {
                Slot::Agent => AgentRefusal::NameTaken,
                Slot::Count => AgentRefusal::TenantFull,
            }),
        })
    }

    /// The write that takes a retired agent off its tenant's count of agents.
    pub(crate) fn uncount_agent(&self, agent: &Agent) -> Result<TransactWriteItem, StoreError> {
        self.count_on_tenant(&agent.tenant_id, "live_agents", -1, CountBound::None)
    }

    /// Replaces both copies of an agent whose stored version is `agent.version - 1`. Returns
    /// `false`, writing nothing, when another write got there first.
    pub async fn update_agent(
        &self,
        agent: &Agent,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        self.update_agent_with(agent, audit, Vec::new()).await
    }

    /// [`Store::update_agent`], with `also` in the same transaction (the agent's keys, when its
    /// status changes).
    pub async fn update_agent_with(
        &self,
        agent: &Agent,
        audit: &AuditEntry,
        also: Vec<TransactWriteItem>,
    ) -> Result<bool, StoreError> {
        let expected = agent.version.saturating_sub(1);
        let mut items = Vec::with_capacity(2);
        for copy in copies(agent) {
            let put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(copy))
                .condition_expression("version = :expected")
                .expression_attribute_values(":expected", n(expected))
                .build()
                .map_err(|error| StoreError::Rejected(error.to_string()))?;
            items.push(TransactWriteItem::builder().put(put).build());
        }
        items.push(self.put_new(audit.to_item())?);
        items.extend(also);
        let updated = self.transact_if(items).await;
        self.recent_agents.forget(agent.id.as_str());
        updated
    }

    /// The writes that move both copies of `seen` to its next version, while it is as read and
    /// not retired: a write beside the agent's (a new key) that its status changes must see.
    pub(crate) fn agent_moved_on(
        &self,
        seen: &Agent,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let keys = [id_key(&seen.id), name_key(&seen.tenant_id, &seen.name)];
        keys.into_iter()
            .map(|key| {
                let update = Update::builder()
                    .table_name(&self.table)
                    .set_key(Some(key))
                    .update_expression("SET version = :next")
                    .condition_expression("version = :seen AND #status <> :retired")
                    .expression_attribute_names("#status", "status")
                    .expression_attribute_values(":seen", n(seen.version))
                    .expression_attribute_values(":next", n(seen.version + 1))
                    .expression_attribute_values(":retired", s(AgentStatus::Retired.as_str()))
                    .build()
                    .map_err(|error| StoreError::Rejected(error.to_string()))?;
                Ok(TransactWriteItem::builder().update(update).build())
            })
            .collect()
    }

    /// Marks agent `agent_id` (named `name` in its tenant) so that its new push tasks wait on
    /// the outbox from their open until `until` (seconds since the epoch), on both its copies,
    /// unless a mark as late stands. Whether either copy took it.
    pub async fn hold_new_deliveries(
        &self,
        tenant_id: &TenantId,
        agent_id: &AgentId,
        name: &str,
        until: u64,
    ) -> Result<bool, StoreError> {
        let marks = [id_key(agent_id), name_key(tenant_id, name)].map(|key| {
            self.client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key))
                .update_expression("SET push_held_until = :until")
                .condition_expression(
                    "id = :id AND (attribute_not_exists(push_held_until) \
                     OR push_held_until < :until)",
                )
                .expression_attribute_values(":id", s(agent_id))
                .expression_attribute_values(":until", n(until))
                .send()
        });
        let [by_id, by_name] = marks;
        let (by_id, by_name) = tokio::join!(by_id, by_name);
        Ok(committed(by_id)? | committed(by_name)?)
    }

    /// The agent `id`, as this process read it less than `ttl` ago, or read now. A change made
    /// through this process is seen at once; one made elsewhere within `ttl`.
    pub async fn recent_agent(
        &self,
        id: &AgentId,
        ttl: std::time::Duration,
    ) -> Result<Option<Agent>, StoreError> {
        if let Some(agent) = self.recent_agents.get(id.as_str(), ttl) {
            return Ok(Some(agent));
        }
        let agent = self.get_agent_at(id_key(id)).await?;
        if let Some(agent) = &agent {
            self.recent_agents
                .put(id.as_str().to_owned(), agent.clone());
        }
        Ok(agent)
    }

    async fn get_agent_at(&self, key: Item) -> Result<Option<Agent>, StoreError> {
        let output = self.get(key).await?;
        output.as_ref().map(Agent::try_from).transpose()
    }

    /// The agent `reference` names, as seen from `tenant_id`. An id resolves across tenants (the
    /// caller decides what another tenant's agent means); a name only within the tenant.
    pub async fn find_agent(
        &self,
        tenant_id: &TenantId,
        reference: &AgentRef,
    ) -> Result<Option<Agent>, StoreError> {
        match reference {
            AgentRef::Id(id) => {
                self.get_agent_at(id_key(&AgentId::from(id.to_string())))
                    .await
            }
            AgentRef::Name(name) => self.get_agent_at(name_key(tenant_id, name.as_str())).await,
            AgentRef::Unknown => Ok(None),
        }
    }

    /// Every agent of a tenant, by name.
    /// Up to `limit` of a tenant's agents by name, after the one named `after`; with the name
    /// to continue after when the store holds more.
    pub async fn list_agents_page(
        &self,
        tenant_id: &TenantId,
        after: Option<&str>,
        limit: i32,
    ) -> Result<(Vec<Agent>, Option<String>), StoreError> {
        let pk = tenant_partition(tenant_id);
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
            .expression_attribute_values(":pk", s(&pk))
            .expression_attribute_values(":prefix", s(AGENT_NAME_SORT_PREFIX))
            .consistent_read(true)
            .limit(limit);
        if let Some(after) = after {
            query = query.set_exclusive_start_key(Some(key(pk, agent_name_sort_key(after))));
        }
        let output = query.send().await.map_err(classify)?;
        let agents = super::page::decoded(output.items(), "agents", Agent::try_from);
        let next = output
            .last_evaluated_key()
            .and_then(|last| Reader(last).s("sk").ok())
            .and_then(|sk| agent_name_of_sort_key(&sk).map(str::to_owned));
        Ok((agents, next))
    }

    pub async fn list_agents(&self, tenant_id: &TenantId) -> Result<Vec<Agent>, StoreError> {
        let items = self
            .query_prefix(tenant_partition(tenant_id), AGENT_NAME_SORT_PREFIX)
            .await?;
        items.iter().map(Agent::try_from).collect()
    }
}
