//! Long-poll slots: each key holder (agent or member) may hold at most [`MAX_POLLS_PER_AGENT`]
//! waiting requests at once, and each tenant at most its configured number, across every
//! function instance, so neither one agent's thousand waiting polls nor one tenant's many agents
//! can take the deployment's concurrency. A slot is an item of a pool taken with a conditional
//! write and given back when the wait ends; a slot whose holder died frees itself when its
//! expiry passes.
//!
//! | item | pk | sk |
//! |---|---|---|
//! | a key holder's long-poll slot | `POLLS#{agent or member}` | `SLOT#{n}` |
//! | a tenant's long-poll slot | `TPOLLS#{tenant}` | `SLOT#{n}` |
//! | a tenant's push POST in flight | `TPUSH#{tenant}` | `SLOT#{n}` |
//!
//! The same pools bound a tenant's push POSTs in flight across the push workers
//! ([`SlotPool::of_tenant_pushes`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;

use super::item::{key, n, s, Reader};
use super::layout::{
    holder_polls_partition, slot_of_sort_key, slot_sort_key, tenant_polls_partition,
    tenant_pushes_partition, SLOT_SORT_PREFIX,
};
use super::{classify, Store, StoreError};
use crate::domain::clock;
use crate::domain::ids::TenantId;

/// Most long polls (`wait` > 0) one agent may hold at once.
pub const MAX_POLLS_PER_AGENT: u32 = 10;

/// How long a process remembers that a pool was full: a waiter asking again within it is
/// refused without a request to the store (unless this process gave a slot of that pool back
/// meanwhile), so a client at its limits costs the store nothing however often it asks.
const FULL_POOL_MEMORY: std::time::Duration = std::time::Duration::from_secs(1);

/// How many times a take reads which slots are free (and tries them). It answers "none free" as
/// soon as a read finds none, so a waiter refused by a full pool costs one read; it reads again
/// only when every free slot it tried was taken first by others, which under a burst of waiters
/// on one pool happened twice in a row while slots stood free (a waiter under the limit
/// refused), hence more than two, and a bound so a pool in constant churn still answers.
const TAKE_ROUNDS: usize = 8;

/// The slots one kind of waiter shares: a key holder's own, or its whole tenant's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotPool {
    pk: String,
    size: u32,
}

impl SlotPool {
    /// The [`MAX_POLLS_PER_AGENT`] slots of one key holder (an agent or a member).
    pub fn of_holder(holder_id: &str) -> SlotPool {
        SlotPool {
            pk: holder_polls_partition(holder_id),
            size: MAX_POLLS_PER_AGENT,
        }
    }

    /// The `size` slots every key holder of `tenant` shares.
    pub fn of_tenant(tenant: &TenantId, size: u32) -> SlotPool {
        SlotPool {
            pk: tenant_polls_partition(tenant),
            size: size.max(1),
        }
    }

    /// The `size` slots of `tenant`'s push POSTs in flight (task deliveries and notifications),
    /// across every worker: what keeps one tenant's slow receivers from holding every worker.
    pub fn of_tenant_pushes(tenant: &TenantId, size: u32) -> SlotPool {
        SlotPool {
            pk: tenant_pushes_partition(tenant),
            size: size.max(1),
        }
    }

    /// How many slots the pool has.
    pub fn size(&self) -> u32 {
        self.size
    }
}

/// The slots this process holds, per pool, each with when it expires (a request that never
/// gave its slot back, dropped with its connection, stops counting then, as its item does). A
/// take never tries one of them blind, and a pool this process holds whole is full without a
/// request: so a process serving many waits of one pool (the local gateway, one Lambda
/// execution environment after another) does not spend refused writes on its own slots.
#[derive(Debug, Clone, Default)]
pub(crate) struct HeldSlots(Arc<Mutex<HashMap<String, HashMap<u32, u64>>>>);

impl HeldSlots {
    /// The slots of the pool `pk` this process holds at `now`.
    fn of(&self, pk: &str, now: u64) -> Vec<u32> {
        let mut pools = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(held) = pools.get_mut(pk) else {
            return Vec::new();
        };
        held.retain(|_, expires_at| *expires_at >= now);
        let slots = held.keys().copied().collect();
        if held.is_empty() {
            pools.remove(pk);
        }
        slots
    }

    fn hold(&self, pk: &str, slot: u32, expires_at: u64) {
        let mut pools = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        pools
            .entry(pk.to_owned())
            .or_default()
            .insert(slot, expires_at);
    }

    fn give_back(&self, pk: &str, slot: u32) {
        let mut pools = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = pools.get_mut(pk) {
            held.remove(&slot);
            if held.is_empty() {
                pools.remove(pk);
            }
        }
    }
}

/// A slot this request holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PollSlot {
    pk: String,
    slot: u32,
    holder: String,
}

