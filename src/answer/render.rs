//! Rendering: a page's rows streamed from the store, written as XML and compressed (gzip or
//! brotli), chunk by chunk.
//!
//! The rows are read and written as XML here, while the XML written so far is compressed on
//! another thread ([`super::compress::Pipeline`]): a cold render costs about the larger of
//! reading and compressing, not their sum. Memory is a few batches of XML plus the compressor's
//! window, whatever the page size.

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::TryStreamExt;

use super::compress::{Coding, Pipeline};
use crate::site::{Group, Page, ServedPage, Validators};
use crate::sitemap::{Entry, Namespaces, PageBuilder, PageDigest, RawEntry, SeenUrls, UrlKey};
use crate::store::StoreError;

/// Why a render failed: the rows could not be read, or the compressor stopped.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("reading the page's rows failed")]
    Store(#[from] StoreError),
    #[error("compressing the page failed")]
    Compress(#[source] std::io::Error),
}

impl RenderError {
    fn compress(e: impl Into<std::io::Error>) -> Self {
        Self::Compress(e.into())
    }
}

/// XML gathered before it is handed to the compressor.
const BATCH_BYTES: usize = 64 * 1024;

/// What a render produced, to compare with what the sweep measured.
#[derive(Debug)]
pub struct Rendered {
    pub digest: PageDigest,
    /// Rows that no longer fit the file's limits were left for the next sweep to place.
    pub overflowed: bool,
    /// The newest `lastmod` written (unix seconds).
    pub newest_lastmod: Option<i64>,
}

impl Rendered {
    /// Whether the rows rendered are not the ones `page`'s stored validators describe (they
    /// changed since the last sweep), so the sweep must catch up.
    pub fn describes_another_state_than(&self, page: &Page) -> bool {
        self.digest.fingerprint != page.fingerprint || self.overflowed
    }

    /// Validators of the bytes rendered when they are not `page`'s: the fingerprint of these
    /// very bytes (what the sweep will store for them, the same on every replica), dated by
    /// the newest of the page's last change and the lastmods written (a lastmod in the future
    /// never dates it past `now`).
    pub fn revised_validators(&self, page: &Page, now: i64) -> Validators {
        let newest = self.newest_lastmod.map_or(i64::MIN, |at| at.min(now));
        Validators {
            fingerprint: self.digest.fingerprint,
            changed_at: page.changed_at.max(newest),
        }
    }
}

/// Renders page `page` compressed as `coding`, handing out chunks as they are produced but
/// the last: that one (the end of the stream) is returned with what was rendered, for the
/// caller to send only if the bytes are those the page's ETag names.
pub async fn page(
    group: &Group,
    served: &ServedPage,
    coding: Coding,
    emit: impl FnMut(Bytes) + Send + 'static,
) -> Result<(Rendered, Bytes), RenderError> {
    let page = &served.page;
    let mut entries = PageEntries::open(group, served);
    let mut compressor = Pipeline::start(coding, emit);
    let mut batch = new_batch();
    batch.extend_from_slice(&group.style.urlset_open(page.namespaces));
    loop {
        match entries.next().await {
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(e) => {
                // The failure is said only once the compressor has stopped: no chunk of this
                // render goes out after it.
                compressor.abandon().await;
                return Err(e.into());
            }
        }
        batch.extend_from_slice(&entries.element);
        if batch.len() >= BATCH_BYTES {
            let full = std::mem::replace(&mut batch, new_batch());
            compressor.send(full).await.map_err(RenderError::compress)?;
        }
    }
    batch.extend_from_slice(group.style.urlset_close());
    compressor
        .send(batch)
        .await
        .map_err(RenderError::compress)?;
    let last = compressor.finish().await.map_err(RenderError::compress)?;
    Ok((entries.finish(), last))
}

fn new_batch() -> Vec<u8> {
    // Room for the element that crosses the mark, so the batch is never reallocated.
    Vec::with_capacity(BATCH_BYTES + 4096)
}

/// Renders page `page`'s entries as a text sitemap: one absolute URL per line, the same
/// entries as its XML form (the same limits decide), with what the XML form of those entries
/// would be. The text is held whole (at most the file's byte limit, usually far less) so that
/// it is sent under the validators of the entries it lists.
pub async fn page_text(
    group: &Group,
    served: &ServedPage,
) -> Result<(Bytes, Rendered), StoreError> {
    let mut entries = PageEntries::open(group, served);
    let mut text = Vec::with_capacity(BATCH_BYTES);
    while let Some(entry) = entries.next().await? {
        text.extend_from_slice(entry.loc.as_str().as_bytes());
        text.push(b'\n');
    }
    Ok((Bytes::from(text), entries.finish()))
}

/// A page's entries in id order, each written as its `<url>` element into `element`, for as
/// long as they fit the file's limits: exactly the entries the sweep measured, if the rows
/// have not changed since.
struct PageEntries<'a> {
    group: &'a Group,
    page_no: i64,
    declared: Namespaces,
    rows: BoxStream<'a, Result<RawEntry, StoreError>>,
    builder: PageBuilder,
    /// A file lists each URL once, as the sweep measured it.
    seen: SeenUrls,
    element: Vec<u8>,
    overflowed: bool,
    newest_lastmod: Option<i64>,
}

impl<'a> PageEntries<'a> {
    fn open(group: &'a Group, served: &ServedPage) -> Self {
        let page = &served.page;
        let declared = page.namespaces;
        Self {
            group,
            page_no: page.no,
            declared,
            rows: group.rows(served.range, declared, served.news_at),
            builder: PageBuilder::declared(&group.style, group.page_size, declared),
            seen: SeenUrls::default(),
            element: Vec::with_capacity(512),
            overflowed: false,
            newest_lastmod: None,
        }
    }

    /// The next entry that fits; `None` at the end of the range or of the file's limits.
    async fn next(&mut self) -> Result<Option<Entry>, StoreError> {
        while !self.overflowed {
            let Some(raw) = self.rows.try_next().await? else {
                break;
            };
            let Ok(entry) = self
                .group
                .rules
                .write(&raw, &mut self.element, self.declared)
            else {
                continue;
            };
            let url = UrlKey::of(&entry.loc);
            if !self.seen.first_time(url) {
                continue;
            }
            if !self.builder.fits(self.element.len()) {
                self.overflowed = true;
                break;
            }
            self.builder
                .add(raw.id, url, &self.element, entry.namespaces());
            if let Some(lastmod) = &entry.lastmod {
                let at = lastmod.at().timestamp();
                self.newest_lastmod = Some(self.newest_lastmod.map_or(at, |n| n.max(at)));
            }
            return Ok(Some(entry));
        }
        Ok(None)
    }

    fn finish(self) -> Rendered {
        if self.overflowed {
            tracing::warn!(
                page = self.page_no,
                "page outgrew its limits since the last sweep; extra rows wait for the next"
            );
        }
        Rendered {
            digest: self.builder.finish(),
            overflowed: self.overflowed,
            newest_lastmod: self.newest_lastmod,
        }
    }
}
