//! The status page: a second listener (`ADMIN_BIND_ADDR`, never the public one) where `/` shows
//! site owners what the public side does — files, rows left out, the audit, crawler activity,
//! deliveries, a robots.txt tester — and `/status.json` the same data. Server-rendered with
//! minijinja, readable without JavaScript.

pub mod status;

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use minijinja::{context, Environment};

use crate::http::AppState;
use status::{known_agents, robots_answer, Status};

const TEMPLATE: &str = include_str!("../../templates/status.html");

/// The status page's routes, over the same state the public side serves from.
pub fn router(app: AppState) -> Router {
    let templates = Arc::new(templates());
    Router::new()
        .route("/", get(page))
        .route("/status.json", get(json))
        .with_state((app, templates))
}

type AdminState = (AppState, Arc<Environment<'static>>);

fn templates() -> Environment<'static> {
    let mut env = Environment::new();
    env.add_template("status.html", TEMPLATE)
        .expect("the built-in status template parses");
    env
}

/// The robots.txt tester's question, from the page's form.
#[derive(Debug, serde::Deserialize)]
struct RobotsQuestion {
    url: Option<String>,
    agent: Option<String>,
    /// Which site's robots.txt (its base URL); the first site by default.
    site: Option<String>,
}

async fn json(State((app, _)): State<AdminState>) -> Json<Status> {
    Json(Status::of(&app))
}

async fn page(
    State((app, templates)): State<AdminState>,
    Query(question): Query<RobotsQuestion>,
) -> Response {
    let status = Status::of(&app);
    let answer = question
        .url
        .as_deref()
        .filter(|u| !u.is_empty())
        .map(|url| {
            let site = question
                .site
                .as_deref()
                .and_then(|key| app.sites.iter().find(|s| s.key == key))
                .unwrap_or_else(|| app.site());
            let agent = question.agent.as_deref().unwrap_or("Googlebot");
            robots_answer(site, url, agent)
        });
    let rendered = templates.get_template("status.html").and_then(|t| {
        t.render(context! {
            status => status,
            answer => answer,
            agents => known_agents(),
            asked_url => question.url.unwrap_or_default(),
            asked_agent => question.agent.unwrap_or_else(|| "Googlebot".into()),
        })
    });
    match rendered {
        Ok(html) => ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response(),
        Err(e) => {
            tracing::error!(error = %crate::error::Chain(&e), "status page template failed");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}
