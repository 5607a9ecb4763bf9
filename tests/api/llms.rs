//! llms.txt: the newest pages of each group with their titles and descriptions, only what the
//! sitemaps list and the `ai-search` crawlers may fetch, served like every file, markdown-safe
//! whatever the rows hold, and read back by the format's reference parser (the `llms-txt`
//! Python package's `parse_llms_file`).

use std::process::Command;

use proptest::prelude::*;
use serde_json::Value;

use crate::helpers::*;

crate::on_each_database!(
    llms_txt_lists_each_groups_newest_pages_that_ai_search_crawlers_may_fetch,
    llms_txt_is_served_like_every_file_and_follows_its_rows,
    hostile_titles_and_descriptions_stay_one_link_line_each,
    export_writes_llms_txt_and_check_counts_entries_without_a_title,
);

const HOST: &str = "www.example.com";

/// Only OAI-SearchBot is kept out of `/private/`: enough to keep those URLs out of llms.txt,
/// while the sitemaps (checked for `*`) still list them.
const TEMPLATE: &str = "User-agent: *\nAllow: /\n\nUser-agent: OAI-SearchBot\nDisallow: /private/\n\nSitemap: {{ sitemap_index_url }}\n";

/// Two groups: `posts`, a view with the optional `title` and `description` columns, and
/// `pages`, a view without them, listed under `## Optional`.
pub async fn two_groups(backend: Backend) -> TestDb {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.exec("CREATE TABLE llms_titles (id BIGINT PRIMARY KEY, title TEXT, description TEXT)")
        .await;
    db.exec(
        "CREATE VIEW llms_posts AS SELECT e.id, e.loc, e.lastmod, e.changefreq, e.priority, \
         t.title, t.description FROM sitemap_entries e LEFT JOIN llms_titles t ON t.id = e.id \
         WHERE e.id < 1000",
    )
    .await;
    db.exec(
        "CREATE VIEW llms_pages AS SELECT id, loc, lastmod, changefreq, priority \
         FROM sitemap_entries WHERE id >= 1000",
    )
    .await;
    db
}

/// Inserts `(id, title, description)` rows of the posts' titles, values bound.
async fn insert_titles(db: &TestDb, rows: &[(i64, Option<&str>, Option<&str>)]) {
    for (id, title, description) in rows {
        let result = match &db.pool {
            TestPool::Postgres(pool) => {
                sqlx::query("INSERT INTO llms_titles (id, title, description) VALUES ($1, $2, $3)")
                    .bind(id)
                    .bind(title)
                    .bind(description)
                    .execute(pool)
                    .await
                    .map(|_| ())
            }
            TestPool::MariaDb(pool) => {
                sqlx::query("INSERT INTO llms_titles (id, title, description) VALUES (?, ?, ?)")
                    .bind(id)
                    .bind(title)
                    .bind(description)
                    .execute(pool)
                    .await
                    .map(|_| ())
            }
            TestPool::Sqlite(pool) => {
                sqlx::query("INSERT INTO llms_titles (id, title, description) VALUES (?, ?, ?)")
                    .bind(id)
                    .bind(title)
                    .bind(description)
                    .execute(pool)
                    .await
                    .map(|_| ())
            }
        };
        result.expect("insert a title");
    }
}

/// A sites file of one site on [`BASE`] with the two groups of [`two_groups`].
pub fn sites_file(extra_site_lines: &str) -> tempfile::NamedTempFile {
    template_file(&format!(
        "[[site]]\nbase_url = \"{BASE}\"\nllms_txt = true\nname = \"Example Site\"\n\
         description = \"A test site\"\n{extra_site_lines}\n\
         [[site.group]]\nname = \"posts\"\nsource = \"llms_posts\"\ntitle = \"Blog posts\"\n\n\
         [[site.group]]\nname = \"pages\"\nsource = \"llms_pages\"\nllms_optional = true\n"
    ))
}

