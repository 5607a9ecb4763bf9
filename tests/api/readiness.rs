//! `/readyz` tells whether the files can be served: a dropped source view makes it 503 with
//! a line naming the source, and it is 200 again once the view is back.

use crate::helpers::*;

crate::on_each_database!(readyz_fails_when_the_source_view_is_dropped,);

async fn readyz_fails_when_the_source_view_is_dropped(backend: Backend) {
    let db = TestDb::on(backend).await;
    db.migrate().await;
    db.insert(&[(1, "/a"), (2, "/b")]).await;
    let view = "CREATE VIEW shop_view AS SELECT id, loc, lastmod, changefreq, priority \
                FROM sitemap_entries";
    db.exec(view).await;
    let app = spawn_app(&db.url, &[("SITEMAP_SOURCE", "shop_view")]).await;
    assert_eq!(app.get("/readyz").await.status(), 200);
    db.exec("DROP VIEW shop_view").await;
    let text = eventually(
        "/readyz to notice the dropped view",
        || async {
            let resp = app.get("/readyz").await;
            (resp.status().as_u16(), resp.text().await.unwrap())
        },
        |(status, _)| *status == 503,
    )
    .await;
    assert_eq!(text.0, 503, "{}", text.1);
    assert!(text.1.contains("shop_view"), "{}", text.1);
    assert_eq!(text.1.lines().count(), 1, "{}", text.1);
    db.exec(view).await;
    let back = eventually(
        "/readyz to be 200 again",
        || async { app.get("/readyz").await.status().as_u16() },
        |status| *status == 200,
    )
    .await;
    assert_eq!(back, 200);
}
