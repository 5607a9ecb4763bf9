//! The status page: a second listener (`ADMIN_BIND_ADDR`, never the public one) where `/` shows
//! site owners what the public side does — files, rows left out, the audit, crawler activity,
//! deliveries, a robots.txt tester — and `/status.json` the same data. Server-rendered with
//! minijinja, readable without JavaScript.

pub mod access;
mod audit;
mod file;
mod finding;
pub mod status;
pub mod tester;
pub mod verification;

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use minijinja::{context, Environment};

use crate::state::AppState;
use status::Status;
use tester::{robots_answer, RobotsAnswer};

const BASE_TEMPLATE: &str = include_str!("../../templates/status-base.html");
const TEMPLATE: &str = include_str!("../../templates/status.html");
const FILE_TEMPLATE: &str = include_str!("../../templates/status-file.html");
const AUDIT_TEMPLATE: &str = include_str!("../../templates/status-audit.html");

/// The status page's routes, over the same state the public side serves from.
pub fn router(app: AppState) -> Router {
    let state = AdminState {
        app,
        templates: Arc::new(templates()),
        audits: Arc::new(audit::Audits::one_at_a_time()),
    };
    Router::new()
        .route("/", get(page))
        .route("/status.json", get(json))
        .route("/file", get(file_page))
        .route("/audit", get(audit_page))
        .with_state(state)
        .layer(axum::middleware::from_fn(access::security_headers))
}

/// What the status page's handlers share.
#[derive(Clone)]
struct AdminState {
    app: AppState,
    templates: Arc<Environment<'static>>,
    audits: Arc<audit::Audits>,
}

fn templates() -> Environment<'static> {
    let mut env = Environment::new();
    env.add_template("status-base.html", BASE_TEMPLATE)
        .expect("the built-in base template parses");
    env.add_template("status.html", TEMPLATE)
        .expect("the built-in status template parses");
    env.add_template("status-file.html", FILE_TEMPLATE)
        .expect("the built-in file template parses");
    env.add_template("status-audit.html", AUDIT_TEMPLATE)
        .expect("the built-in audit template parses");
    env
}

/// The robots.txt tester's question, from the page's form.
#[derive(Debug, serde::Deserialize)]
struct RobotsQuestion {
    url: Option<String>,
    /// A registry crawler's name (the page's select), or a product token.
    agent: Option<String>,
    /// A whole User-Agent string, which wins over `agent` when given.
    user_agent: Option<String>,
    /// Which site's robots.txt (its base URL); the first site by default.
    site: Option<String>,
}

/// Which file to show, and which of its rows.
#[derive(Debug, serde::Deserialize)]
struct FileQuestion {
    /// The site's base URL; the first site by default.
    site: Option<String>,
    name: String,
    #[serde(default)]
    q: String,
    #[serde(default)]
    page: usize,
}

/// One sitemap file as a table: its entries, and the rows of its range left out, with why.
async fn file_page(
    State(AdminState { app, templates, .. }): State<AdminState>,
    Query(question): Query<FileQuestion>,
) -> Response {
    let site = site_named(&app, question.site.as_deref());
    let Some((group, served)) = file::find(site, &question.name) else {
        return (StatusCode::NOT_FOUND, "no such file\n").into_response();
    };
    let view = match file::view(site, &group, &served, &question.q, question.page).await {
        Ok(view) => view,
        Err(e) => {
            tracing::warn!(error = %crate::error::Chain(&e), "could not read a file for the status page");
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                "the database did not answer\n",
            )
                .into_response();
        }
    };
    let rendered = templates
        .get_template("status-file.html")
        .and_then(|t| t.render(context! { view => view }));
    html(rendered)
}

/// Which site to audit.
#[derive(Debug, serde::Deserialize)]
struct AuditQuestion {
    site: Option<String>,
}

/// The whole-group audit of one site (every row read: only when asked).
async fn audit_page(
    State(AdminState {
        app,
        templates,
        audits,
    }): State<AdminState>,
    Query(question): Query<AuditQuestion>,
) -> Response {
    let site = site_named(&app, question.site.as_deref());
    let report = match audits.run(site).await {
        Ok(Some(report)) => report,
        Ok(None) => {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                "another audit is running; ask again when it has ended\n",
            )
                .into_response()
        }
        Err(e) => {
            tracing::warn!(error = %crate::error::Chain(&e), "could not read the rows to audit");
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                "the database did not answer\n",
            )
                .into_response();
        }
    };
    let rendered = templates
        .get_template("status-audit.html")
        .and_then(|t| t.render(context! { audit => report }));
    html(rendered)
}

/// The site whose base URL is `key`; the first site when none is named (or none matches).
fn site_named<'a>(app: &'a AppState, key: Option<&str>) -> &'a std::sync::Arc<crate::site::Site> {
    key.and_then(|key| app.sites.iter().find(|s| s.key == key))
        .unwrap_or_else(|| app.site())
}

/// A rendered page, or a 500 that the log explains.
fn html(rendered: Result<String, minijinja::Error>) -> Response {
    match rendered {
        Ok(html) => ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response(),
        Err(e) => {
            tracing::error!(error = %crate::error::Chain(&e), "status page template failed");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// The status page's data; with `?url=` (and `agent`, `site`), the tester's answer too.
#[derive(serde::Serialize)]
struct StatusJson {
    #[serde(flatten)]
    status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    robots_test: Option<RobotsAnswer>,
}

async fn json(
    State(AdminState { app, .. }): State<AdminState>,
    Query(question): Query<RobotsQuestion>,
) -> Json<StatusJson> {
    let robots_test = question
        .url
        .as_deref()
        .filter(|u| !u.is_empty())
        .map(|url| {
            let site = site_named(&app, question.site.as_deref());
            let agent = question
                .user_agent
                .as_deref()
                .map(str::trim)
                .filter(|ua| !ua.is_empty())
                .or(question.agent.as_deref())
                .unwrap_or("Googlebot");
            robots_answer(site, app.ledger.registry(), url, agent)
        });
    Json(StatusJson {
        status: Status::of(&app),
        robots_test,
    })
}

async fn page(
    State(AdminState { app, templates, .. }): State<AdminState>,
    Query(question): Query<RobotsQuestion>,
) -> Response {
    let status = Status::of(&app);
    let typed = question
        .user_agent
        .as_deref()
        .map(str::trim)
        .filter(|ua| !ua.is_empty());
    let chosen = question.agent.as_deref().unwrap_or("Googlebot");
    let answer = question
        .url
        .as_deref()
        .filter(|u| !u.is_empty())
        .map(|url| {
            let site = site_named(&app, question.site.as_deref());
            robots_answer(site, app.ledger.registry(), url, typed.unwrap_or(chosen))
        });
    let rendered = templates.get_template("status.html").and_then(|t| {
        t.render(context! {
            status => status,
            answer => answer,
            asked_url => question.url.as_deref().unwrap_or_default(),
            asked_agent => chosen,
            asked_user_agent => typed.unwrap_or_default(),
        })
    });
    html(rendered)
}
