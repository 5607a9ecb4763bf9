//! llms.txt v2: the `describedby` Link on every answer, a group's own file under its
//! `llms_path` (its section under its own title, `## Optional` or not), still read by the
//! reference parser, and Lighthouse's rules (an H1, a markdown link, never a 5xx).

use crate::helpers::*;
use crate::llms::{posts_and_pages, reference_parse, two_groups};

const HOST: &str = "www.example.com";
const DESCRIBED_BY: &str = "</llms.txt>; rel=\"describedby\"; type=\"text/markdown\"";

fn sites_file() -> tempfile::NamedTempFile {
    template_file(&format!(
        "[[site]]\nbase_url = \"{BASE}\"\nllms_txt = true\nname = \"Example Site\"\n\n\
         [[site.group]]\nname = \"posts\"\nsource = \"llms_posts\"\ntitle = \"Blog posts\"\n\
         llms_path = \"/p/\"\n\n\
         [[site.group]]\nname = \"pages\"\nsource = \"llms_pages\"\nllms_optional = true\n\
         llms_path = \"/pages/\"\n"
    ))
}

/// Lighthouse's llms.txt rules: an H1 first, at least one markdown link.
fn assert_lighthouse_rules(text: &str) {
    assert!(text.starts_with("# ") && !text.starts_with("## "), "{text}");
    assert!(
        text.contains("](https://") || text.contains("](http://"),
        "a markdown link: {text}"
    );
}

#[tokio::test]
async fn every_answer_points_at_llms_txt_and_a_group_has_its_own() {
    let db = two_groups(Backend::Sqlite).await;
    posts_and_pages(&db).await;
    db.insert_rows(&[Row::new(1001, "/pages/x").lastmod("2024-01-02 00:00:00")])
        .await;
    let sites = sites_file();
    let vars = [("SITEMAP_SITES_FILE", sites.path().to_str().unwrap())];
    let app = spawn_app(&db.url, &vars).await;

    for path in [
        "/sitemap_index.xml",
        "/robots.txt",
        "/llms.txt",
        "/p/llms.txt",
    ] {
        let resp = get_as(&app, HOST, path).await;
        assert_eq!(resp.status(), 200, "{path}");
        assert_eq!(header(&resp, "link"), DESCRIBED_BY, "{path}");
        let etag = header(&resp, "etag").to_string();
        let again = app
            .client
            .get(format!("http://{}{path}", app.addr))
            .header("host", HOST)
            .header("if-none-match", &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304, "{path}");
        assert_eq!(header(&again, "link"), DESCRIBED_BY, "{path} 304");
    }

    let own = text_as(&app, HOST, "/p/llms.txt").await;
    assert_lighthouse_rules(&own);
    assert!(own.contains("\n## Blog posts\n"), "{own}");
    assert!(
        !own.contains("/about") && !own.contains("/private/"),
        "only the group's pages under its path: {own}"
    );
    let pages = text_as(&app, HOST, "/pages/llms.txt").await;
    assert!(
        pages.contains("\n## pages\n") && !pages.contains("## Optional"),
        "its own title, whatever llms_optional says: {pages}"
    );
    let site = text_as(&app, HOST, "/llms.txt").await;
    assert_lighthouse_rules(&site);
    assert!(
        site.contains("\n## Optional\n"),
        "kept for v1 readers: {site}"
    );
    assert_eq!(get_as(&app, HOST, "/other/llms.txt").await.status(), 404);

    let Some(parsed) = reference_parse(&own) else {
        return;
    };
    assert_eq!(parsed["title"], "Example Site");
    let sections = parsed["sections"].as_object().unwrap();
    assert_eq!(sections.keys().collect::<Vec<_>>(), ["Blog posts"]);
    assert!(sections["Blog posts"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| l["url"]
            .as_str()
            .unwrap()
            .starts_with("https://www.example.com/p/")));
}

#[tokio::test]
async fn llms_txt_never_answers_a_5xx_even_before_the_first_sweep() {
    let db = two_groups(Backend::Sqlite).await;
    posts_and_pages(&db).await;
    let sites = sites_file();
    let vars = [("SITEMAP_SITES_FILE", sites.path().to_str().unwrap())];
    let app = spawn_app_listening(&db.url, &vars).await;
    for path in ["/llms.txt", "/p/llms.txt", "/.well-known/llms.txt"] {
        let resp = get_as(&app, HOST, path).await;
        assert_eq!(resp.status(), 200, "{path}");
        let text = resp.text().await.unwrap();
        assert_lighthouse_rules(&text);
    }
}

#[test]
fn a_bad_llms_path_stops_the_start() {
    for bad in ["/", "blog/", "/blog", "/a b/", "/../"] {
        let sites = template_file(&format!(
            "[[site]]\nbase_url = \"{BASE}\"\nllms_txt = true\n\n\
             [[site.group]]\nname = \"posts\"\nsource = \"posts\"\nllms_path = \"{bad}\"\n"
        ));
        let out = Sitemapd::new(["check"])
            .env("SITEMAP_SITES_FILE", sites.path())
            .output();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("llms_path"), "{bad}: {stderr}");
    }
}
