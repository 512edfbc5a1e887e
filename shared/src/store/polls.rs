//! Long-poll slots: each agent may hold at most [`MAX_POLLS_PER_AGENT`] waiting requests at
//! once, across every function instance, so one agent's thousand waiting polls cannot take the
//! deployment's concurrency. A slot is an item taken with a conditional write and given back when
//! the wait ends; a slot whose holder died frees itself when its expiry passes.
//!
//! | item | pk | sk |
//! |---|---|---|
//! | a long-poll slot | `POLLS#{agent}` | `SLOT#{n}` |

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;

use super::item::{key, n, s, Reader};
use super::{classify, Store, StoreError};
use crate::domain::clock;

/// Most long polls (`wait` > 0) one agent may hold at once.
pub const MAX_POLLS_PER_AGENT: u32 = 10;

/// How many times a take reads the slots again when others took the free ones first.
const TAKE_ROUNDS: usize = 4;

/// A slot this request holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PollSlot {
    agent_id: String,
    slot: u32,
    holder: String,
}

impl Store {
    /// Takes a free long-poll slot of `agent_id` for `seconds` (plus a margin), or `None` when
    /// every slot is held. It first tries one slot picked at random, blind: an agent holding few
    /// slots gets one with a single write and no read. When that slot is held it reads which
    /// slots are held (strongly consistent) and tries the free ones; others take and give back
    /// slots meanwhile, so a round whose free slots were all taken first is read again, a few
    /// times, before the answer is "none free".
    pub async fn take_poll_slot(
        &self,
        agent_id: &str,
        seconds: u64,
    ) -> Result<Option<PollSlot>, StoreError> {
        let holder = uuid::Uuid::new_v4().to_string();
        let now = clock::unix_now();
        let blind = random_slot();
        if self
            .try_slot(agent_id, blind, &holder, now, now + seconds + 5)
            .await?
        {
            return Ok(Some(PollSlot {
                agent_id: agent_id.to_owned(),
                slot: blind,
                holder,
            }));
        }
        for _ in 0..TAKE_ROUNDS {
            let now = clock::unix_now();
            let free = self.free_slots(agent_id, now).await?;
            if free.is_empty() {
                return Ok(None);
            }
            for slot in free {
                if self
                    .try_slot(agent_id, slot, &holder, now, now + seconds + 5)
                    .await?
                {
                    return Ok(Some(PollSlot {
                        agent_id: agent_id.to_owned(),
                        slot,
                        holder,
                    }));
                }
            }
        }
        Ok(None)
    }

    /// The slots of `agent_id` nobody holds at `now`, from a random one on.
    async fn free_slots(&self, agent_id: &str, now: u64) -> Result<Vec<u32>, StoreError> {
        let items = self
            .query_prefix(format!("POLLS#{agent_id}"), "SLOT#")
            .await?;
        let held: Vec<u32> = items
            .iter()
            .filter(|item| Reader(item).n("expires_at").is_ok_and(|at| at >= now))
            .filter_map(|item| {
                Reader(item)
                    .s("sk")
                    .ok()?
                    .strip_prefix("SLOT#")?
                    .parse()
                    .ok()
            })
            .collect();
        let start = random_slot();
        Ok((0..MAX_POLLS_PER_AGENT)
            .map(|offset| (start + offset) % MAX_POLLS_PER_AGENT)
            .filter(|slot| !held.contains(slot))
            .collect())
    }

    /// One conditional write that takes `slot` if it is free (or its holder's time ran out).
    /// A write the SDK re-sent after its first try took the slot finds its own holder there:
    /// taken all the same.
    async fn try_slot(
        &self,
        agent_id: &str,
        slot: u32,
        holder: &str,
        now: u64,
        until: u64,
    ) -> Result<bool, StoreError> {
        let mut item = key(format!("POLLS#{agent_id}"), format!("SLOT#{slot}"));
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
        let released = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key(
                format!("POLLS#{}", slot.agent_id),
                format!("SLOT#{}", slot.slot),
            )))
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

/// One of the slot numbers, picked at random (slot 0 when no randomness is at hand: only the
/// spread of the first tries suffers).
fn random_slot() -> u32 {
    let mut byte = [0u8; 1];
    let _ = getrandom::fill(&mut byte);
    u32::from(byte[0]) % MAX_POLLS_PER_AGENT
}
