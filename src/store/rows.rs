//! Reading rows the same way on every backend: extension rows attached to their entries, and
//! identifiers quoted for a statement.

use super::Keyed;
use crate::sitemap::entry::{RawAlternate, RawImage};
use crate::sitemap::RawEntry;

/// Hands each extension row to its entry; both lists are in entry id order.
pub(super) fn attach<T>(
    entries: &mut [RawEntry],
    rows: Keyed<T>,
    field: impl Fn(&mut RawEntry) -> &mut Vec<T>,
) {
    let mut entries = entries.iter_mut().peekable();
    for (entry_id, row) in rows {
        while entries.peek().is_some_and(|e| e.id < entry_id) {
            entries.next();
        }
        if let Some(entry) = entries.peek_mut().filter(|e| e.id == entry_id) {
            field(entry).push(row);
        }
    }
}

/// A priority kept as text: the number it holds, or the text when it holds none (an empty text
/// is no priority at all).
pub(super) fn priority_of_text(text: Option<String>) -> (Option<f64>, Option<String>) {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return (None, None);
    };
    match text.trim().parse::<f64>() {
        Ok(n) if n.is_finite() => (Some(n), None),
        _ => (None, Some(text)),
    }
}

/// Names of the extension tables the migrations create.
pub const ALTERNATES_TABLE: &str = "sitemap_alternates";
pub const IMAGES_TABLE: &str = "sitemap_images";
pub const VIDEOS_TABLE: &str = "sitemap_videos";

/// An extension row as every backend reads it: `entry_id`, then text columns (NULL or
/// undecodable text is `None`, for the rules to drop).
pub(super) fn keyed_alternate<'r, R>(row: &'r R) -> (i64, RawAlternate)
where
    R: sqlx::Row,
    &'static str: sqlx::ColumnIndex<R>,
    i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let text = |column: &'static str| row.try_get::<Option<String>, _>(column).ok().flatten();
    let alternate = RawAlternate {
        hreflang: text("hreflang"),
        href: text("href"),
    };
    (row.try_get("entry_id").unwrap_or_default(), alternate)
}

/// See [`keyed_alternate`].
pub(super) fn keyed_image<'r, R>(row: &'r R) -> (i64, RawImage)
where
    R: sqlx::Row,
    &'static str: sqlx::ColumnIndex<R>,
    i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let loc = row.try_get::<Option<String>, _>("loc").ok().flatten();
    (
        row.try_get("entry_id").unwrap_or_default(),
        RawImage { loc },
    )
}

/// Quotes a possibly schema-qualified identifier: `cms.pages` → `"cms"."pages"`.
pub fn quote_identifier(name: &str) -> String {
    quote_identifier_with(name, '"')
}

/// [`quote_identifier`] with another quote character (MySQL's backtick).
pub(super) fn quote_identifier_with(name: &str, quote: char) -> String {
    let doubled = format!("{quote}{quote}");
    name.split('.')
        .map(|part| format!("{quote}{}{quote}", part.replace(quote, &doubled)))
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_rows_reach_their_own_entries_only() {
        let mut entries: Vec<RawEntry> = [1, 3, 4]
            .into_iter()
            .map(|id| RawEntry {
                id,
                ..RawEntry::default()
            })
            .collect();
        let rows = vec![(0, "orphan"), (3, "a"), (3, "b"), (4, "c"), (9, "late")];
        let rows: Keyed<RawImage> = rows
            .into_iter()
            .map(|(id, loc)| {
                (
                    id,
                    RawImage {
                        loc: Some(loc.into()),
                    },
                )
            })
            .collect();
        attach(&mut entries, rows, |e| &mut e.images);
        let locs = |e: &RawEntry| {
            e.images
                .iter()
                .map(|i| i.loc.clone().unwrap())
                .collect::<Vec<_>>()
        };
        assert!(entries[0].images.is_empty());
        assert_eq!(locs(&entries[1]), ["a", "b"]);
        assert_eq!(locs(&entries[2]), ["c"]);
    }

    #[test]
    fn identifiers_are_quoted_part_by_part() {
        assert_eq!(quote_identifier("sitemap_entries"), "\"sitemap_entries\"");
        assert_eq!(quote_identifier("cms.v"), "\"cms\".\"v\"");
        assert_eq!(quote_identifier("a\"b"), "\"a\"\"b\"");
    }
}
