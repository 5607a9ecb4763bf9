//! A file's bytes in blocks of ids: the `<url>` elements of the rows whose ids fall in one
//! stretch of [`BLOCK_IDS`] are hashed together, and a file's fingerprint is the hash of its
//! blocks' hashes. So a change to a few rows costs a read of their blocks, not of the file: the
//! blocks around them keep their hashes ([`crate::sweep`] patches a file this way).

use xxhash_rust::xxh3::Xxh3;

use super::{DocumentStyle, Fingerprint, Namespaces, PageDigest, UrlKey, RENDER_VERSION};

/// Ids one block spans: blocks start at multiples of it.
pub const BLOCK_IDS: i64 = 1024;

/// The `<url>` elements of one block of a file, as measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// The block's ids are `key * BLOCK_IDS ..= key * BLOCK_IDS + BLOCK_IDS - 1`.
    pub key: i64,
    pub urls: u32,
    pub bytes: u64,
    /// Extension namespaces its entries use.
    pub used: Namespaces,
    pub hash: u128,
    /// The block's URLs, as a set: the wrapping sum of their keys. A block read again with the
    /// same set cannot have made a URL equal to one in another block of its file.
    pub urls_sum: u64,
}

impl Block {
    /// The block an id falls in.
    pub fn key_of(id: i64) -> i64 {
        id.div_euclid(BLOCK_IDS)
    }

    /// The first and last ids of blocks `first..=last`.
    pub fn ids(first: i64, last: i64) -> (i64, i64) {
        (
            first.saturating_mul(BLOCK_IDS),
            last.saturating_mul(BLOCK_IDS).saturating_add(BLOCK_IDS - 1),
        )
    }
}

/// The blocks of a file as its elements are added in id order.
pub(super) struct BlockHasher {
    open: Option<(Block, Xxh3)>,
    done: Vec<Block>,
}

impl BlockHasher {
    pub(super) fn new() -> Self {
        Self {
            open: None,
            done: Vec::new(),
        }
    }

    /// Adds the element of row `id`, whose URL is `url`; ids come in ascending order.
    pub(super) fn add(&mut self, id: i64, url: UrlKey, element: &[u8], uses: Namespaces) {
        let key = Block::key_of(id);
        if self.open.as_ref().is_some_and(|(b, _)| b.key != key) {
            self.close();
        }
        let (block, hash) = self.open.get_or_insert_with(|| {
            let block = Block {
                key,
                urls: 0,
                bytes: 0,
                used: Namespaces::NONE,
                hash: 0,
                urls_sum: 0,
            };
            (block, Xxh3::with_seed(RENDER_VERSION))
        });
        block.urls += 1;
        block.bytes += element.len() as u64;
        block.used = block.used.union(uses);
        block.urls_sum = block.urls_sum.wrapping_add(url.hash());
        hash.update(element);
    }

    fn close(&mut self) {
        if let Some((mut block, hash)) = self.open.take() {
            block.hash = hash.digest128();
            self.done.push(block);
        }
    }

    pub(super) fn finish(mut self) -> Vec<Block> {
        self.close();
        self.done
    }
}

/// What a file made of `blocks` (in key order) is: the sum of their sizes, the union of their
/// namespaces (unless the root declares `declared`), and the hash of their hashes framed by the
/// prolog and the end.
pub fn digest_of(
    style: &DocumentStyle,
    declared: Option<Namespaces>,
    blocks: &[Block],
) -> PageDigest {
    let mut body = Xxh3::with_seed(RENDER_VERSION);
    let (mut urls, mut bytes, mut used) = (0usize, 0usize, Namespaces::NONE);
    for block in blocks {
        body.update(&block.hash.to_le_bytes());
        urls += block.urls as usize;
        bytes += block.bytes as usize;
        used = used.union(block.used);
    }
    let namespaces = declared.unwrap_or(used);
    let open = style.urlset_open(namespaces);
    let close = style.urlset_close();
    PageDigest {
        urls,
        bytes: open.len() + bytes + close.len(),
        fingerprint: Fingerprint::of_page(&open, body.digest128(), close),
        namespaces,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks_of(rows: &[(i64, &[u8])]) -> Vec<Block> {
        let mut hasher = BlockHasher::new();
        for (id, element) in rows {
            hasher.add(*id, UrlKey::of_text(element), element, Namespaces::NONE);
        }
        hasher.finish()
    }

    #[test]
    fn rows_fall_in_blocks_of_their_ids() {
        let blocks = blocks_of(&[(-1, b"a"), (0, b"b"), (1023, b"c"), (1024, b"d")]);
        let keys: Vec<i64> = blocks.iter().map(|b| b.key).collect();
        assert_eq!(keys, [-1, 0, 1]);
        assert_eq!(blocks[1].urls, 2);
        assert_eq!(Block::ids(1, 1), (1024, 2047));
    }

    #[test]
    fn a_block_read_again_replaces_its_old_self_exactly() {
        let style = DocumentStyle::default();
        let whole = blocks_of(&[(1, b"a"), (2000, b"b2"), (5000, b"c")]);
        let mut patched = blocks_of(&[(1, b"a"), (2000, b"b"), (5000, b"c")]);
        patched[1] = blocks_of(&[(2000, b"b2")])[0];
        assert_eq!(
            digest_of(&style, None, &patched),
            digest_of(&style, None, &whole)
        );
        let before = blocks_of(&[(1, b"a"), (2000, b"b"), (5000, b"c")]);
        assert_ne!(
            digest_of(&style, None, &before).fingerprint,
            digest_of(&style, None, &whole).fingerprint
        );
    }
}
