//! A news publication as Google News sitemaps name it: the defaults a news group's articles
//! take where their rows leave the name or language NULL.

/// A news group's defaults for rows that leave `publication_name` or `language` NULL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewsPublication {
    pub name: String,
    pub language: String,
}

/// Whether `language` is an ISO 639 code as Google News takes it (`en`, `fr`, `zh-cn`, `zh-tw`).
pub fn is_news_language(language: &str) -> bool {
    matches!(language, "zh-cn" | "zh-tw")
        || ((2..=3).contains(&language.len()) && language.chars().all(|c| c.is_ascii_lowercase()))
}
