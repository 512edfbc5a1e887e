//! Reading a page of items: one item this code cannot decode never fails the page. It is
//! skipped, logged with its key and the cause, and counted in the `ItemsSkipped` metric, whose
//! alarm pages someone (docs/operations.md): an undecodable item is a bug to be told of, not a
//! reason to refuse every reader of the page.

use super::item::{Item, Reader};
use super::StoreError;
use crate::metrics::{emit, Metric};

/// The items of one page that decode, in their order; each one that does not is logged with
/// its key and counted. `page` names the read in the log line (a route's list, an index walk).
pub(crate) fn decoded<'a, T>(
    items: impl IntoIterator<Item = &'a Item>,
    page: &'static str,
    decode: impl Fn(&'a Item) -> Result<T, StoreError>,
) -> Vec<T> {
    items
        .into_iter()
        .filter_map(|item| match decode(item) {
            Ok(value) => Some(value),
            Err(error) => {
                skipped(item, page, &error);
                None
            }
        })
        .collect()
}

/// Logs and counts one item a page left out.
fn skipped(item: &Item, page: &'static str, error: &StoreError) {
    let key = |name: &str| Reader(item).s(name).unwrap_or_default();
    tracing::error!(
        page,
        pk = %key("pk"),
        sk = %key("sk"),
        error = %error,
        "an item of a page could not be decoded: left out of the page"
    );
    emit(Metric::ItemSkipped);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::item::s;

    fn item(pk: &str, value: Option<&str>) -> Item {
        let mut item = Item::new();
        item.insert("pk".into(), s(pk));
        if let Some(value) = value {
            item.insert("value".into(), s(value));
        }
        item
    }

    #[test]
    fn an_item_that_does_not_decode_is_left_out_and_the_rest_kept_in_order() {
        let items = [item("A", Some("1")), item("B", None), item("C", Some("3"))];
        let values = decoded(&items, "test", |item| Reader(item).s("value"));
        assert_eq!(values, ["1", "3"]);
    }

    #[test]
    fn each_item_left_out_is_counted() {
        crate::metrics::capture();
        let items = [item("A", None), item("B", None), item("C", Some("3"))];
        let _ = decoded(&items, "test", |item| Reader(item).s("value"));
        let skipped = crate::metrics::captured()
            .iter()
            .filter(|line| line.contains("\"ItemsSkipped\""))
            .count();
        assert_eq!(skipped, 2);
    }
}
