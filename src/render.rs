//! Rendering: a page's rows streamed from the store, written as XML and gzipped, chunk by chunk.
//!
//! Memory is one batch of XML plus the compressor's window, whatever the page size. The gzip
//! header carries no time or name, so the same XML always gives the same bytes.

use async_compression::tokio::write::GzipEncoder;
use async_compression::Level;
use bytes::Bytes;
use futures::TryStreamExt;
use tokio::io::AsyncWriteExt;

use crate::pages::Page;
use crate::site::Site;
use crate::sitemap::{PageBuilder, PageDigest};
use crate::store::{IdRange, StoreError};

/// XML gathered before it is handed to the compressor.
const BATCH_BYTES: usize = 64 * 1024;
/// gzip -6: the usual balance; pages are compressed once and then served from cache.
const GZIP_LEVEL: i32 = 6;

/// What a render produced, to compare with what the sweep measured.
#[derive(Debug)]
pub struct Rendered {
    pub digest: PageDigest,
    /// Rows that no longer fit the file's limits were left for the next sweep to place.
    pub overflowed: bool,
}

impl Rendered {
    /// Whether the rows rendered are not the ones `page`'s stored validators describe (they
    /// changed since the last sweep), so the sweep must catch up.
    pub fn describes_another_state_than(&self, page: &Page) -> bool {
        self.digest.fingerprint != page.fingerprint || self.overflowed
    }
}

/// Renders page `page` (ids in `range`) as gzip, handing out chunks as they are produced.
pub async fn page_gz(
    site: &Site,
    page: &Page,
    range: IdRange,
    mut emit: impl FnMut(Bytes),
) -> Result<Rendered, StoreError> {
    let declared = page.namespaces;
    let open = site.style.urlset_open(declared);
    let mut builder = PageBuilder::declared(&site.style, site.page_size, declared);
    let mut gz =
        GzipEncoder::with_quality(Vec::with_capacity(BATCH_BYTES), Level::Precise(GZIP_LEVEL));
    let mut batch = Vec::with_capacity(BATCH_BYTES + 4096);
    batch.extend_from_slice(&open);
    let mut element = Vec::with_capacity(512);
    let mut overflowed = false;
    let mut rows = site.store.entries(range, declared);
    while let Some(raw) = rows.try_next().await? {
        let Ok(entry) = site.rules.write(&raw, &mut element, declared) else {
            continue;
        };
        if !builder.fits(element.len()) {
            overflowed = true;
            break;
        }
        builder.add(&element, entry.namespaces());
        batch.extend_from_slice(&element);
        if batch.len() >= BATCH_BYTES {
            compress(&mut gz, &mut batch, &mut emit).await;
        }
    }
    batch.extend_from_slice(site.style.urlset_close());
    compress(&mut gz, &mut batch, &mut emit).await;
    gz.shutdown().await.map_err(io_to_store)?;
    emit(Bytes::copy_from_slice(gz.get_mut()));
    let digest = builder.finish();
    if overflowed {
        tracing::warn!(
            page = page.no,
            "page outgrew its limits since the last sweep; extra rows wait for the next"
        );
    }
    Ok(Rendered { digest, overflowed })
}

/// Streams page `page`'s entries as a text sitemap into `tx`: one absolute URL per line, the
/// same entries as its XML form (the same limits decide). A failure ends with an error item.
/// Returns what the XML form of those entries would be, to tell whether the page's stored
/// validators still describe them; `None` when the render did not finish.
pub async fn page_text(
    site: &Site,
    page: &Page,
    range: IdRange,
    mut tx: futures::channel::mpsc::Sender<std::io::Result<Bytes>>,
) -> Option<Rendered> {
    use futures::SinkExt;
    let declared = page.namespaces;
    let mut builder = PageBuilder::declared(&site.style, site.page_size, declared);
    let mut batch = Vec::with_capacity(BATCH_BYTES + 4096);
    let mut element = Vec::with_capacity(512);
    let mut rows = site.store.entries(range, declared);
    let mut overflowed = false;
    loop {
        let raw = match rows.try_next().await {
            Ok(Some(raw)) => raw,
            Ok(None) => break,
            Err(e) => {
                let _ = tx.send(Err(std::io::Error::other(e.to_string()))).await;
                return None;
            }
        };
        let Ok(entry) = site.rules.write(&raw, &mut element, declared) else {
            continue;
        };
        if !builder.fits(element.len()) {
            overflowed = true;
            break;
        }
        builder.add(&element, entry.namespaces());
        batch.extend_from_slice(entry.loc.as_str().as_bytes());
        batch.push(b'\n');
        if batch.len() >= BATCH_BYTES
            && tx
                .send(Ok(Bytes::from(std::mem::take(&mut batch))))
                .await
                .is_err()
        {
            return None;
        }
    }
    if !batch.is_empty() && tx.send(Ok(Bytes::from(batch))).await.is_err() {
        return None;
    }
    Some(Rendered {
        digest: builder.finish(),
        overflowed,
    })
}

async fn compress(
    gz: &mut GzipEncoder<Vec<u8>>,
    batch: &mut Vec<u8>,
    emit: &mut impl FnMut(Bytes),
) {
    // Writing into a Vec cannot fail.
    let _ = gz.write_all(batch).await;
    batch.clear();
    let out = gz.get_mut();
    if out.len() >= BATCH_BYTES / 4 {
        // An exact-size copy: the chunk may be cached, and the working buffer is reused.
        emit(Bytes::copy_from_slice(out));
        out.clear();
    }
}

fn io_to_store(e: std::io::Error) -> StoreError {
    StoreError::Database(sqlx::Error::Io(e))
}

/// gzip of a small in-memory document (index, robots.txt), with the same settings as pages.
pub fn gzip(bytes: &[u8]) -> Bytes {
    use std::io::Write;
    let mut enc =
        flate2::GzBuilder::new().write(Vec::new(), flate2::Compression::new(GZIP_LEVEL as u32));
    let _ = enc.write_all(bytes);
    Bytes::from(enc.finish().unwrap_or_default())
}
