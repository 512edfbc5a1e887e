//! Which partition key each DynamoDB unit lands on, for the table and for every index, from
//! what a recording proxy saw: each request, its answer's consumed capacity (per table and per
//! index, as DynamoDB reports it) and, for a write, the images of the items it names before
//! and after it.
//!
//! The rule, per request:
//!
//! - A read's units (as billed: an empty read is raised to DynamoDB's minimum) land on the
//!   partition it names: a `GetItem`'s key, a `Query`'s equality on the hash attributes of the
//!   table or index it reads, each key of a `BatchGetItem` or `TransactGetItems` (shared by the
//!   size of the item found). A `Scan` lands on no one partition (`(scan)`).
//! - A write's units for the table land on the partition key of each item it names; for an
//!   index, on the index partition of the item's entry before the write (its delete) and after
//!   it (its put): an entry that moves writes both, an entry whose projection did not change
//!   writes neither, a sparse entry that appears or goes writes one.
//! - Where one request's units for one place land on one partition, they are its exactly, as
//!   reported. Where they land on several (a batch, an entry that moves), each gets what its
//!   item's size says (one unit per started KB for a write, per 4 KB for a read, as
//!   [`size`] computes it with the store's own rule); when those add up to what was reported
//!   the split is exact, and otherwise it is proportional and marked approximate.

mod charges;
mod keys;
mod layout;
mod shape;
mod size;
#[cfg(test)]
mod tests;

pub use charges::{charges, Charge};
pub use keys::{has_entry, partition_of, query_partition};
pub use layout::{IndexLayout, Layout, Projection, TABLE};
pub use shape::{Roles, Spread};
pub use size::{item_size, read_units, write_units};