/// The posts: two with the same lastmod (then by id), one without a title, one without a
/// lastmod (last), one out of scope (never listed) and the newest under `/private/`.
pub async fn posts_and_pages(db: &TestDb) {
    db.insert_rows(&[
        Row::new(1, "/p/1").lastmod("2024-01-01 00:00:00"),
        Row::new(2, "/p/2").lastmod("2024-03-01 00:00:00"),
        Row::new(3, "/p/3").lastmod("2024-03-01 00:00:00"),
        Row::new(4, "/p/4"),
        Row::new(5, "/p/5").lastmod("2024-02-01 00:00:00"),
        Row::new(6, "https://elsewhere.example.org/6").lastmod("2024-05-01 00:00:00"),
        Row::new(7, "/private/7").lastmod("2024-06-01 00:00:00"),
        Row::new(1000, "/about").lastmod("2024-01-01 00:00:00"),
    ])
    .await;
    insert_titles(
        db,
        &[
            (1, Some("One"), Some("first")),
            (2, Some("Two"), Some("second")),
            (3, Some("Three"), None),
            (4, Some("Four"), Some("undated")),
            (5, None, Some("")),
            (6, Some("Elsewhere"), None),
            (7, Some("Private"), None),
        ],
    )
    .await;
}

const EXPECTED: &str = "# Example Site\n\n> A test site\n\n\
    The newest pages of each section, at most 4 each, most recently changed first. \
    The sitemaps list every page: [sitemap index](https://www.example.com/sitemap_index.xml)\n\n\
    ## Blog posts\n\n\
    - [Two](https://www.example.com/p/2): second\n\
    - [Three](https://www.example.com/p/3)\n\
    - [/p/5](https://www.example.com/p/5)\n\
    - [One](https://www.example.com/p/1): first\n\n\
    ## Optional\n\n\
    - [/about](https://www.example.com/about)\n";

async fn llms_txt_lists_each_groups_newest_pages_that_ai_search_crawlers_may_fetch(
    backend: Backend,
) {
    let db = two_groups(backend).await;
    posts_and_pages(&db).await;
    let sites = sites_file("");
    let template = template_file(TEMPLATE);
    let app = spawn_app(
        &db.url,
        &[
            ("SITEMAP_SITES_FILE", sites.path().to_str().unwrap()),
            ("ROBOTS_TEMPLATE", template.path().to_str().unwrap()),
            ("LLMS_TXT_PER_GROUP", "4"),
        ],
    )
    .await;
    let text = text_as(&app, HOST, "/llms.txt").await;
    assert_eq!(text, EXPECTED);
    assert_eq!(text_as(&app, HOST, "/.well-known/llms.txt").await, text);
    // The sitemaps list /private/7 (robots.txt allows it for `*`); llms.txt does not.
    let posts = locs_as(&app, HOST, "/sitemap-posts-1.xml").await;
    assert!(posts.contains(&format!("{BASE}private/7")), "{posts:?}");

    let parsed = reference_parse(&text);
    let Some(parsed) = parsed else { return };
    assert_eq!(parsed["title"], "Example Site");
    assert_eq!(parsed["summary"], "A test site");
    let sections = parsed["sections"].as_object().unwrap();
    assert_eq!(
        sections.keys().collect::<Vec<_>>(),
        ["Blog posts", "Optional"]
    );
    let posts = sections["Blog posts"].as_array().unwrap();
    let urls: Vec<&str> = posts.iter().map(|l| l["url"].as_str().unwrap()).collect();
    assert_eq!(
        urls,
        [
            "https://www.example.com/p/2",
            "https://www.example.com/p/3",
            "https://www.example.com/p/5",
            "https://www.example.com/p/1"
        ]
    );
    assert_eq!(posts[0]["title"], "Two");
    assert_eq!(posts[0]["desc"], "second");
    assert_eq!(posts[1]["desc"], Value::Null);
    assert_eq!(sections["Optional"][0]["title"], "/about");
}