impl Store {
    /// Takes a free slot of `pool` for `seconds` (plus a margin), or `None` when every slot is
    /// held. It first tries one slot picked at random, blind: a pool with few slots held gives
    /// one with a single write and no read. When that slot is held it reads which slots are held
    /// (strongly consistent) and tries the free ones; others take and give back slots meanwhile,
    /// so a round whose free slots were all taken first is read again (up to [`TAKE_ROUNDS`]);
    /// the answer is "none free" when a read finds none. A pool found full is remembered for
    /// [`FULL_POOL_MEMORY`].
    pub async fn take_poll_slot(
        &self,
        pool: &SlotPool,
        seconds: u64,
    ) -> Result<Option<PollSlot>, StoreError> {
        if self.full_pools.get(&pool.pk, FULL_POOL_MEMORY).is_some() {
            return Ok(None);
        }
        let taken = self.take_free_slot(pool, seconds).await?;
        if taken.is_none() {
            self.full_pools.put(pool.pk.clone(), ());
        }
        Ok(taken)
    }

    async fn take_free_slot(
        &self,
        pool: &SlotPool,
        seconds: u64,
    ) -> Result<Option<PollSlot>, StoreError> {
        let holder = uuid::Uuid::new_v4().to_string();
        let now = clock::unix_now();
        let mine = self.held_slots.of(&pool.pk, now);
        let Some(blind) = random_slot_but(pool.size, &mine) else {
            return Ok(None);
        };
        if let Some(slot) = self.try_slot(pool, blind, &holder, seconds).await? {
            return Ok(Some(slot));
        }
        for _ in 0..TAKE_ROUNDS {
            let free = self.free_slots(pool, clock::unix_now()).await?;
            if free.is_empty() {
                return Ok(None);
            }
            for slot in free {
                if let Some(slot) = self.try_slot(pool, slot, &holder, seconds).await? {
                    return Ok(Some(slot));
                }
            }
        }
        Ok(None)
    }

    /// The slots of `pool` nobody holds at `now`, from a random one on.
    async fn free_slots(&self, pool: &SlotPool, now: u64) -> Result<Vec<u32>, StoreError> {
        let items = self.query_prefix(pool.pk.clone(), SLOT_SORT_PREFIX).await?;
        let mut held: Vec<u32> = self.held_slots.of(&pool.pk, now);
        held.extend(
            items
                .iter()
                .filter(|item| Reader(item).n("expires_at").is_ok_and(|at| at >= now))
                .filter_map(|item| slot_of_sort_key(&Reader(item).s("sk").ok()?)),
        );
        let start = random_slot(pool.size);
        Ok((0..pool.size)
            .map(|offset| (start + offset) % pool.size)
            .filter(|slot| !held.contains(slot))
            .collect())
    }

    /// One conditional write that takes `slot` of `pool` for `seconds` (plus a margin) if it is
    /// free (or its holder's time ran out): the slot, held. A write the SDK re-sent after its
    /// first try took the slot finds its own holder there: taken all the same.
    async fn try_slot(
        &self,
        pool: &SlotPool,
        slot: u32,
        holder: &str,
        seconds: u64,
    ) -> Result<Option<PollSlot>, StoreError> {
        let now = clock::unix_now();
        let until = now + seconds + 5;
        if !self.put_slot(&pool.pk, slot, holder, now, until).await? {
            return Ok(None);
        }
        self.held_slots.hold(&pool.pk, slot, until);
        Ok(Some(PollSlot {
            pk: pool.pk.clone(),
            slot,
            holder: holder.to_owned(),
        }))
    }

    /// The conditional write of [`Store::try_slot`]: whether it took the slot.
    async fn put_slot(
        &self,
        pk: &str,
        slot: u32,
        holder: &str,
        now: u64,
        until: u64,
    ) -> Result<bool, StoreError> {
        let mut item = key(pk, slot_sort_key(slot));
        item.insert("holder".into(), s(holder));
        item.insert("expires_at".into(), n(until));
        let taken = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk) OR expires_at < :now")
            .expression_attribute_values(":now", n(now))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match taken {
            Ok(_) => Ok(true),
            Err(error) => match error.as_service_error() {
                Some(PutItemError::ConditionalCheckFailedException(failed)) => Ok(failed
                    .item()
                    .is_some_and(|item| Reader(item).s("holder").is_ok_and(|h| h == holder))),
                _ => Err(classify(error)),
            },
        }
    }

    /// Gives a slot back (only if this request still holds it).
    pub async fn release_poll_slot(&self, slot: &PollSlot) {
        self.full_pools.forget(&slot.pk);
        self.held_slots.give_back(&slot.pk, slot.slot);
        let released = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key(&slot.pk, slot_sort_key(slot.slot))))
            .condition_expression("holder = :holder")
            .expression_attribute_values(":holder", s(&slot.holder))
            .send()
            .await;
        if let Err(error) = released {
            let lapsed = error
                .as_service_error()
                .is_some_and(|service| service.is_conditional_check_failed_exception());
            if !lapsed {
                tracing::warn!(error = %classify(error), "long-poll slot not given back; it frees itself when it expires");
            }
        }
    }
}

/// One of `size` slot numbers but `mine`, picked at random; `None` when `mine` are all.
fn random_slot_but(size: u32, mine: &[u32]) -> Option<u32> {
    let others: Vec<u32> = (0..size).filter(|slot| !mine.contains(slot)).collect();
    let pick = random_slot(others.len() as u32);
    others.get(pick as usize).copied()
}

/// One of `size` slot numbers, picked at random (slot 0 when no randomness is at hand: only
/// the spread of the first tries suffers).
fn random_slot(size: u32) -> u32 {
    let mut bytes = [0u8; 4];
    let _ = getrandom::fill(&mut bytes);
    u32::from_le_bytes(bytes) % size.max(1)
}
