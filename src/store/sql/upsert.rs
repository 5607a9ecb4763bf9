//! Upserts: the tail of `INSERT … ON CONFLICT … DO UPDATE` (MySQL: `ON DUPLICATE KEY UPDATE`)
//! for every database, and the pieces its assignments are written with. A [`Dialect`] gives how
//! a tail begins and how it names the offered row; the rest is written once here.

use super::Dialect;

/// The upsert tails of every [`Dialect`].
pub trait Upsert: Dialect {
    /// The tail of an upsert that replaces `columns` when the row with `key` exists.
    fn on_conflict_update(key: &str, columns: &[&str]) -> String {
        let set: Vec<(&str, String)> = columns.iter().map(|c| (*c, Self::inserted(c))).collect();
        Self::on_conflict_set(key, &set)
    }

    /// The tail of an upsert that sets each column to its expression when the row with `key`
    /// exists. An expression reads the stored row with [`stored`] and the row offered with
    /// [`Dialect::inserted`]; MySQL evaluates the assignments in order, each seeing the ones
    /// before it, so a column must be set after every expression that reads its stored value.
    fn on_conflict_set(key: &str, set: &[(&str, String)]) -> String {
        let set: Vec<String> = set.iter().map(|(c, e)| format!("{c} = {e}")).collect();
        format!("{}{}", Self::on_conflict(key), set.join(", "))
    }
}

impl<DB: Dialect> Upsert for DB {}

/// `column` of the row stored in `table`, in an upsert's assignments.
pub fn stored(table: &str, column: &str) -> String {
    format!("{table}.{column}")
}

/// The assignment that adds the offered `column` to the stored one.
pub fn added<DB: Dialect>(table: &str, column: &'static str) -> (&'static str, String) {
    (
        column,
        format!("{} + {}", stored(table, column), DB::inserted(column)),
    )
}