async fn llms_txt_is_served_like_every_file_and_follows_its_rows(backend: Backend) {
    let db = two_groups(backend).await;
    posts_and_pages(&db).await;
    let sites = sites_file("");
    let file = [
        ("SITEMAP_SITES_FILE", sites.path().to_str().unwrap()),
        ("LLMS_TXT_PER_GROUP", "4"),
    ];
    let app = spawn_app(&db.url, &file).await;
    let host = [("host", HOST)];
    let first = app.get_with("/llms.txt", &host).await;
    assert_eq!(first.status(), 200);
    assert_eq!(
        header(&first, "content-type"),
        "text/markdown; charset=utf-8"
    );
    let etag = header(&first, "etag").to_string();
    assert!(etag.starts_with('"') && !etag.starts_with("W/"), "{etag}");
    let last_modified = header(&first, "last-modified").to_string();
    let body = first.bytes().await.unwrap();
    // With private/7 allowed for every crawler, it is the newest post.
    assert!(
        String::from_utf8_lossy(&body).contains("- [Private](https://www.example.com/private/7)")
    );

    let again = app
        .get_with("/llms.txt", &[("host", HOST), ("if-none-match", &etag)])
        .await;
    assert_eq!(again.status(), 304);
    assert_eq!(header(&again, "etag"), etag);
    assert!(again.bytes().await.unwrap().is_empty());
    let since = app
        .get_with(
            "/.well-known/llms.txt",
            &[("host", HOST), ("if-modified-since", &last_modified)],
        )
        .await;
    assert_eq!(since.status(), 304);

    let head = app
        .client
        .head(app.url("/llms.txt"))
        .header("host", HOST)
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 200);
    assert_eq!(header(&head, "etag"), etag);
    assert_eq!(header(&head, "content-length"), body.len().to_string());
    assert!(head.bytes().await.unwrap().is_empty());

    let gz = app
        .get_with("/llms.txt", &[("host", HOST), ("accept-encoding", "gzip")])
        .await;
    assert_eq!(header(&gz, "content-encoding"), "gzip");
    assert_ne!(header(&gz, "etag"), etag);
    assert_eq!(gunzip(&gz.bytes().await.unwrap()), body);
    let br = app
        .get_with(
            "/llms.txt",
            &[("host", HOST), ("accept-encoding", "gzip, deflate, br")],
        )
        .await;
    assert_eq!(header(&br, "content-encoding"), "br");
    assert_eq!(header(&br, "vary"), "Accept-Encoding");
    let br_etag = header(&br, "etag").to_string();
    assert!(br_etag != etag && br_etag.ends_with("-br\""), "{br_etag}");
    let mut decoded = Vec::new();
    std::io::Read::read_to_end(
        &mut brotli::Decompressor::new(&br.bytes().await.unwrap()[..], 4096),
        &mut decoded,
    )
    .unwrap();
    assert_eq!(decoded, body);
    let revalidated = app
        .get_with(
            "/llms.txt",
            &[
                ("host", HOST),
                ("accept-encoding", "br"),
                ("if-none-match", &br_etag),
            ],
        )
        .await;
    assert_eq!(revalidated.status(), 304);

    // A new title shows after the sweep, under a new ETag.
    db.exec("UPDATE llms_titles SET title = 'Two, renamed' WHERE id = 2")
        .await;
    app.sweep().await;
    let changed = app.get_with("/llms.txt", &host).await;
    assert_ne!(header(&changed, "etag"), etag);
    let text = changed.text().await.unwrap();
    assert!(
        text.contains("- [Two, renamed](https://www.example.com/p/2): second"),
        "{text}"
    );

    // The status page links it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin = listener.local_addr().unwrap();
    let router = sitemapd::admin::router(app.app.clone());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let status: Value = reqwest::get(format!("http://{admin}/status.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        status["sites"][0]["llms_url"],
        "https://www.example.com/llms.txt"
    );
    let page = reqwest::get(format!("http://{admin}/"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .replace("&#x2f;", "/");
    assert!(
        page.contains("href=\"https://www.example.com/llms.txt\""),
        "{page}"
    );

    // The crawler policy closes /private/ to every ai-search crawler: llms.txt follows.
    let policy = spawn_app(
        &db.url,
        &[
            file[0],
            file[1],
            ("ROBOTS_POLICY", "ai-search=disallow:/private/"),
        ],
    )
    .await;
    let text = text_as(&policy, HOST, "/llms.txt").await;
    assert!(!text.contains("/private/"), "{text}");
    assert!(
        text.contains("- [Two, renamed](https://www.example.com/p/2)"),
        "{text}"
    );

    // Off unless asked for.
    let off = spawn_app(&db.url, &[]).await;
    assert_eq!(off.get("/llms.txt").await.status(), 404);
    assert_eq!(off.get("/.well-known/llms.txt").await.status(), 404);
}

/// Titles and descriptions that would break markdown or the format if written as they are.
const HOSTILE: [&str; 12] = [
    "a]b[c](d)",
    "line one\nline two\r\nthree\u{2028}four",
    "## not a heading",
    "# not a title either",
    "`code` and ``` fences",
    "<script>alert(1)</script> <a href=\"x\">y</a>",
    "](https://evil.example/)",
    "\u{1}\u{7}bell\u{1b}[31mred",
    "trailing backslash \\",
    "> quote\n- [fake](https://evil.example/)",
    "![img](x) *em* _u_ &amp; &#93;",
    "   ",
];

async fn hostile_titles_and_descriptions_stay_one_link_line_each(backend: Backend) {
    let db = two_groups(backend).await;
    let rows: Vec<Row> = (1..=HOSTILE.len() as i64)
        .map(|i| {
            Row::new(i, &format!("/h/{i}_(x)?q=[{i}]"))
                .lastmod(&format!("2024-01-{:02} 00:00:00", i))
        })
        .collect();
    db.insert_rows(&rows).await;
    let titles: Vec<(i64, Option<&str>, Option<&str>)> = HOSTILE
        .iter()
        .enumerate()
        .map(|(i, text)| {
            (
                i as i64 + 1,
                Some(*text),
                Some(HOSTILE[HOSTILE.len() - 1 - i]),
            )
        })
        .collect();
    insert_titles(&db, &titles).await;
    let sites = sites_file("");
    let app = spawn_app(
        &db.url,
        &[("SITEMAP_SITES_FILE", sites.path().to_str().unwrap())],
    )
    .await;
    let text = text_as(&app, HOST, "/llms.txt").await;
    let links: Vec<&str> = text.lines().filter(|l| l.starts_with("- ")).collect();
    assert_eq!(links.len(), HOSTILE.len(), "{text}");
    let headings: Vec<&str> = text.lines().filter(|l| l.starts_with('#')).collect();
    assert_eq!(headings, ["# Example Site", "## Blog posts"], "{text}");
    for (n, line) in links.iter().enumerate() {
        let id = HOSTILE.len() - n;
        let expected_url = format!("https://www.example.com/h/{id}_%28x%29?q=%5B{id}%5D");
        assert_well_formed_link(line, &expected_url);
    }
    let Some(parsed) = reference_parse(&text) else {
        return;
    };
    let posts = parsed["sections"]["Blog posts"].as_array().unwrap();
    assert_eq!(posts.len(), HOSTILE.len());
    for (n, link) in posts.iter().enumerate() {
        let id = HOSTILE.len() - n;
        assert_eq!(
            link["url"],
            format!("https://www.example.com/h/{id}_%28x%29?q=%5B{id}%5D")
        );
    }
}

async fn export_writes_llms_txt_and_check_counts_entries_without_a_title(backend: Backend) {
    let db = two_groups(backend).await;
    posts_and_pages(&db).await;
    let sites = sites_file("");
    let vars = [
        ("DATABASE_URL", db.url.as_str()),
        ("SITEMAP_SITES_FILE", sites.path().to_str().unwrap()),
        ("LLMS_TXT_PER_GROUP", "4"),
    ];
    let dir = export(&vars);
    let root = dir.path().join(HOST);
    let written = std::fs::read_to_string(root.join("llms.txt")).unwrap();
    assert!(written.starts_with("# Example Site\n"), "{written}");
    assert!(
        written.contains("- [/p/5](https://www.example.com/p/5)"),
        "{written}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".well-known/llms.txt")).unwrap(),
        written
    );
    let (_, out) = check(&db, &vars[1..]);
    assert!(
        out.contains("llms.txt: 4 entries in section \"Blog posts\", 1 without a title"),
        "{out}"
    );
    assert!(
        out.contains("llms.txt: 1 entries in section \"pages\", 1 without a title"),
        "{out}"
    );
}

/// Asserts `line` is one markdown list item holding exactly one link to `url`, whose text
/// and description can neither end the link nor open anything that swallows it.
fn assert_well_formed_link(line: &str, url: &str) {
    assert!(!line.contains(['\n', '\r']), "{line:?}");
    assert!(!line.chars().any(char::is_control), "{line:?}");
    let rest = line
        .strip_prefix("- [")
        .unwrap_or_else(|| panic!("{line:?}"));
    let (title, rest) = rest.split_once("](").unwrap_or_else(|| panic!("{line:?}"));
    assert!(!title.is_empty() && !title.contains(['[', ']']), "{line:?}");
    let (destination, description) = rest.split_once(')').unwrap_or_else(|| panic!("{line:?}"));
    assert_eq!(destination, url, "{line:?}");
    assert!(
        description.is_empty() || description.starts_with(": "),
        "{line:?}"
    );
    for text in [title, description] {
        assert!(!text.contains(['[', ']']), "{line:?}");
        assert_only_escaped(text, line);
    }
}

/// Every `` ` ``, `<` and `\` of `text` is backslash-escaped (so no code span, raw HTML or
/// autolink opens, and no backslash escapes what follows it).
fn assert_only_escaped(text: &str, line: &str) {
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let next = chars.next();
                assert!(
                    matches!(next, Some('`' | '<' | '\\')),
                    "a backslash escapes {next:?} in {line:?}"
                );
            }
            '`' | '<' => panic!("unescaped {c:?} in {line:?}"),
            _ => {}
        }
    }
}

