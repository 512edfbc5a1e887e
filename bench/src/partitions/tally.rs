//! A scenario's count: every unit its tasks put on each partition key of the table and of each
//! index, and the same gathered by key shape.

use std::collections::BTreeMap;

use forgebench_bench::attribution::{charges, Layout, Roles, Spread, TABLE};
use forgebench_bench::capacity::is_read;
use forgebench_bench::proxy::Exchange;

use crate::scenarios::Scenario;

/// Read and write units.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Units {
    pub read: f64,
    pub write: f64,
}

/// What a scenario's tasks put on each partition of each place.
pub struct Count {
    pub scenario: Scenario,
    pub tasks: usize,
    roles: Roles,
    /// The table, then the indexes in the template's order.
    places: Vec<String>,
    /// Units by (place, partition key).
    units: BTreeMap<(String, String), Units>,
    /// Units split over several partitions by size where the sizes did not add up.
    pub approximate: f64,
    /// Writes the store sent that DynamoDB refused (a condition not met): DynamoDB bills them,
    /// DynamoDB Local reports no units for them, so they are not counted.
    pub refused: usize,
    pub requests: usize,
}

/// The load on the keys of one shape in one place.
#[derive(Debug, Clone)]
pub struct ShapeLoad {
    pub place: String,
    pub shape: String,
    pub spread: Spread,
    /// Distinct keys of this shape the scenario touched.
    pub keys: usize,
    /// The busiest key's write units and, apart, the busiest key's read units.
    pub hottest: Units,
    pub total: Units,
    /// Of a sharded shape, the busiest of the logical keys it spreads (a word's postings over
    /// their partitions), all their shards together; of another shape, its total.
    pub busiest_spread: Units,
}

impl Count {
    pub fn new(
        scenario: Scenario,
        tasks: usize,
        roles: Roles,
        layout: &Layout,
        exchanges: Vec<Exchange>,
    ) -> Count {
        let mut count = Count {
            scenario,
            tasks,
            roles,
            places: std::iter::once(TABLE.to_owned())
                .chain(layout.indexes.iter().map(|index| index.name.clone()))
                .collect(),
            units: BTreeMap::new(),
            approximate: 0.0,
            refused: 0,
            requests: exchanges.len(),
        };
        for exchange in &exchanges {
            let refused = exchange.response.get("__type").is_some();
            count.refused += usize::from(refused && !is_read(exchange.operation()));
            for charge in charges(exchange, layout) {
                if !charge.exact {
                    count.approximate += charge.read_units + charge.write_units;
                }
                let units = count
                    .units
                    .entry((charge.place, charge.partition))
                    .or_default();
                units.read += charge.read_units;
                units.write += charge.write_units;
            }
        }
        count
    }

    /// The load by (place, shape), busiest write key first within each place.
    pub fn shapes(&self) -> Vec<ShapeLoad> {
        let mut shapes: BTreeMap<(String, String), ShapeLoad> = BTreeMap::new();
        let mut spreads: BTreeMap<(String, String, String), Units> = BTreeMap::new();
        for ((place, partition), units) in &self.units {
            let (shape, spread) = self.roles.shape(partition);
            let group = self.roles.spread_group(partition);
            let spread_load = spreads
                .entry((place.clone(), shape.clone(), group))
                .or_default();
            spread_load.read += units.read;
            spread_load.write += units.write;
            let load = shapes
                .entry((place.clone(), shape.clone()))
                .or_insert_with(|| ShapeLoad {
                    place: place.clone(),
                    shape,
                    spread,
                    keys: 0,
                    hottest: Units::default(),
                    total: Units::default(),
                    busiest_spread: Units::default(),
                });
            load.keys += 1;
            load.hottest.read = load.hottest.read.max(units.read);
            load.hottest.write = load.hottest.write.max(units.write);
            load.total.read += units.read;
            load.total.write += units.write;
        }
        for ((place, shape, _), units) in spreads {
            if let Some(load) = shapes.get_mut(&(place, shape)) {
                load.busiest_spread.read = load.busiest_spread.read.max(units.read);
                load.busiest_spread.write = load.busiest_spread.write.max(units.write);
            }
        }
        let mut shapes: Vec<ShapeLoad> = shapes.into_values().collect();
        let order = |place: &str| self.places.iter().position(|known| known == place);
        shapes.sort_by(|a, b| {
            (order(&a.place), b.hottest.write, b.hottest.read)
                .partial_cmp(&(order(&b.place), a.hottest.write, a.hottest.read))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        shapes
    }

    /// The table, then the indexes in the template's order.
    pub fn places(&self) -> &[String] {
        &self.places
    }

    /// Every unit counted, read and write.
    pub fn total(&self) -> Units {
        self.units
            .values()
            .fold(Units::default(), |sum, units| Units {
                read: sum.read + units.read,
                write: sum.write + units.write,
            })
    }
}

impl ShapeLoad {
    /// Units per task on the busiest key of this shape as the rate grows: the busiest key's for
    /// a shared key, the busiest spread key's over its shards for a sharded one, none for a
    /// task's own keys (one task's load, whatever the rate).
    pub fn per_key_per_task(&self, tasks: usize) -> Option<Units> {
        let tasks = tasks as f64;
        match self.spread {
            Spread::Shared => Some(Units {
                read: self.hottest.read / tasks,
                write: self.hottest.write / tasks,
            }),
            Spread::Sharded(shards) => Some(Units {
                read: self.busiest_spread.read / tasks / f64::from(shards),
                write: self.busiest_spread.write / tasks / f64::from(shards),
            }),
            Spread::OneTask => None,
        }
    }
}
