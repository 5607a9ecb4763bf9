//! Reading a group's entries from its source: by id range (with the extension tables' rows
//! merged in), a news group's articles, and the feeds', llms.txt's and IndexNow's reads. Every
//! statement goes to the source database; on a source database of its own (`SOURCE_DATABASE_URL`)
//! each is retried when the server cancels it for replication (see `replica.rs`).

use chrono::{DateTime, Utc};
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};

use super::rows::attach;
use super::{
    shared_ids, IdRange, Modified, Store, StoreError, SubmittedThrough, SummaryPace, TitledEntry,
};
use crate::sitemap::publication::NewsPublication;
use crate::sitemap::{Namespaces, RawEntry};

/// Entries read per query when extension rows are merged in.
const EXTENSION_CHUNK: i64 = 2000;

impl Store {
    /// Entries with ids in `range`, in id order, streamed, each with its rows of the extension
    /// tables `wanted` names. Runs without extension rows read the source alone, in one query.
    ///
    /// The range that starts the id space (the first file's) begins with the rows no id range
    /// holds (a NULL id, an id beyond 64 bits), rejected, so that they are counted wherever
    /// rows are.
    pub fn entries(
        &self,
        range: IdRange,
        wanted: Namespaces,
    ) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        let placed = self.placed_entries(range, wanted);
        match range.first == i64::MIN {
            true => self.unplaced_entries().chain(placed).boxed(),
            false => placed,
        }
    }

    fn placed_entries(
        &self,
        range: IdRange,
        wanted: Namespaces,
    ) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        if wanted.is_empty() {
            return self.plain_entries(range);
        }
        stream::once(self.extension_presence(range))
            .map(move |present| match present {
                Ok(present) if present.intersection(wanted).is_empty() => self.plain_entries(range),
                Ok(present) => self.entries_with_extensions(range, present.intersection(wanted)),
                Err(e) => stream::once(async move { Err(e) }).boxed(),
            })
            .flatten()
            .boxed()
    }

    fn plain_entries(&self, range: IdRange) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        shared_ids::reject_shared_ids(self.entries_in_parts(range))
    }

    /// Reads entries in chunks and merges each chunk's extension rows into it.
    fn entries_with_extensions(
        &self,
        range: IdRange,
        namespaces: Namespaces,
    ) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        if !self.reads_built_in() {
            return self.view_entries_with_extensions(range, namespaces);
        }
        let rows = stream::try_unfold(Some(range.first), move |next| async move {
            let Some(first) = next.filter(|first| *first <= range.last) else {
                return Ok::<_, StoreError>(None);
            };
            let rest = IdRange {
                first,
                last: range.last,
            };
            let mut chunk = from_source!(self, s => s.entries_chunk(rest, EXTENSION_CHUNK).await)?;
            let Some(last) = chunk.last().map(|e| e.id) else {
                return Ok(None);
            };
            // A full chunk may end inside a run of rows sharing an id: that id is read again
            // whole with the next chunk (unless the chunk holds nothing else).
            let full = chunk.len() as i64 == EXTENSION_CHUNK;
            let (last, next) = match chunk.iter().position(|e| e.id == last) {
                Some(start) if full && start > 0 => {
                    chunk.truncate(start);
                    (last - 1, Some(last))
                }
                _ => (last, last.checked_add(1)),
            };
            let read = IdRange { first, last };
            self.attach_extensions(&mut chunk, read, namespaces).await?;
            Ok(Some((stream::iter(chunk.into_iter().map(Ok)), next)))
        })
        .try_flatten()
        .boxed();
        shared_ids::reject_shared_ids(rows)
    }

    /// [`Store::entries_with_extensions`] for a source other than the built-in table: chunks
    /// are id windows (see `windows.rs`), so no statement builds more of a view than its chunk.
    fn view_entries_with_extensions(
        &self,
        range: IdRange,
        namespaces: Namespaces,
    ) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        let rows = self
            .chunks_in_windows(range, EXTENSION_CHUNK)
            .and_then(move |(window, mut chunk)| async move {
                self.attach_extensions(&mut chunk, window, namespaces)
                    .await?;
                Ok(stream::iter(chunk.into_iter().map(Ok)))
            })
            .try_flatten()
            .boxed();
        shared_ids::reject_shared_ids(rows)
    }

    /// Merges the extension rows `namespaces` names, of ids in `read`, into `chunk`.
    async fn attach_extensions(
        &self,
        chunk: &mut [RawEntry],
        read: IdRange,
        namespaces: Namespaces,
    ) -> Result<(), StoreError> {
        if namespaces.xhtml {
            let rows = from_source!(self, s => s.alternates(read).await)?;
            attach(chunk, rows, |e| &mut e.alternates);
        }
        if namespaces.image {
            let rows = from_source!(self, s => s.images(read).await)?;
            attach(chunk, rows, |e| &mut e.images);
        }
        if namespaces.video {
            let rows = from_source!(self, s => s.videos(read).await)?;
            attach(chunk, rows, |e| &mut e.videos);
        }
        Ok(())
    }

    /// A news source's articles with ids in `range`, published from `since` to `until` (unix
    /// seconds, both included), in id order, with what a row leaves NULL taken from `defaults`.
    /// The optional columns are read when the source has them.
    pub fn articles<'a>(
        &'a self,
        range: IdRange,
        since: i64,
        until: i64,
        defaults: &'a NewsPublication,
    ) -> BoxStream<'a, Result<RawEntry, StoreError>> {
        let read = async move {
            let optional = from_source!(self, s => s.has_article_columns().await)?;
            let micros = |secs: i64| secs.saturating_mul(1_000_000);
            // The end of `until`'s second is in.
            let window = (micros(since), micros(until) + 999_999);
            from_source!(self, s => s.articles(range, window, optional).await)
        };
        stream::once(read)
            .map_ok(move |rows| {
                stream::iter(rows.into_iter().map(move |mut row| {
                    row.article = row.article.map(|a| a.with_defaults(defaults));
                    Ok(row)
                }))
            })
            .try_flatten()
            .boxed()
    }

    /// Which extension tables have rows for entries in `range`.
    pub async fn extension_presence(&self, range: IdRange) -> Result<Namespaces, StoreError> {
        from_source!(self, s => s.extension_presence(range).await)
    }

    /// Up to `limit` entries with a lastmod, the most recently modified first (ties: highest
    /// id first). For feeds.
    pub async fn recent(&self, limit: i64) -> Result<Vec<RawEntry>, StoreError> {
        from_source!(self, s => s.recent(limit).await)
    }

    /// Up to `limit` entries with a lastmod and an id in `range`, the most recently modified
    /// first (ties: highest id first). A view's feeds, read one file at a time.
    pub async fn recent_in(&self, range: IdRange, limit: i64) -> Result<Vec<RawEntry>, StoreError> {
        from_source!(self, s => s.recent_in(range, limit).await)
    }

    /// Up to `limit` entries for llms.txt: the most recently modified first (ties: lowest id
    /// first), then those without a lastmod by id, with the source's optional `title` and
    /// `description` columns when it has them.
    pub async fn newest_titled(&self, limit: i64) -> Result<Vec<TitledEntry>, StoreError> {
        from_source!(self, s => s.newest_titled(limit).await)
    }

    /// Up to `limit` entries modified after `after` (by lastmod, then id) and no later than
    /// `through`, oldest first, with the position of the last one. For IndexNow.
    pub async fn modified_after(
        &self,
        after: SubmittedThrough,
        through: DateTime<Utc>,
        limit: i64,
    ) -> Result<Modified, StoreError> {
        from_source!(self, s => s.modified_after(after, through, limit).await)
    }

    /// Rows no id range holds (a NULL id, an id beyond 64 bits), rejected: one statement,
    /// read whole (and retried) from a source database of its own.
    fn unplaced_entries(&self) -> BoxStream<'_, Result<RawEntry, StoreError>> {
        if self.replica.is_none() {
            return on!(&self.source, s => s.unplaced_entries());
        }
        stream::once(async move {
            from_source!(self, s => s.unplaced_entries().try_collect::<Vec<_>>().await)
        })
        .map_ok(|rows| stream::iter(rows.into_iter().map(Ok)))
        .try_flatten()
        .boxed()
    }

    /// Each file's summary (count and hash of its rows and their extension rows, computed by
    /// the database), for files cut at `thresholds`; `None` where the database cannot (SQLite).
    pub async fn file_summaries(
        &self,
        thresholds: &[i64],
        pace: SummaryPace,
    ) -> Result<Option<Vec<String>>, StoreError> {
        from_source!(self, s => s.file_summaries(thresholds, pace).await)
    }

    /// The summaries of the files holding the ids of `files` (as [`Store::file_summaries`]
    /// gives them), one at a time; `None` where the database cannot summarise.
    pub async fn summaries_of(&self, files: &[IdRange]) -> Result<Option<Vec<String>>, StoreError> {
        from_source!(self, s => s.summaries_of(files, 1).await)
    }
}