/// What the `llms-txt` package's `parse_llms_file` makes of `text`, as JSON; `None` (with a
/// message) when Python cannot import it (./scripts/test.sh installs it).
pub fn reference_parse(text: &str) -> Option<Value> {
    let python = std::env::var("LLMS_TXT_PYTHON").unwrap_or_else(|_| "python3".into());
    let importable = Command::new(&python)
        .args(["-c", "import llms_txt"])
        .output()
        .is_ok_and(|out| out.status.success());
    if !importable {
        eprintln!(
            "SKIPPED the reference parser check: {python} cannot import llms_txt \
             (pip install llms-txt; ./scripts/test.sh installs it)"
        );
        return None;
    }
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), text).unwrap();
    let script = "import json, sys\nfrom llms_txt import parse_llms_file\n\
                  parsed = parse_llms_file(open(sys.argv[1], encoding='utf-8').read())\n\
                  print(json.dumps(parsed, default=list))\n";
    let out = Command::new(&python)
        .args(["-c", script])
        .arg(file.path())
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "parse_llms_file failed: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("JSON from the reference parser"))
}

fn hostile_text() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "[",
        "]",
        "(",
        ")",
        "](",
        ")[",
        "\n",
        "\r\n",
        "\r",
        "#",
        "## ",
        "`",
        "```",
        "<b>",
        "</a>",
        "<!--",
        "\\",
        "\u{0}",
        "\u{1b}",
        "\u{7f}",
        "\u{85}",
        "\u{2028}",
        "*",
        "_",
        ">",
        "- ",
        "!",
        "&amp;",
        "é",
        " ",
        "word",
        "https://evil.example/",
    ]);
    prop::collection::vec(pieces, 0..24).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_entry_is_one_well_formed_link_line_whose_url_is_intact(
        title in prop::option::of(hostile_text()),
        description in prop::option::of(hostile_text()),
        segment in "[a-z()\\[\\]]{1,12}",
    ) {
        let url = format!("https://www.example.com/{segment}");
        let link = sitemapd::llms::Link {
            path: format!("/{segment}"),
            url: url.clone(),
            title,
            description,
        };
        let line = sitemapd::llms::link_line(&link);
        let intact = url.replace('(', "%28").replace(')', "%29");
        assert_well_formed_link(&line, &intact);
    }
}
