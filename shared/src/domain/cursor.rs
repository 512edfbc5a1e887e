//! Cursors of the paged listings, written out as the positions they are.
//!
//! A cursor names a place in a listing's order, nothing more: the moment and id of the last
//! entry a page covered (and, for task search, the moment the search reads the store as of).
//! Any cursor of the documented shape is a place in that order, so the API accepts every one
//! and pages on from it; what a key may see is decided by the key, never by the cursor. The
//! shapes here are the `pattern`s of `infra/openapi.yaml`: a request the document calls valid
//! is never refused for its cursor.

use super::clock::Timestamp;
use serde::{Deserialize, Serialize};

use super::TaskId;

/// `2026-12-04T12:34:56.123456Z`: a moment as the store sorts it (digits where digits go).
pub const MOMENT_PATTERN: &str =
    "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6}Z";

/// A lowercase UUID, as ids are written.
pub const ID_PATTERN: &str = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";

/// Whether `text` has the shape of [`MOMENT_PATTERN`].
pub fn is_moment(text: &str) -> bool {
    const SHAPE: &[u8; 27] = b"0000-00-00T00:00:00.000000Z";
    text.len() == SHAPE.len()
        && text
            .bytes()
            .zip(SHAPE.iter())
            .all(|(byte, shape)| match shape {
                b'0' => byte.is_ascii_digit(),
                other => byte == *other,
            })
}

/// Whether `text` has the shape of [`ID_PATTERN`].
pub fn is_id(text: &str) -> bool {
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == GROUPS.len()
        && groups.iter().zip(GROUPS).all(|(group, length)| {
            group.len() == length
                && group
                    .bytes()
                    .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
        })
}

/// `{moment}_{id}`: the last entry a page of a log or of a caller's tasks covered.
pub fn entry_cursor(moment: &str, id: &str) -> String {
    format!("{moment}_{id}")
}

/// The moment and id of an [`entry_cursor`], if `text` has its shape.
pub fn parse_entry_cursor(text: &str) -> Option<(&str, &str)> {
    let (moment, id) = text.split_once('_')?;
    (is_moment(moment) && is_id(id)).then_some((moment, id))
}

/// The `pattern` of an [`entry_cursor`] in the OpenAPI document.
pub fn entry_cursor_pattern() -> String {
    format!("^{MOMENT_PATTERN}_{ID_PATTERN}$")
}

/// Where a task stands in a search: its creation, then its id; the greater comes
/// first.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Position {
    pub created_at: Timestamp,
    pub task_id: TaskId,
}

/// Where the next page starts: below `after`, among the tasks created at or before `snapshot`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub snapshot: Timestamp,
    pub after: Position,
}

impl Cursor {
    /// The cursor as the API hands it out: the place it names, written out
    /// ([`search_cursor`]).
    pub fn encode(&self) -> String {
        search_cursor(&self.snapshot, &self.after)
    }

    /// The place `text` names, if it has a cursor's shape. Any such place is one of the
    /// search's order, whichever search issued it: the filters decide what a page holds.
    pub fn decode(text: &str) -> Option<Cursor> {
        let (snapshot, after) = parse_search_cursor(text)?;
        Some(Cursor {
            snapshot: snapshot.into(),
            after,
        })
    }
}

/// Where a task search's next page starts: `{snapshot}_{created}_{task id}` (the id empty when
/// every task of that moment is still to come).
pub fn search_cursor(snapshot: &str, after: &Position) -> String {
    format!("{snapshot}_{}_{}", after.created_at, after.task_id)
}

/// The snapshot and position of a [`search_cursor`], if `text` has its shape.
pub fn parse_search_cursor(text: &str) -> Option<(String, Position)> {
    let mut fields = text.splitn(3, '_');
    let (snapshot, created_at, task_id) = (fields.next()?, fields.next()?, fields.next()?);
    let shaped =
        is_moment(snapshot) && is_moment(created_at) && (task_id.is_empty() || is_id(task_id));
    shaped.then(|| {
        (
            snapshot.to_owned(),
            Position {
                created_at: created_at.into(),
                task_id: TaskId::from(task_id.to_owned()),
            },
        )
    })
}

/// The `pattern` of a [`search_cursor`] in the OpenAPI document.
pub fn search_cursor_pattern() -> String {
    format!("^{MOMENT_PATTERN}_{MOMENT_PATTERN}_({ID_PATTERN})?$")
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOMENT: &str = "2026-12-04T12:34:56.123456Z";
    const ID: &str = "3c296024-e8f9-541b-abca-0d66e4cacbda";

    #[test]
    fn an_entry_cursor_reads_back_and_anything_else_is_no_cursor() {
        let text = entry_cursor(MOMENT, ID);
        assert_eq!(parse_entry_cursor(&text), Some((MOMENT, ID)));
        for other in [
            "0",
            "",
            MOMENT,
            &format!("{MOMENT}_{}", ID.to_uppercase()),
            &format!("{MOMENT}#{ID}"),
            &format!("2026-12-04T12:34:56.12345Z_{ID}"),
            &format!("{MOMENT}_{ID}_"),
            &format!("٢026-12-04T12:34:56.123456Z_{ID}"),
        ] {
            assert_eq!(parse_entry_cursor(other), None, "{other}");
        }
    }

    #[test]
    fn any_moment_of_the_shape_is_a_place_even_one_no_clock_shows() {
        let text = entry_cursor("9999-99-99T99:99:99.999999Z", ID);
        assert!(parse_entry_cursor(&text).is_some());
    }

    #[test]
    fn a_search_cursor_reads_back_with_or_without_its_task() {
        let after = Position {
            created_at: "2026-12-04T12:00:00.000000Z".into(),
            task_id: TaskId::from(ID.to_owned()),
        };
        let text = search_cursor(MOMENT, &after);
        assert_eq!(
            parse_search_cursor(&text),
            Some((MOMENT.to_owned(), after.clone()))
        );
        let whole_moment = Position {
            task_id: TaskId::from(String::new()),
            ..after
        };
        let text = search_cursor(MOMENT, &whole_moment);
        assert_eq!(
            parse_search_cursor(&text),
            Some((MOMENT.to_owned(), whole_moment))
        );
        for other in ["0", &format!("{MOMENT}_{ID}"), &format!("{MOMENT}__")] {
            assert_eq!(parse_search_cursor(other), None, "{other}");
        }
    }
}
